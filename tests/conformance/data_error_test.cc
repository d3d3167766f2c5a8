// The data plane's error cases, as the responder answers them: a QP without the remote
// access, an MR without it, and more READs in flight than the responder's depth.
#include <cstring>
#include <iostream>
#include <sstream>
#include <vector>

#include "tests/conformance/data_util.h"

namespace wireup::conf {
namespace {

using prov::QpState;
using prov::SendWr;
using prov::WrOpcode;

// rxe reports vendor id 0xffffff (the sim's rxe profile too).
bool is_rxe(const prov::Device& d) { return d.info().vendor_id == 0xFFFFFF; }

std::string statuses(const std::vector<prov::WorkCompletion>& wcs) {
  std::ostringstream o;
  for (const auto& wc : wcs) o << wc.wr_id << ":" << wc.status << " ";
  return o.str();
}

QpState state_of(AppQp& q) {
  auto a = q.qp->query(prov::qp_mask::state);
  return a ? a->qp_state : QpState::unknown;
}

// The active QP moved to INIT before rdma_connect has access flags 0 (the kernel's CM has no
// IB CM id to answer from yet). Without INIT again after the REP, an RDMA WRITE into it is an
// invalid request: the writer's QP goes to ERR. With it, the QP carries the remote access.
TEST(DataPlaneErrors, ActiveQpWithoutInitAgainRefusesWrites) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  PairOptions o;
  o.redo_init = false;
  auto p = connect_pair(f, *l, o);
  ASSERT_TRUE(p) << p.error().message();
  auto acc = p->active_qp.qp->query(prov::qp_mask::access_flags);
  ASSERT_TRUE(acc) << acc.error().message();
  EXPECT_EQ(acc->qp_access_flags, 0u);

  AppQp& writer = p->passive_qp;
  SendWr w = wr(WrOpcode::rdma_write, 60, writer, kLocal, 16);
  to_remote(w, p->active_qp, kRemote);
  ASSERT_TRUE(writer.qp->post(w));
  auto wc = writer.next_completion();
  ASSERT_TRUE(wc) << wc.error().message();
  expect_wc(*wc, 60, prov::wc_status::rem_inv_req_err, 0);
  EXPECT_EQ(state_of(writer), QpState::err);
  // Later work requests flush.
  ASSERT_TRUE(writer.qp->post(wr(WrOpcode::send, 61, writer, 0, 4)));
  auto flushed = writer.next_completion();
  ASSERT_TRUE(flushed) << flushed.error().message();
  expect_wc(*flushed, 61, prov::wc_status::wr_flush_err, 0);
  // The responder's QP goes to ERR too (IBA: an invalid request is a class C responder
  // error, QP_REQ_ERR); its posted receive flushes.
  EXPECT_EQ(state_of(p->active_qp), QpState::err);
}

TEST(DataPlaneErrors, ActiveQpAfterInitAgainHasRemoteAccess) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  for (AppQp* q : {&p->active_qp, &p->passive_qp}) {
    auto a = q->qp->query(prov::qp_mask::access_flags);
    ASSERT_TRUE(a) << a.error().message();
    // cm.c cm_init_qp_init_attr: REMOTE_WRITE, and READ/ATOMIC when responder resources > 0.
    EXPECT_EQ(a->qp_access_flags, prov::access::remote_all) << "QPN " << q->qp->qpn();
  }
}

// An rkey whose MR lacks REMOTE_WRITE: a remote access error, the writer's QP to ERR.
TEST(DataPlaneErrors, WriteIntoMrWithoutRemoteWriteIsRemoteAccessError) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  std::vector<uint8_t> mem(256);
  auto mr = p->passive_qp.pd->reg_mr(mem.data(), mem.size(), prov::access::local_write);
  ASSERT_TRUE(mr) << mr.error().message();

  AppQp& writer = p->active_qp;
  SendWr w = wr(WrOpcode::rdma_write, 70, writer, kLocal, 16);
  w.remote_addr = reinterpret_cast<uint64_t>(mem.data());
  w.rkey = (*mr)->rkey();
  ASSERT_TRUE(writer.qp->post(w));
  auto wc = writer.next_completion();
  ASSERT_TRUE(wc) << wc.error().message();
  expect_wc(*wc, 70, prov::wc_status::rem_access_err, 0);
  EXPECT_EQ(state_of(writer), QpState::err);
}

// The requester may have 4 READs in flight, the responder takes 1 (its RTR said so, as a
// peer configured with a smaller depth would). mlx5 NAKs the second (invalid request): the
// first completes, the second fails with REM_INV_REQ_ERR, the rest flush and the QP is in
// ERR. rxe does not count a responder's READs in flight (it reuses its oldest resource) and
// answers all four: a transport that relies on rxe would not see the mismatch.
TEST(DataPlaneErrors, ReadsBeyondTheRespondersDepth) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  PairOptions o;
  o.responder_resources = 4;
  o.initiator_depth = 4;
  o.passive_max_dest_rd_atomic = 1;
  auto p = connect_pair(f, *l, o);
  ASSERT_TRUE(p) << p.error().message();
  AppQp& reader = p->active_qp;
  auto qa = reader.qp->query(prov::qp_mask::max_qp_rd_atomic);
  auto qb = p->passive_qp.qp->query(prov::qp_mask::max_dest_rd_atomic);
  ASSERT_TRUE(qa && qb);
  ASSERT_EQ(qa->max_rd_atomic, 4);
  ASSERT_EQ(qb->max_dest_rd_atomic, 1);

  for (unsigned i = 0; i < 4; ++i) {
    SendWr r = wr(WrOpcode::rdma_read, 80 + i, reader, kLocal + 64 * i, 64);
    to_remote(r, p->passive_qp, kRemote + 64 * i);
    ASSERT_TRUE(reader.qp->post(r));
  }
  std::vector<prov::WorkCompletion> wcs;
  for (unsigned i = 0; i < 4; ++i) {
    auto wc = reader.next_completion();
    ASSERT_TRUE(wc) << wc.error().message() << " after " << statuses(wcs);
    wcs.push_back(*wc);
  }
  const bool rxe = is_rxe(p->passive_qp.qp->device());
  std::cout << "[ provider ] " << f.name() << " on " << p->passive_qp.qp->device().info().name
            << ": READ completions (wr_id:status) " << statuses(wcs) << "\n";
  if (rxe) {
    // rxe: every READ answered, both QPs stay in RTS.
    for (unsigned i = 0; i < 4; ++i) expect_wc(wcs[i], 80 + i, prov::wc_status::success, prov::wc_opcode_rdma_read);
    EXPECT_EQ(state_of(reader), QpState::rts);
  } else {
    // mlx5: the second is NAKed, the rest flush, the reader's QP is in ERR.
    expect_wc(wcs[0], 80, prov::wc_status::success, prov::wc_opcode_rdma_read);
    expect_wc(wcs[1], 81, prov::wc_status::rem_inv_req_err, 0);
    expect_wc(wcs[2], 82, prov::wc_status::wr_flush_err, 0);
    expect_wc(wcs[3], 83, prov::wc_status::wr_flush_err, 0);
    EXPECT_EQ(state_of(reader), QpState::err);
  }
}

}  // namespace
}  // namespace wireup::conf
