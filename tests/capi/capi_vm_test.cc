// The C API on the real kernel stack (soft-RoCE VM): two "ranks" as two handles of one
// process on one context. Connections, QP ownership, strangers, misuse in call order.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "tests/capi/capi_vm_util.h"
#include "wireup/wireup.hpp"

namespace {

using namespace capi_test;
using namespace std::chrono_literals;

constexpr uint64_t kKey = 0x5eed0fc0ffee0001ULL;

wireup_t* make(wireup_context_t* ctx, Transport& t, uint32_t rank, uint32_t nranks, uint32_t lanes, uint64_t key) {
  const wireup_params_t p = params_for(rank, nranks, lanes, key, &t);
  wireup_t* w = nullptr;
  EXPECT_EQ(wireup_create(ctx, &p, &w), WIREUP_OK) << wireup_last_error(nullptr);
  return w;
}

std::vector<wireup_result_t> results_of(const wireup_t* w) {
  std::vector<wireup_result_t> v(wireup_result_count(w));
  for (size_t i = 0; i < v.size(); ++i) {
    WIREUP_STRUCT_INIT(&v[i]);
    EXPECT_EQ(wireup_result_get(w, i, &v[i]), WIREUP_OK);
  }
  return v;
}

ibv_qp_state state_of(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  return ibv_query_qp(qp, &a, IBV_QP_STATE, &init) == 0 ? a.qp_state : IBV_QPS_UNKNOWN;
}

TEST(CapiVm, ContextNamesDeviceAddressAndConfig) {
  CAPI_REQUIRE_CONTEXT(ctx, "engine.lanes=3");
  EXPECT_NE(wireup_context_ibv_context(ctx), nullptr);
  EXPECT_STRNE(wireup_context_device_name(ctx), "");
  if (const char* vm = std::getenv("WIREUP_VM_ADDR")) {
    EXPECT_STREQ(wireup_context_listen_address(ctx), vm);  // rxe0's netdev address
  }
  // The address came from rxe0's port (device.port, default 1) through its GID table's netdev.
  const std::string source = wireup_context_listen_source(ctx);
  EXPECT_EQ(source.rfind(std::string(wireup_context_device_name(ctx)) + " port 1 -> ", 0), 0u) << source;
  EXPECT_NE(source.find(std::string("-> ") + wireup_context_listen_address(ctx) + " (IPv4)"), std::string::npos)
      << source;
  EXPECT_STREQ(wireup_context_config_value(ctx, "engine.lanes"), "3");
  EXPECT_STREQ(wireup_context_config_value(ctx, "engine.job_key"), "\"0x0\"");
  EXPECT_EQ(wireup_context_config_value(ctx, "engine.lane"), nullptr);
  EXPECT_NE(std::string(wireup_context_last_error(ctx)).find("\"engine.lane\" is not a configuration key"),
            std::string::npos)
      << wireup_context_last_error(ctx);
  std::string dump = wireup_context_config_dump(ctx);
  EXPECT_NE(dump.find("lanes = 3"), std::string::npos) << dump;
  EXPECT_NE(dump.find("api"), std::string::npos) << dump;
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
}

TEST(CapiVm, TwoRanksConnectTalkAndKeepTheirQps) {
  CAPI_REQUIRE_CONTEXT(ctx, "qp.timeout=20");
  std::vector<ibv_qp*> kept;
  {
    Transport t(wireup_context_ibv_context(ctx));
    ASSERT_NE(t.cq, nullptr);
    wireup_t* w0 = make(ctx, t, 0, 2, 2, kKey);
    wireup_t* w1 = make(ctx, t, 1, 2, 2, kKey);
    ASSERT_TRUE(w0 && w1);
    exchange_and_start({w0, w1});
    ASSERT_TRUE(drive({w0, w1}, 60s));

    auto r0 = results_of(w0), r1 = results_of(w1);
    ASSERT_EQ(r0.size(), 2u);
    ASSERT_EQ(r1.size(), 2u);
    EXPECT_EQ(wireup_error_count(w0) + wireup_error_count(w1), 0u);
    std::map<uint32_t, wireup_result_t> by_lane;
    for (const auto& r : r1) by_lane[r.lane] = r;
    for (const auto& r : r0) {
      EXPECT_EQ(r.peer, 1u);
      const wireup_result_t& o = by_lane.at(r.lane);
      EXPECT_EQ(r.remote_qpn, o.local_qpn) << "lane " << r.lane;
      EXPECT_EQ(o.remote_qpn, r.local_qpn) << "lane " << r.lane;
      EXPECT_NE(r.active, o.active) << "one side initiates";
      EXPECT_EQ(r.qp->qp_num, r.local_qpn);
      EXPECT_EQ(state_of(r.qp), IBV_QPS_RTS);
      EXPECT_STREQ(r.device, wireup_context_device_name(ctx));
      EXPECT_GT(r.attempt_ns, 0u);
      EXPECT_GT(r.rtr_rts_ns + r.establish_ns, 0u);
    }
    // Counters, tallies and phase samples say the same as the results.
    for (wireup_t* w : {w0, w1}) {
      wireup_counters_t c;
      WIREUP_STRUCT_INIT(&c);
      ASSERT_EQ(wireup_counters_get(w, &c), WIREUP_OK);
      EXPECT_EQ(c.established_active + c.established_passive, 2u);
      EXPECT_EQ(c.failed, 0u);
      size_t n = 0;
      ASSERT_EQ(wireup_phase_samples(w, WIREUP_PHASE_TOTAL, nullptr, &n), WIREUP_ERR_BUFFER_TOO_SMALL);
      EXPECT_EQ(n, 2u) << "one total per connection";
      std::vector<uint64_t> total(n);
      ASSERT_EQ(wireup_phase_samples(w, WIREUP_PHASE_TOTAL, total.data(), &n), WIREUP_OK);
      for (uint64_t ns : total) EXPECT_GT(ns, 0u);
      uint64_t ece = 0;
      for (size_t i = 0, k = wireup_tally_count(w); i < k; ++i) {
        wireup_tally_t t;
        WIREUP_STRUCT_INIT(&t);
        ASSERT_EQ(wireup_tally_get(w, i, &t), WIREUP_OK);
        if (t.group == WIREUP_TALLY_ECE_OUTCOMES) ece += t.count;
      }
      EXPECT_EQ(ece, 2u) << "an ECE outcome per connection";
    }
    for (const auto& r : r0) kept.push_back(r.qp);
    for (const auto& r : r1) kept.push_back(r.qp);

    // One SEND each way on every connection, payload naming the sender's lane.
    std::vector<char> buf(kept.size() * 128);
    ibv_mr* mr = ibv_reg_mr(t.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    for (size_t i = 0; i < kept.size(); ++i) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[i * 128 + 64]), 64, mr->lkey};
      ibv_recv_wr wr{}, *bad = nullptr;
      wr.wr_id = i, wr.sg_list = &sge, wr.num_sge = 1;
      ASSERT_EQ(ibv_post_recv(kept[i], &wr, &bad), 0);
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      int len = std::snprintf(&buf[i * 128], 64, "qpn %u", kept[i]->qp_num);
      ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[i * 128]), static_cast<uint32_t>(len), mr->lkey};
      ibv_send_wr wr{}, *bad = nullptr;
      wr.wr_id = 100 + i, wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_SEND, wr.send_flags = IBV_SEND_SIGNALED;
      ASSERT_EQ(ibv_post_send(kept[i], &wr, &bad), 0);
    }
    std::map<uint32_t, uint32_t> remote_of;  // local qpn -> remote qpn
    for (const auto& r : r0) remote_of[r.local_qpn] = r.remote_qpn;
    for (const auto& r : r1) remote_of[r.local_qpn] = r.remote_qpn;
    size_t done = 0;
    const auto cq_until = std::chrono::steady_clock::now() + 30s;
    while (done < 2 * kept.size() && std::chrono::steady_clock::now() < cq_until) {
      ibv_wc wc[8];
      int n = ibv_poll_cq(t.cq, 8, wc);
      for (int k = 0; k < n; ++k, ++done) {
        ASSERT_EQ(wc[k].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[k].status);
        if (wc[k].opcode != IBV_WC_RECV) continue;
        std::string text(&buf[wc[k].wr_id * 128 + 64], wc[k].byte_len);
        EXPECT_EQ(text, "qpn " + std::to_string(remote_of[wc[k].qp_num])) << "on qpn " << wc[k].qp_num;
      }
      if (n == 0) std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(done, 2 * kept.size());
    ibv_dereg_mr(mr);

    // Destroying one side disconnects: the other hears it as steady-state events.
    int disconnects = 0;
    ASSERT_EQ(wireup_on_event(w1, [](void* arg, const wireup_event_t* ev) {
      if (ev->type == WIREUP_EVENT_DISCONNECTED) ++*static_cast<int*>(arg);
      EXPECT_STREQ(ev->name, ev->type == WIREUP_EVENT_DISCONNECTED ? "DISCONNECTED" : ev->name);
    }, &disconnects), WIREUP_OK);
    wireup_destroy(w0);
    const auto ev_until = std::chrono::steady_clock::now() + 20s;
    while (disconnects < 2 && std::chrono::steady_clock::now() < ev_until) {
      ASSERT_EQ(wireup_progress(w1, nullptr), WIREUP_OK) << wireup_last_error(w1);
      pollfd p{wireup_fd(w1), POLLIN, 0};
      poll(&p, 1, 100);
    }
    EXPECT_EQ(disconnects, 2);
    EXPECT_NE(stats_of(w1).find("\"disconnects\":2"), std::string::npos) << stats_of(w1);
    wireup_destroy(w1);

    // wireup is gone; the QPs are still the transport's, alive and queryable.
    for (ibv_qp* q : kept) EXPECT_NE(state_of(q), IBV_QPS_UNKNOWN) << "QP destroyed by wireup";
    EXPECT_EQ(t.created.size(), kept.size() + t.released.size());
  }
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK) << wireup_context_last_error(ctx);
}

TEST(CapiVm, WrongJobKeyIsRejectedAsAStranger) {
  CAPI_REQUIRE_CONTEXT(ctx, "engine.wireup_timeout_ms=3000", "engine.max_attempts=2", "engine.backoff_initial_ms=50");
  {
    Transport t(wireup_context_ibv_context(ctx));
    wireup_t* w0 = make(ctx, t, 0, 2, 1, kKey);
    wireup_t* w1 = make(ctx, t, 1, 2, 1, kKey ^ 0xbad);
    ASSERT_TRUE(w0 && w1);
    const auto t0 = std::chrono::steady_clock::now();
    exchange_and_start({w0, w1});
    ASSERT_TRUE(drive({w0, w1}, 30s));
    // Only wireup_fd()'s timer wakes the passive side at its 3 s deadline (drive polls for 10 s).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 6s) << "wireup_fd() did not wake for the deadline";

    EXPECT_EQ(wireup_result_count(w0) + wireup_result_count(w1), 0u);
    ASSERT_EQ(wireup_error_count(w0), 1u);
    ASSERT_EQ(wireup_error_count(w1), 1u);
    wireup_peer_error_t e0, e1;
    WIREUP_STRUCT_INIT(&e0);
    WIREUP_STRUCT_INIT(&e1);
    ASSERT_EQ(wireup_error_get(w0, 0, &e0), WIREUP_OK);
    ASSERT_EQ(wireup_error_get(w1, 0, &e1), WIREUP_OK);
    const wireup_peer_error_t& active = e0.active ? e0 : e1;
    const wireup_peer_error_t& passive = e0.active ? e1 : e0;
    wireup_t* passive_w = e0.active ? w1 : w0;
    ASSERT_NE(active.active, passive.active);
    EXPECT_EQ(active.kind, WIREUP_ERROR_REJECTED) << active.message;
    EXPECT_EQ(active.reject_reason, 28) << "consumer reject (rdma_reject)";
    // The refusal cannot authenticate (the stranger does not hold our key): its reason is
    // named in the message but not taken, and it is retried like any transient refusal.
    EXPECT_EQ(active.peer_reason, WIREUP_REJECT_NONE) << active.message;
    EXPECT_NE(std::string(active.message).find("its reason \"wrong_job_key\" not taken"), std::string::npos)
        << active.message;
    EXPECT_EQ(active.attempts, 2u) << "an unauthenticated refusal is retried to the last attempt";
    EXPECT_EQ(active.status, WIREUP_ERR_REJECTED);
    EXPECT_EQ(passive.kind, WIREUP_ERROR_TIMED_OUT) << passive.message;
    EXPECT_EQ(passive.status, WIREUP_ERR_TIMED_OUT);
    EXPECT_NE(stats_of(passive_w).find("\"strangers\":2"), std::string::npos) << stats_of(passive_w);
    // The passive side made no QP for the stranger; the active side's two came back to us.
    EXPECT_EQ(t.created.size(), 2u);
    EXPECT_EQ(t.released.size(), 2u);
    wireup_destroy(w0);
    wireup_destroy(w1);
  }
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
}

TEST(CapiVm, NonRcQpFromTheFactoryIsNamedAndHandedBack) {
  CAPI_REQUIRE_CONTEXT(ctx, "engine.wireup_timeout_ms=2000");
  {
    Transport t(wireup_context_ibv_context(ctx));
    t.type = IBV_QPT_UD;
    wireup_t* w0 = make(ctx, t, 0, 2, 1, kKey);
    wireup_t* w1 = make(ctx, t, 1, 2, 1, kKey);
    exchange_and_start({w0, w1});
    ASSERT_TRUE(drive({w0, w1}, 30s));
    wireup_peer_error_t e, x;
    WIREUP_STRUCT_INIT(&e);
    WIREUP_STRUCT_INIT(&x);
    wireup_t* active = nullptr;
    for (wireup_t* w : {w0, w1})
      if (wireup_error_count(w) == 1 && wireup_error_get(w, 0, &x) == WIREUP_OK && x.active) active = w, e = x;
    ASSERT_NE(active, nullptr);
    EXPECT_NE(std::string(e.message).find("the QP is UD; the CM connects RC QPs only"), std::string::npos) << e.message;
    EXPECT_EQ(t.released, t.created) << "every QP wireup did not use goes back to the transport";
    wireup_destroy(w0);
    wireup_destroy(w1);
  }
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
}

TEST(CapiVm, MisuseIsAnsweredInCallOrder) {
  CAPI_REQUIRE_CONTEXT(ctx);
  Transport t(wireup_context_ibv_context(ctx));
  wireup_t* w = nullptr;
  wireup_params_t p = params_for(0, 0, 1, kKey, &t);
  EXPECT_EQ(wireup_create(ctx, &p, &w), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(wireup_last_error(nullptr)).find("nranks is 0"), std::string::npos)
      << wireup_last_error(nullptr);
  EXPECT_NE(std::string(wireup_context_last_error(ctx)).find("nranks is 0"), std::string::npos);
  // Job key 0 in params and config: created, the key to come (wireup_set_job_key); start waits.
  p = params_for(0, 2, 1, 0, &t);
  ASSERT_EQ(wireup_create(ctx, &p, &w), WIREUP_OK) << wireup_last_error(nullptr);
  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE);
  EXPECT_NE(std::string(wireup_last_error(w)).find("wireup_set_job_key"), std::string::npos) << wireup_last_error(w);
  EXPECT_EQ(wireup_set_job_key(w, 0), WIREUP_ERR_INVALID_ARGUMENT);
  wireup_destroy(w);
  w = nullptr;
  p = params_for(0, 2, 1, kKey, nullptr);
  EXPECT_EQ(wireup_create(ctx, &p, &w), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(wireup_last_error(nullptr)).find("params->qp_create (the QP factory) is NULL"),
            std::string::npos)
      << wireup_last_error(nullptr);
  EXPECT_EQ(w, nullptr);

  w = make(ctx, t, 0, 2, 1, kKey);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(wireup_progress(w, nullptr), WIREUP_ERR_INVALID_STATE);
  EXPECT_STREQ(wireup_last_error(w), "wireup_progress: wireup_start() has not been called");
  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE);
  EXPECT_STREQ(wireup_last_error(w), "wireup_start: wireup_set_peers() has not been called");
  EXPECT_EQ(wireup_done(w), 0);
  size_t given_up = 99;
  EXPECT_EQ(wireup_fail_peer(w, 1, "dead", &given_up), WIREUP_ERR_INVALID_STATE);
  EXPECT_STREQ(wireup_last_error(w), "wireup_fail_peer: wireup_start() has not been called");
  EXPECT_EQ(given_up, 99u) << "output set on failure";
  EXPECT_EQ(wireup_fail_peer(w, 1, nullptr, nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_fail_peer(nullptr, 1, "dead", nullptr), WIREUP_ERR_INVALID_ARGUMENT);

  uint8_t small[3];
  size_t len = sizeof small;
  EXPECT_EQ(wireup_local_address(w, small, &len), WIREUP_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, 8u) << "IPv4: version, family, port, 4 address bytes";
  std::vector<uint8_t> me = address_of(w);
  const wireup_peer_t bad[] = {{0, me.data(), me.size()}, {5, me.data(), me.size()}, {1, nullptr, 4}};
  EXPECT_EQ(wireup_set_peers(w, bad, 2), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(wireup_last_error(w)).find("entry 1 (rank 5): rank >= nranks 2"), std::string::npos)
      << wireup_last_error(w);
  EXPECT_EQ(wireup_set_peers(w, bad + 2, 1), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_set_peers(w, nullptr, 1), WIREUP_ERR_INVALID_ARGUMENT);

  ASSERT_EQ(wireup_set_peers(w, bad, 1), WIREUP_OK) << wireup_last_error(w);  // only ourselves: nothing to do
  ASSERT_EQ(wireup_start(w), WIREUP_OK);
  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE);
  EXPECT_EQ(wireup_set_peers(w, bad, 1), WIREUP_ERR_INVALID_STATE);
  EXPECT_STREQ(wireup_last_error(w), "wireup_set_peers: wireup_start() was called: the peer table is fixed");
  EXPECT_EQ(wireup_progress(w, nullptr), WIREUP_OK);
  EXPECT_EQ(wireup_done(w), 1);
  wireup_result_t r;
  WIREUP_STRUCT_INIT(&r);
  EXPECT_EQ(wireup_result_get(w, 0, &r), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(wireup_last_error(w), "wireup_result_get: index 0 out of range (count is 0)");
  EXPECT_EQ(wireup_error_get(w, 3, nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_wait(w, -5), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_wait(w, 0), WIREUP_OK);
  EXPECT_FALSE(stats_of(w).empty());

  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_ERR_INVALID_STATE);
  EXPECT_NE(std::string(wireup_context_last_error(ctx)).find("1 wireup handle(s) still use this context"),
            std::string::npos);
  wireup_destroy(w);
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
}

TEST(CapiVm, CxxFaceConnectsTwoRanks) {
  std::unique_ptr<wireup::Context> ctx;
  try {
    ctx = std::make_unique<wireup::Context>();
  } catch (const wireup::Exception& e) {
    if (in_vm()) FAIL() << e.what();
    GTEST_SKIP() << "SKIPPED LOUDLY: " << e.what();
  }
  Transport t(ctx->ibv_context());
  auto factory = [&](const wireup::QpRequest& r) {
    ibv_qp* qp = nullptr;
    return Transport::create(&t, &r, &qp) == 0 ? qp : nullptr;
  };
  std::vector<wireup::Wireup> ws;
  for (uint32_t r = 0; r < 3; ++r) ws.emplace_back(*ctx, wireup::Params{r, 3, 1, kKey}, factory);
  std::vector<wireup::PeerAddress> table;
  for (uint32_t r = 0; r < 3; ++r) table.push_back({r, ws[r].local_address()});
  for (auto& w : ws) w.set_peers(table), w.start();
  for (auto until = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < until;) {
    int work = 0;
    bool all = true;
    for (auto& w : ws) work += w.progress(), all = all && w.done();
    if (all) break;
    if (work == 0) ws[0].wait(10ms);
  }
  for (auto& w : ws) {
    EXPECT_TRUE(w.done());
    EXPECT_EQ(w.results().size(), 2u);
    EXPECT_TRUE(w.errors().empty());
    EXPECT_NE(w.stats_json().find("\"failed\":0"), std::string::npos) << w.stats_json();
  }
  ws.clear();  // before the transport's QPs and the context
}

}  // namespace
