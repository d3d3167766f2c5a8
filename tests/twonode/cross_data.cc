// The data plane across the link between two kernels, from each side: an RDMA WRITE, READs as
// deep as the connection negotiated, compare-and-swap, fetch-and-add and a WRITE with
// immediate into the other node's memory, the passive end (node 2) and the active end (node 1)
// in turn. The active end moves its QP to INIT again once the REP is in (the CM can give its
// access flags only then), as librdmacm does for the QPs it manages.
#include <cstring>

#include "tests/conformance/data_util.h"
#include "tests/twonode/cross_files.h"

namespace wireup::conf {
namespace {

using prov::SendWr;
using prov::WrOpcode;

// The peer's AppQp buffer: its address and rkey, one token for the exchange file.
struct Window {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};
std::string window_of(AppQp& q) { return std::to_string(q.addr(0)) + ":" + std::to_string(q.mr->rkey()); }
Window parse_window(const std::string& s) {
  Window w;
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return w;
  w.addr = std::stoull(s.substr(0, colon));
  w.rkey = static_cast<uint32_t>(std::stoul(s.substr(colon + 1)));
  return w;
}

constexpr size_t kAtomic = kRemote + 512;
constexpr size_t kImm = kRemote + 1024;

prov::WorkCompletion completion(AppQp& q) {
  auto wc = q.next_completion(std::chrono::milliseconds(20000));
  EXPECT_TRUE(wc) << wc.error().message();
  return wc ? *wc : prov::WorkCompletion{.status = -1};
}

// Every one-sided verb from `q` into the peer's window (the peer has a receive posted).
void exercise(AppQp& q, const Window& peer) {
  ASSERT_NE(peer.rkey, 0u) << "no window from the peer";
  auto aim = [&](SendWr& w, size_t off) {
    w.remote_addr = peer.addr + off;
    w.rkey = peer.rkey;
  };
  const std::vector<uint8_t> data = pattern(64, 3);
  std::memcpy(q.buf.data() + kLocal, data.data(), data.size());
  SendWr w = wr(WrOpcode::rdma_write, 1, q, kLocal, 64);
  aim(w, kRemote);
  ASSERT_TRUE(q.qp->post(w));
  expect_wc(completion(q), 1, prov::wc_status::success, prov::wc_opcode_rdma_write);

  auto attr = q.qp->query(prov::qp_mask::max_qp_rd_atomic);
  ASSERT_TRUE(attr) << attr.error().message();
  const unsigned depth = attr->max_rd_atomic;
  ASSERT_GE(depth, 1u);
  for (unsigned i = 0; i < depth; ++i) {
    SendWr r = wr(WrOpcode::rdma_read, 10 + i, q, kLocal + 512 + 8 * i, 8);
    aim(r, kRemote + 8 * i);
    ASSERT_TRUE(q.qp->post(r));
  }
  for (unsigned i = 0; i < depth; ++i) expect_wc(completion(q), 10 + i, prov::wc_status::success, prov::wc_opcode_rdma_read);
  EXPECT_EQ(std::memcmp(q.buf.data() + kLocal + 512, data.data(), 8 * depth), 0);

  SendWr cas = wr(WrOpcode::atomic_cmp_and_swp, 20, q, kLocal + 1024, 8);
  aim(cas, kAtomic);
  cas.compare_add = 0;
  cas.swap = 9;
  ASSERT_TRUE(q.qp->post(cas));
  expect_wc(completion(q), 20, prov::wc_status::success, prov::wc_opcode_comp_swap);
  SendWr faa = wr(WrOpcode::atomic_fetch_and_add, 21, q, kLocal + 1032, 8);
  aim(faa, kAtomic);
  faa.compare_add = 3;
  ASSERT_TRUE(q.qp->post(faa));
  expect_wc(completion(q), 21, prov::wc_status::success, prov::wc_opcode_fetch_add);
  uint64_t orig_cas = 1, orig_faa = 0;
  std::memcpy(&orig_cas, q.buf.data() + kLocal + 1024, 8);
  std::memcpy(&orig_faa, q.buf.data() + kLocal + 1032, 8);
  EXPECT_EQ(orig_cas, 0u);
  EXPECT_EQ(orig_faa, 9u);

  const std::vector<uint8_t> imm_data = pattern(16, 5);
  std::memcpy(q.buf.data() + kLocal + 2048, imm_data.data(), imm_data.size());
  SendWr wi = wr(WrOpcode::rdma_write_with_imm, 30, q, kLocal + 2048, 16);
  aim(wi, kImm);
  wi.imm_data = 0x07000000;
  ASSERT_TRUE(q.qp->post(wi));
  expect_wc(completion(q), 30, prov::wc_status::success, prov::wc_opcode_rdma_write);
}

// What exercise() left in this side's memory, and the receive its WRITE with immediate took.
void check_landed(AppQp& q) {
  const prov::WorkCompletion rc = completion(q);
  expect_wc(rc, 1, prov::wc_status::success, prov::wc_opcode_recv_rdma_with_imm);
  EXPECT_EQ(rc.imm_data, 0x07000000u);
  EXPECT_EQ(rc.byte_len, 16u);
  const std::vector<uint8_t> data = pattern(64, 3), imm_data = pattern(16, 5);
  EXPECT_EQ(std::memcmp(q.buf.data() + kRemote, data.data(), data.size()), 0);
  EXPECT_EQ(std::memcmp(q.buf.data() + kImm, imm_data.data(), imm_data.size()), 0);
  uint64_t v = 0;
  std::memcpy(&v, q.buf.data() + kAtomic, 8);
  EXPECT_EQ(v, 12u) << "CAS 0 -> 9, then fetch-and-add 3";
}

TEST(CrossNode, DataPlaneBothWays) {
  REQUIRE_ENV();
  WIREUP_REQUIRE_FABRIC(f);
  if (server()) {
    auto l = Listener::create(f);
    ASSERT_TRUE(l) << l.error().message();
    put("port", std::to_string(l->addr.port()));
    auto in = Incoming::take(f, *l);
    ASSERT_TRUE(in) << in.error().message();
    ASSERT_TRUE(in->ready());
    ASSERT_TRUE(in->qp.post_recv());
    ASSERT_TRUE(in->accept());
    put("server_window", window_of(in->qp));
    auto est = expect_event(f.provider(0), *l->ch, prov::CmEventType::established, std::chrono::seconds(30));
    est.ack();
    EXPECT_EQ(get("client_done"), "1");
    check_landed(in->qp);
    exercise(in->qp, parse_window(get("client_window")));
    put("server_done", ::testing::Test::HasFailure() ? "0" : "1");
    EXPECT_EQ(get("end"), "1");
  } else {
    auto r = Requested::send(f, remote_listener());
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->qp.post_recv());
    auto resp = expect_event(f.provider(1), *r->active.ch, prov::CmEventType::connect_response,
                             std::chrono::seconds(30));
    for (auto s : {prov::QpState::init, prov::QpState::rtr, prov::QpState::rts})
      ASSERT_TRUE(r->qp.to_state(*r->active.id, s)) << prov::to_string(s);
    ASSERT_TRUE(r->active.id->establish());
    resp.ack();
    put("client_window", window_of(r->qp));
    exercise(r->qp, parse_window(get("server_window")));
    put("client_done", ::testing::Test::HasFailure() ? "0" : "1");
    EXPECT_EQ(get("server_done"), "1");
    check_landed(r->qp);
    put("end", "1");
  }
}

}  // namespace
}  // namespace wireup::conf
