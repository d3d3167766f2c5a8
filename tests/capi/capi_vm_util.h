// A test transport over the C API: its own PD and CQ, a factory that makes RC QPs on them and
// remembers them, a release callback that counts, and a poll() loop over wireup_fd().
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "wireup/wireup.h"

namespace capi_test {

inline bool in_vm() {
  const char* v = std::getenv("WIREUP_IN_VM");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// A context or a loud skip (a failure inside the VM, where a device must exist).
#define CAPI_REQUIRE_CONTEXT(ctx, ...)                                                     \
  wireup_context_t* ctx = nullptr;                                                        \
  {                                                                                       \
    std::vector<const char*> ov_{__VA_ARGS__};                                            \
    wireup_context_params_t p_;                                                           \
    wireup_context_params_init(&p_);                                                      \
    p_.config_overrides = ov_.data();                                                     \
    p_.num_config_overrides = ov_.size();                                                 \
    if (wireup_context_create(&p_, &ctx) != WIREUP_OK) {                                  \
      if (capi_test::in_vm()) FAIL() << wireup_last_error(nullptr);                       \
      GTEST_SKIP() << "SKIPPED LOUDLY: " << wireup_last_error(nullptr);                   \
    }                                                                                     \
  }

struct Transport {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp_type type = IBV_QPT_RC;  // what the factory makes (tests hand out wrong ones too)
  ibv_srq* srq = nullptr;         // if set, every QP the factory makes receives through it
  std::vector<ibv_qp*> created;
  std::vector<ibv_qp*> released;

  explicit Transport(ibv_context* ctx) {
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  }
  ~Transport() {
    for (ibv_qp* q : created) ibv_destroy_qp(q);  // ours: wireup never destroys them
    if (srq) ibv_destroy_srq(srq);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
  }
  static int create(void* arg, const wireup_qp_request_t* req, ibv_qp** out) {
    auto* t = static_cast<Transport*>(arg);
    EXPECT_EQ(req->context, t->pd->context);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = t->cq;
    a.qp_type = t->type;
    a.srq = t->srq;
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(t->pd, &a);
    if (qp == nullptr) return errno;
    t->created.push_back(qp);
    *out = qp;
    return 0;
  }
  static void release(void* arg, const wireup_qp_request_t*, ibv_qp* qp) {
    static_cast<Transport*>(arg)->released.push_back(qp);  // destroyed with the rest at the end
  }
};

// wireup_create's params with `t`'s factory and release (t null: no factory at all).
inline wireup_params_t params_for(uint32_t rank, uint32_t nranks, uint32_t lanes, uint64_t key, Transport* t) {
  wireup_params_t p;
  wireup_params_init(&p);
  p.rank = rank;
  p.nranks = nranks;
  p.lanes = lanes;
  p.job_key = key;
  if (t != nullptr) {
    p.qp_create = &Transport::create;
    p.qp_release = &Transport::release;
    p.qp_arg = t;
  }
  return p;
}

inline std::vector<uint8_t> address_of(wireup_t* w) {
  std::vector<uint8_t> a(WIREUP_ADDRESS_MAX);
  size_t len = a.size();
  EXPECT_EQ(wireup_local_address(w, a.data(), &len), WIREUP_OK) << wireup_last_error(w);
  a.resize(len);
  return a;
}

// Gives every handle the whole table (its own entry included) and starts it.
inline void exchange_and_start(const std::vector<wireup_t*>& ws) {
  std::vector<std::vector<uint8_t>> addrs;
  for (wireup_t* w : ws) addrs.push_back(address_of(w));
  std::vector<wireup_peer_t> table;
  for (size_t i = 0; i < ws.size(); ++i) table.push_back({static_cast<uint32_t>(i), addrs[i].data(), addrs[i].size()});
  for (wireup_t* w : ws) {
    ASSERT_EQ(wireup_set_peers(w, table.data(), table.size()), WIREUP_OK) << wireup_last_error(w);
    ASSERT_EQ(wireup_start(w), WIREUP_OK) << wireup_last_error(w);
  }
}

// Progresses every handle until all are done, sleeping only in poll() on their fds with a
// long timeout: if wireup_fd() missed a timer, the caller's time bound notices.
inline bool drive(const std::vector<wireup_t*>& ws, std::chrono::seconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    bool all = true;
    int work = 0;
    for (wireup_t* w : ws) {
      int k = 0;
      EXPECT_EQ(wireup_progress(w, &k), WIREUP_OK) << wireup_last_error(w);
      work += k;
      all = all && wireup_done(w) == 1;
    }
    if (all) return true;
    if (work > 0) continue;
    std::vector<pollfd> fds;
    for (wireup_t* w : ws) fds.push_back(pollfd{wireup_fd(w), POLLIN, 0});
    poll(fds.data(), fds.size(), 10000);
  }
  return false;
}

inline std::string stats_of(const wireup_t* w) {
  size_t len = 0;
  EXPECT_EQ(wireup_stats_json(w, nullptr, &len), WIREUP_ERR_BUFFER_TOO_SMALL);
  std::string s(len, '\0');
  EXPECT_EQ(wireup_stats_json(w, s.data(), &len), WIREUP_OK) << wireup_last_error(w);
  s.resize(len > 0 ? len - 1 : 0);
  return s;
}

}  // namespace capi_test
