// One RC connection between the two ranks, through wireup's C API (include/wireup/wireup.h):
// the context picks the device, this process makes its PD, CQ and QP on it in the factory,
// wireup connects the QP through the RDMA CM and hands it over at RTS.
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "dp_bench.h"

namespace dp {
namespace {

// The factory: an RC QP on our PD and CQ, with the send queue and inline size the tests need.
int create_qp(void* arg, const wireup_qp_request_t* req, ibv_qp** out) {
  auto* l = static_cast<Link*>(arg);
  if (req->context != l->pd->context) return ENODEV;  // one device: our PD lives there
  ibv_qp_init_attr a{};
  a.send_cq = l->cq;
  a.recv_cq = l->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = l->send_depth;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = l->max_inline;
  ibv_qp* qp = ibv_create_qp(l->pd, &a);
  if (qp == nullptr) return errno != 0 ? errno : ENOMEM;
  l->max_inline = a.cap.max_inline_data;  // what the device gave
  *out = qp;
  return 0;
}

void release_qp(void*, const wireup_qp_request_t*, ibv_qp* qp) { (void)ibv_destroy_qp(qp); }

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

int mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

}  // namespace

RemoteBuffer Oob::swap(RemoteBuffer mine) {
  std::vector<uint8_t> out(sizeof mine), in;
  std::memcpy(out.data(), &mine, sizeof mine);
  in = swap(out);
  if (in.size() != sizeof mine) fail("out-of-band swap: the peer sent " + std::to_string(in.size()) + " bytes");
  RemoteBuffer theirs;
  std::memcpy(&theirs, in.data(), sizeof theirs);
  return theirs;
}

std::string QpFacts::text() const {
  char b[256];
  std::snprintf(b, sizeof b,
                "path_mtu=%d timeout=%u retry_cnt=%u rnr_retry=%u max_rd_atomic=%u max_dest_rd_atomic=%u "
                "access=0x%x min_rnr_timer=%u",
                path_mtu_bytes, timeout, retry_cnt, rnr_retry, max_rd_atomic, max_dest_rd_atomic, access, min_rnr_timer);
  return b;
}

void connect(Link& l, Oob& oob, int rank, uint64_t job_key, const std::string& config_file,
             const std::vector<std::string>& overrides, uint32_t send_depth, uint32_t max_inline) {
  std::vector<const char*> sets;
  for (const std::string& s : overrides) sets.push_back(s.c_str());
  wireup_context_params_t cp;
  wireup_context_params_init(&cp);
  if (!config_file.empty()) cp.config_file = config_file.c_str();
  cp.config_overrides = sets.data();
  cp.num_config_overrides = sets.size();
  if (wireup_context_create(&cp, &l.ctx) != WIREUP_OK)
    fail(std::string("wireup_context_create: ") + wireup_last_error(nullptr));
  ibv_context* dev = wireup_context_ibv_context(l.ctx);
  l.pd = ibv_alloc_pd(dev);
  if (l.pd == nullptr) fail(std::string("ibv_alloc_pd: ") + std::strerror(errno));
  // One CQ for both directions: write_bw has at most tx_depth WRs in flight, each test at most
  // one receive (none is posted: every test is one-sided).
  l.cq = ibv_create_cq(dev, int(send_depth) + 16, nullptr, nullptr, 0);
  if (l.cq == nullptr) fail(std::string("ibv_create_cq: ") + std::strerror(errno));

  l.send_depth = send_depth;
  l.max_inline = max_inline;
  wireup_params_t wp;
  wireup_params_init(&wp);
  wp.rank = uint32_t(rank);
  wp.nranks = 2;
  wp.lanes = 1;
  wp.job_key = job_key;
  wp.qp_create = create_qp;
  wp.qp_release = release_qp;
  wp.qp_arg = &l;
  if (wireup_create(l.ctx, &wp, &l.w) != WIREUP_OK)
    fail(std::string("wireup_create: ") + wireup_last_error(nullptr));
  std::vector<uint8_t> mine(WIREUP_ADDRESS_MAX);
  size_t len = mine.size();
  if (wireup_local_address(l.w, mine.data(), &len) != WIREUP_OK)
    fail(std::string("wireup_local_address: ") + wireup_last_error(l.w));
  mine.resize(len);
  const std::vector<uint8_t> theirs = oob.swap(mine);
  const wireup_peer_t peers[2] = {{uint32_t(rank), mine.data(), mine.size()},
                                  {uint32_t(1 - rank), theirs.data(), theirs.size()}};
  if (wireup_set_peers(l.w, peers, 2) != WIREUP_OK) fail(std::string("wireup_set_peers: ") + wireup_last_error(l.w));
  if (wireup_start(l.w) != WIREUP_OK) fail(std::string("wireup_start: ") + wireup_last_error(l.w));
  while (wireup_done(l.w) == 0) {
    int work = 0;
    if (wireup_progress(l.w, &work) != WIREUP_OK) fail(std::string("wireup_progress: ") + wireup_last_error(l.w));
    if (work > 0) continue;
    pollfd p{wireup_fd(l.w), POLLIN, 0};
    (void)poll(&p, 1, 1000);
  }
  if (wireup_result_count(l.w) != 1) {
    std::string why = "no connection to rank " + std::to_string(1 - rank);
    wireup_peer_error_t e;
    WIREUP_STRUCT_INIT(&e);
    if (wireup_error_count(l.w) > 0 && wireup_error_get(l.w, 0, &e) == WIREUP_OK) why += std::string(": ") + e.message;
    fail(why);
  }
  wireup_result_t r;
  WIREUP_STRUCT_INIT(&r);
  (void)wireup_result_get(l.w, 0, &r);
  l.qp = r.qp;
  l.active = r.active != 0;
}

QpFacts query(const Link& l) {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  const int rc = ibv_query_qp(l.qp, &a, IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                            IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
                                            IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER, &ia);
  if (rc != 0) fail(std::string("ibv_query_qp: ") + std::strerror(rc));
  return QpFacts{mtu_bytes(a.path_mtu), a.timeout, a.retry_cnt, a.rnr_retry, a.max_rd_atomic, a.max_dest_rd_atomic,
                 unsigned(a.qp_access_flags), a.min_rnr_timer};
}

void close(Link& l) {
  if (l.w != nullptr) wireup_destroy(l.w), l.w = nullptr;  // disconnects; the QP stays ours
  if (l.qp != nullptr) (void)ibv_destroy_qp(l.qp), l.qp = nullptr;
  if (l.cq != nullptr) (void)ibv_destroy_cq(l.cq), l.cq = nullptr;
  if (l.pd != nullptr) (void)ibv_dealloc_pd(l.pd), l.pd = nullptr;
  if (l.ctx != nullptr) (void)wireup_context_destroy(l.ctx), l.ctx = nullptr;
}

}  // namespace dp
