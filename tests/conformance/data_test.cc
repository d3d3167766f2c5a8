// The data plane on application-owned QPs wireup's flow connects, from either side: every
// verb a transport uses (SEND with and without immediate, RDMA WRITE with and without
// immediate, RDMA READ as deep as negotiated, compare-and-swap, fetch-and-add) and the SRQ
// variant. The error cases are in data_error_test.cc.
#include <arpa/inet.h>

#include <cstring>

#include "tests/conformance/data_util.h"

namespace wireup::conf {
namespace {

using prov::SendWr;
using prov::WrOpcode;

class DataPlane : public ::testing::TestWithParam<Side> {};

TEST_P(DataPlane, SendAndSendWithImmediate) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  Ends e = ends(*p, GetParam());

  ASSERT_TRUE(e.resp.post_recv());
  ASSERT_TRUE(e.resp.post_recv());
  std::memcpy(e.req.buf.data(), "plain", 5);
  SendWr s = wr(WrOpcode::send, 10, e.req, 0, 5);
  ASSERT_TRUE(e.req.qp->post(s));
  SendWr si = wr(WrOpcode::send_with_imm, 11, e.req, 0, 5);
  si.imm_data = htonl(0xC0FFEE);
  ASSERT_TRUE(e.req.qp->post(si));

  for (uint64_t id : {10, 11}) {
    auto wc = e.req.next_completion();
    ASSERT_TRUE(wc) << wc.error().message();
    expect_wc(*wc, id, prov::wc_status::success, prov::wc_opcode_send);
  }
  auto r1 = e.resp.next_completion();
  ASSERT_TRUE(r1) << r1.error().message();
  expect_wc(*r1, 1, prov::wc_status::success, prov::wc_opcode_recv);
  EXPECT_EQ(r1->byte_len, 5u);
  EXPECT_EQ(r1->wc_flags & prov::wc_flag_with_imm, 0u);
  auto r2 = e.resp.next_completion();
  ASSERT_TRUE(r2) << r2.error().message();
  expect_wc(*r2, 1, prov::wc_status::success, prov::wc_opcode_recv);
  EXPECT_NE(r2->wc_flags & prov::wc_flag_with_imm, 0u);
  EXPECT_EQ(ntohl(r2->imm_data), 0xC0FFEEu);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.resp.buf.data() + 128), 5), "plain");
}

TEST_P(DataPlane, RdmaWriteAndWriteWithImmediate) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  Ends e = ends(*p, GetParam());

  fill(e.req, kLocal, 64, 0x40);
  SendWr w = wr(WrOpcode::rdma_write, 20, e.req, kLocal, 64);
  to_remote(w, e.resp, kRemote);
  ASSERT_TRUE(e.req.qp->post(w));
  auto wc = e.req.next_completion();
  ASSERT_TRUE(wc) << wc.error().message();
  expect_wc(*wc, 20, prov::wc_status::success, prov::wc_opcode_rdma_write);
  EXPECT_EQ(std::memcmp(e.resp.buf.data() + kRemote, e.req.buf.data() + kLocal, 64), 0);

  // With immediate: the data lands and a receive completes with the immediate and the length.
  ASSERT_TRUE(e.resp.post_recv());
  fill(e.req, kLocal, 32, 0x80);
  SendWr wi = wr(WrOpcode::rdma_write_with_imm, 21, e.req, kLocal, 32);
  to_remote(wi, e.resp, kRemote + 512);
  wi.imm_data = htonl(77);
  ASSERT_TRUE(e.req.qp->post(wi));
  auto wc2 = e.req.next_completion();
  ASSERT_TRUE(wc2) << wc2.error().message();
  expect_wc(*wc2, 21, prov::wc_status::success, prov::wc_opcode_rdma_write);
  auto rc = e.resp.next_completion();
  ASSERT_TRUE(rc) << rc.error().message();
  expect_wc(*rc, 1, prov::wc_status::success, prov::wc_opcode_recv_rdma_with_imm);
  EXPECT_EQ(rc->byte_len, 32u);
  EXPECT_NE(rc->wc_flags & prov::wc_flag_with_imm, 0u);
  EXPECT_EQ(ntohl(rc->imm_data), 77u);
  EXPECT_EQ(std::memcmp(e.resp.buf.data() + kRemote + 512, e.req.buf.data() + kLocal, 32), 0);
}

// As many READs in flight as the connection negotiated (4 each way), all answered.
TEST_P(DataPlane, ReadsAsDeepAsNegotiated) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  PairOptions o;
  o.responder_resources = 4;
  o.initiator_depth = 4;
  auto p = connect_pair(f, *l, o);
  ASSERT_TRUE(p) << p.error().message();
  Ends e = ends(*p, GetParam());
  auto qa = e.req.qp->query(prov::qp_mask::max_qp_rd_atomic);
  auto qb = e.resp.qp->query(prov::qp_mask::max_dest_rd_atomic);
  ASSERT_TRUE(qa && qb);
  const unsigned depth = std::min(qa->max_rd_atomic, qb->max_dest_rd_atomic);
  EXPECT_EQ(depth, 4u) << "requester max_rd_atomic " << int(qa->max_rd_atomic)
                       << ", responder max_dest_rd_atomic " << int(qb->max_dest_rd_atomic);

  for (unsigned i = 0; i < depth; ++i) fill(e.resp, kRemote + 64 * i, 64, static_cast<uint8_t>(i * 16));
  for (unsigned i = 0; i < depth; ++i) {
    SendWr r = wr(WrOpcode::rdma_read, 30 + i, e.req, kLocal + 64 * i, 64);
    to_remote(r, e.resp, kRemote + 64 * i);
    ASSERT_TRUE(e.req.qp->post(r)) << "READ " << i;
  }
  for (unsigned i = 0; i < depth; ++i) {
    auto wc = e.req.next_completion();
    ASSERT_TRUE(wc) << wc.error().message();
    expect_wc(*wc, 30 + i, prov::wc_status::success, prov::wc_opcode_rdma_read);
    EXPECT_EQ(wc->byte_len, 64u);
  }
  EXPECT_EQ(std::memcmp(e.req.buf.data() + kLocal, e.resp.buf.data() + kRemote, 64 * depth), 0);
}

TEST_P(DataPlane, CompareAndSwapAndFetchAndAdd) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  Ends e = ends(*p, GetParam());
  const uint64_t five = 5;
  std::memcpy(e.resp.buf.data() + kRemote, &five, 8);

  struct Step {
    WrOpcode op;
    uint64_t compare_add, swap, original, after;
    int wc_opcode;
  };
  const Step steps[] = {
      {WrOpcode::atomic_cmp_and_swp, 5, 9, 5, 9, prov::wc_opcode_comp_swap},    // matches: swapped
      {WrOpcode::atomic_cmp_and_swp, 5, 11, 9, 9, prov::wc_opcode_comp_swap},   // no match: kept
      {WrOpcode::atomic_fetch_and_add, 3, 0, 9, 12, prov::wc_opcode_fetch_add},
  };
  uint64_t id = 40;
  for (const Step& s : steps) {
    SendWr a = wr(s.op, id, e.req, kLocal, 8);
    to_remote(a, e.resp, kRemote);
    a.compare_add = s.compare_add;
    a.swap = s.swap;
    ASSERT_TRUE(e.req.qp->post(a));
    auto wc = e.req.next_completion();
    ASSERT_TRUE(wc) << wc.error().message();
    expect_wc(*wc, id++, prov::wc_status::success, s.wc_opcode);
    uint64_t original = 0, after = 0;
    std::memcpy(&original, e.req.buf.data() + kLocal, 8);
    std::memcpy(&after, e.resp.buf.data() + kRemote, 8);
    EXPECT_EQ(original, s.original) << prov::to_string(s.op);
    EXPECT_EQ(after, s.after) << prov::to_string(s.op);
  }
}

// Both QPs on SRQs: the REQ and the REP carry the SRQ bit, and receives come from the SRQ.
TEST_P(DataPlane, SrqAttachedQpsEndToEnd) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  PairOptions o;
  o.active_srq = true;
  o.passive_srq = true;
  auto p = connect_pair(f, *l, o);  // the SEND each way went through the SRQs already
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->req_srq, 1) << "CONNECT_REQUEST's srq";
  EXPECT_EQ(p->rep_srq, 1) << "CONNECT_RESPONSE's srq";
  Ends e = ends(*p, GetParam());
  EXPECT_TRUE(e.resp.qp->has_srq());

  ASSERT_TRUE(e.resp.post_recv());
  ASSERT_TRUE(e.resp.post_recv());
  std::memcpy(e.req.buf.data(), "via-srq", 7);
  ASSERT_TRUE(e.req.qp->post(wr(WrOpcode::send, 50, e.req, 0, 7)));
  SendWr wi = wr(WrOpcode::rdma_write_with_imm, 51, e.req, kLocal, 16);
  to_remote(wi, e.resp, kRemote);
  wi.imm_data = htonl(5);
  ASSERT_TRUE(e.req.qp->post(wi));
  auto r1 = e.resp.next_completion();
  ASSERT_TRUE(r1) << r1.error().message();
  expect_wc(*r1, 1, prov::wc_status::success, prov::wc_opcode_recv);
  EXPECT_EQ(r1->qp_num, e.resp.qp->qpn()) << "the SRQ's receive names the QP it served";
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.resp.buf.data() + 128), 7), "via-srq");
  auto r2 = e.resp.next_completion();
  ASSERT_TRUE(r2) << r2.error().message();
  expect_wc(*r2, 1, prov::wc_status::success, prov::wc_opcode_recv_rdma_with_imm);
  EXPECT_EQ(ntohl(r2->imm_data), 5u);
  for (uint64_t id : {50, 51}) {
    auto wc = e.req.next_completion();
    ASSERT_TRUE(wc) << wc.error().message();
    expect_wc(*wc, id, prov::wc_status::success, id == 50 ? prov::wc_opcode_send : prov::wc_opcode_rdma_write);
  }
}

// Without SRQs both bits are 0.
TEST(DataPlaneSrq, NoSrqNoBit) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->req_srq, 0);
  EXPECT_EQ(p->rep_srq, 0);
  EXPECT_FALSE(p->active_qp.qp->has_srq());
}

INSTANTIATE_TEST_SUITE_P(Conformance, DataPlane, ::testing::Values(Side::from_active, Side::from_passive),
                         side_name);

}  // namespace
}  // namespace wireup::conf
