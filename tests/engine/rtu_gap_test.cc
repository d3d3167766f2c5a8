// The RTU gap (src/wireup/engine_repair.cc): a one-way flap that loses every RTU of a
// connection until the passive side's REP retries run out. The active side is established,
// the passive side gets UNREACHABLE and its CM tells nobody. Both sides must end up agreeing:
// connected after a repair, or both reporting the lane lost, each with its reason.
// And the passive side's REJ when it cannot make its QP carries local_failure.
#include <cerrno>

#include "tests/engine/sim_engine_fabric.h"
#include "wireup/private_data.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::sim::CmMsg;
using prov::sim::MessageRule;
using prov::sim::SimConfig;

// Every RTU from node `from` to node `to` sent in [0, until) is lost. The passive side's REP
// retransmissions (every 6.144 s in the sim, as on Linux 6.1) make the active CM resend its
// RTU, so a window that ends at 95 s covers all 16 RTUs of a connection made at t ~ 0 (the
// 15th REP retransmission goes at ~92.2 s) and its REP retries run out (UNREACHABLE) at ~98.3 s.
SimConfig rtu_flap(uint32_t from, uint32_t to, Nanos until) {
  SimConfig cfg;
  cfg.seed = 34;
  MessageRule r;
  r.types = prov::sim::msg_bit(CmMsg::rtu);
  r.src_node = from;
  r.dst_node = to;
  r.until = until;
  r.drop = 1;
  cfg.faults.rules.push_back(r);
  return cfg;
}

const ConnResult* result_for(const Engine& e, uint32_t peer, uint32_t lane) {
  for (const ConnResult& c : e.results())
    if (!c.withdrawn && c.peer == peer && c.lane == lane) return &c;
  return nullptr;
}

const PeerError* error_for(const Engine& e, uint32_t peer, uint32_t lane) {
  for (const PeerError& x : e.errors())
    if (x.peer == peer && x.lane == lane) return &x;
  return nullptr;
}

// Rank 0 initiates to rank 1 and is still wiring up when rank 1's REP retries run out (it
// waits for rank 2, which is dead): it tears the lane down and reconnects once the flap is
// over; both sides end connected with crossed QPNs on the second attempt.
TEST(RtuGap, RepairedWhileTheActiveSideIsStillWiringUp) {
  // 3 ranks: 0 -> 1, 1 -> 2, 2 -> 0 (plan::initiates); rank 2 is dead from the start, so
  // rank 0 keeps its passive pair with it open until its deadline.
  SimEngineFabric f(3, rtu_flap(0, 1, 95s));
  auto job = make_job(f, 3, 1, [](EngineOptions& o) {
    o.max_attempts = 4;
    o.wireup_timeout = 200s;
  });
  ASSERT_TRUE(job) << job.error().message();
  f.fabric().kill_node(2, f.fabric().now());
  auto r = drive(f, *job, 400s, {2});
  ASSERT_TRUE(r) << r.error().message();
  const Engine& a = *job->ranks[0].engine;
  const Engine& p = *job->ranks[1].engine;
  const ConnResult* ra = result_for(a, 1, 0);
  const ConnResult* rp = result_for(p, 0, 0);
  ASSERT_NE(ra, nullptr) << "active side: " << (error_for(a, 1, 0) ? error_for(a, 1, 0)->describe() : "nothing");
  ASSERT_NE(rp, nullptr) << "passive side: " << (error_for(p, 0, 0) ? error_for(p, 0, 0)->describe() : "nothing");
  EXPECT_EQ(ra->remote_qpn, rp->local_qpn);
  EXPECT_EQ(rp->remote_qpn, ra->local_qpn);
  EXPECT_EQ(ra->attempts, 2u) << "the repair costs one attempt";
  EXPECT_EQ(rp->attempts, 2u);
  EXPECT_GE(p.stats()[Counter::rtu_lost_sent], 1u);
  EXPECT_EQ(a.stats()[Counter::rtu_lost_received], p.stats()[Counter::rtu_lost_sent]);
  EXPECT_EQ(a.stats()[Counter::repairs], 1u);
  EXPECT_EQ(a.stats().rejects_sent(RejectCode::repair_accepted), 1u);
  // Exactly one connection per pair, in the pair's one result slot: the torn-down connection's
  // record (withdrawn) was written over by the repaired one's (records.h).
  size_t to_rank1 = 0, withdrawn = 0;
  for (const ConnResult& c : a.results()) {
    to_rank1 += c.peer == 1 && !c.withdrawn;
    withdrawn += c.peer == 1 && c.withdrawn;
  }
  EXPECT_EQ(to_rank1, 1u);
  EXPECT_EQ(withdrawn, 0u);
  EXPECT_EQ(a.connected(), a.results().size());
  // The pairs with the dead rank fail as before, on both live ranks.
  EXPECT_NE(error_for(a, 2, 0), nullptr);
  EXPECT_NE(error_for(p, 2, 0), nullptr);
}

// Rank 0's wireup has ended (its only pair is established) when rank 1 asks: it cannot take
// the lane back, so it tells its transport (a SteadyEvent, DISCONNECTED -ECONNRESET with
// rtu_lost) and answers repair_refused; rank 1 reports the pair failed with the reason.
TEST(RtuGap, BothSidesReportTheLossAfterTheActiveSideFinished) {
  SimEngineFabric f(2, rtu_flap(0, 1, 95s));
  auto job = make_job(f, 2, 1, [](EngineOptions& o) { o.wireup_timeout = 300s; });
  ASSERT_TRUE(job) << job.error().message();
  std::vector<SteadyEvent> seen;
  job->ranks[0].engine->on_steady_event([&](const SteadyEvent& e) { seen.push_back(e); });
  auto r = drive(f, *job, 400s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_LT(r->virtual_time, 125s) << "the passive side must not wait for its deadline";
  const Engine& a = *job->ranks[0].engine;
  const Engine& p = *job->ranks[1].engine;
  ASSERT_NE(result_for(a, 1, 0), nullptr);  // handed over before the notice came
  const PeerError* ep = error_for(p, 0, 0);
  ASSERT_NE(ep, nullptr);
  EXPECT_EQ(ep->failure.kind, cm::FailKind::rtu_lost) << ep->describe();
  EXPECT_EQ(ep->cause, PeerError::Cause::rtu_peer_cannot_reconnect) << ep->describe();
  ASSERT_FALSE(seen.empty()) << "the active side's transport was never told";
  EXPECT_TRUE(seen[0].rtu_lost);
  EXPECT_EQ(seen[0].peer, 1u);
  EXPECT_EQ(seen[0].type, prov::CmEventType::disconnected);
  EXPECT_EQ(seen[0].status, -ECONNRESET);
  EXPECT_EQ(a.stats()[Counter::repairs_refused], 1u);
  // The linger ends on its own: the setup channel closes rtu_linger after the last connect.
  EXPECT_TRUE(a.setup_channel_open());
  f.fabric().run_for(200s);
  ASSERT_TRUE(job->ranks[0].engine->progress());
  EXPECT_FALSE(a.setup_channel_open());
}

// Without a linger the active rank's listener is gone when the notice comes: the CM answers
// REJ 8 to every try, and the passive side says that the peer may hold the lane as
// connected instead of waiting for its deadline. (The active side cannot be told: this is
// what rtu_linger is for.)
TEST(RtuGap, NoListenerLeftIsReportedExplicitly) {
  SimEngineFabric f(2, rtu_flap(0, 1, 95s));
  auto job = make_job(f, 2, 1, [](EngineOptions& o) {
    o.rtu_linger = 0s;
    o.max_attempts = 3;
    o.wireup_timeout = 3600s;
  });
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 4000s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_LT(r->virtual_time, 125s) << "the passive side must not wait for its deadline";
  const Engine& p = *job->ranks[1].engine;
  const PeerError* ep = error_for(p, 0, 0);
  ASSERT_NE(ep, nullptr);
  EXPECT_EQ(ep->failure.kind, cm::FailKind::rtu_lost);
  EXPECT_EQ(ep->failure.status, prov::reject_reason::no_listener);
  EXPECT_EQ(ep->cause, PeerError::Cause::rtu_listener_gone) << ep->describe();
  EXPECT_EQ(p.stats()[Counter::rtu_lost_sent], 3u) << "max_attempts tries";
}

// The passive side cannot make its QP: its REJ carries local_failure (not an empty REJ), which
// the active side reads and retries on.
TEST(PassiveLocalFailure, RejectCarriesLocalFailureAndIsRetried) {
  for (uint32_t attempts : {1u, 2u}) {
    SimEngineFabric f(2, SimConfig{.seed = 5});
    int passive_failures_left = 1;
    auto made = make_job(
        f, 2, 1,
        [&](EngineOptions& o) {
          o.max_attempts = attempts;
          o.wireup_timeout = 30s;
        },
        [&](uint32_t, qp::QpFactory inner) -> qp::QpFactory {
          return [inner, &passive_failures_left](const qp::QpRequest& q) -> Result<std::unique_ptr<prov::Qp>> {
            if (!q.active && passive_failures_left-- > 0)
              return Error::make(ErrorCode::resource_exhausted, "ibv_create_qp", "test: out of QPs");
            return inner(q);
          };
        });
    ASSERT_TRUE(made) << made.error().message();
    Job job = std::move(made).value();
    auto r = drive(f, job, 60s);
    ASSERT_TRUE(r) << r.error().message();
    const Engine& a = *job.ranks[0].engine;  // rank 0 initiates to 1
    if (attempts == 1) {
      const PeerError* e = error_for(a, 1, 0);
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->peer_reason, RejectCode::local_failure) << e->describe();
      EXPECT_NE(e->describe().find("[peer said: local_failure]"), std::string::npos) << e->describe();
    } else {
      const ConnResult* c = result_for(a, 1, 0);
      ASSERT_NE(c, nullptr) << (error_for(a, 1, 0) ? error_for(a, 1, 0)->describe() : "nothing");
      EXPECT_EQ(c->attempts, 2u);
      EXPECT_EQ(a.stats().rejects_received(prov::reject_reason::consumer), 1u);
    }
  }
}

}  // namespace
}  // namespace wireup::etest
