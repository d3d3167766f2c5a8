// On demand (EngineOptions::on_demand), on the sim and on rxe (engine_rdma in the VM): only the
// lanes asked for connect, exactly once each, crossing requests included; addresses may come
// later; one peer is disconnected and reconnected, also after it restarted.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/engine/counted_qp.h"
#include "tests/engine/engine_harness.h"
#include "wireup/plan.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kKey = 0x0d0d0d0d12345678ULL;

// Every rank of these jobs counts its QPs alive and made, through the factory.
struct Counts {
  std::vector<int64_t> live;
  std::vector<uint64_t> made;
  explicit Counts(uint32_t n) : live(n, 0), made(n, 0) {}
  int64_t live_total() const {
    int64_t t = 0;
    for (int64_t v : live) t += v;
    return t;
  }
};

EngineOptions od_options(EngineFabric& f, uint32_t rank, uint32_t n, uint32_t lanes) {
  EngineOptions o = engine_defaults();
  o.rank = rank;
  o.nranks = n;
  o.lanes = lanes;
  o.job_key = kKey;
  o.listen_addr = f.address(rank);
  o.on_demand = true;
  o.wireup_timeout = 60s;
  return o;
}

// `n` on-demand engines, started, each with every address.
Result<Job> od_job(EngineFabric& f, uint32_t n, uint32_t lanes, Counts& c, const OptionsHook& hook = {}) {
  return make_job(
      f, n, lanes,
      [&](EngineOptions& o) {
        o.on_demand = true;
        o.job_key = kKey;
        o.wireup_timeout = 60s;
        if (hook) hook(o);
      },
      [&c](uint32_t rank, qp::QpFactory inner) { return counted(std::move(inner), c.live[rank], c.made[rank]); });
}

bool all_done(const Job& job) {
  for (const auto& r : job.ranks)
    if (r.engine && !r.engine->done()) return false;
  return true;
}

uint64_t total(const Job& job, Counter c) {
  uint64_t t = 0;
  for (const auto& r : job.ranks) t += r.engine->stats()[c];
  return t;
}

// The live connections of `me`: (peer, lane) -> (local QPN, remote QPN), each at most once.
std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> live_lanes(const Engine& e) {
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> m;
  for (const ConnResult& r : e.results()) {
    if (r.withdrawn || e.lane_state(r.peer, r.lane) != LaneState::ready) continue;
    // An earlier connection of the lane, closed since.
    if (e.qp(static_cast<uint32_t>(&r - e.results().data())) == nullptr) continue;
    EXPECT_TRUE(m.emplace(std::make_pair(r.peer, r.lane), std::make_pair(r.local_qpn, r.remote_qpn)).second)
        << "lane " << r.peer << "/" << r.lane << " connected twice";
  }
  return m;
}

// Exactly the pairs of `expected` (unordered rank pairs) are connected, on every lane, once,
// with each end's remote QPN the other's local one.
void expect_exactly(const Job& job, uint32_t lanes, const std::set<std::pair<uint32_t, uint32_t>>& expected) {
  const uint32_t n = static_cast<uint32_t>(job.ranks.size());
  std::vector<std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>>> all;
  for (uint32_t me = 0; me < n; ++me) all.push_back(live_lanes(*job.ranks[me].engine));
  for (uint32_t me = 0; me < n; ++me)
    for (uint32_t peer = 0; peer < n; ++peer) {
      if (peer == me) continue;
      const bool want = expected.count({std::min(me, peer), std::max(me, peer)}) != 0;
      for (uint32_t lane = 0; lane < lanes; ++lane) {
        auto mine = all[me].find({peer, lane});
        if (!want) {
          EXPECT_EQ(mine, all[me].end()) << "rank " << me << " connected to " << peer << " lane " << lane
                                         << ", which nobody asked for";
          continue;
        }
        ASSERT_NE(mine, all[me].end()) << "rank " << me << " has no connection to " << peer << " lane " << lane;
        auto theirs = all[peer].find({me, lane});
        ASSERT_NE(theirs, all[peer].end()) << "rank " << peer << " has no connection to " << me << " lane " << lane;
        EXPECT_EQ(mine->second.second, theirs->second.first) << me << "->" << peer << " lane " << lane;
        EXPECT_EQ(mine->second.first, theirs->second.second) << peer << "->" << me << " lane " << lane;
      }
    }
}

TEST(OnDemand, EveryPairAskedFromBothEndsAtOnceConnectsOncePerLane) {
  constexpr uint32_t kRanks = 6, kLanes = 2;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, kLanes, c);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<uint32_t> ready(kRanks, 0);
  for (uint32_t me = 0; me < kRanks; ++me)
    job->ranks[me].engine->on_lane_event([&ready, me](const LaneEvent& e) {
      if (e.kind == LaneEvent::Kind::ready) ++ready[me];
    });
  // Every rank asks every other rank before anyone progresses: every (pair, lane) crosses.
  for (uint32_t me = 0; me < kRanks; ++me)
    for (uint32_t q = 0; q < kRanks; ++q)
      if (q != me) {
        ASSERT_TRUE(job->ranks[me].engine->connect(q));
      }
  ASSERT_TRUE(run_until(f, *job, [&] { return all_done(*job); }, 60s));
  std::set<std::pair<uint32_t, uint32_t>> every;
  for (uint32_t a = 0; a < kRanks; ++a)
    for (uint32_t b = a + 1; b < kRanks; ++b) every.insert({a, b});
  expect_exactly(*job, kLanes, every);
  const uint64_t lanes_total = kRanks * (kRanks - 1) / 2 * kLanes;
  for (uint32_t me = 0; me < kRanks; ++me) {
    const Engine& e = *job->ranks[me].engine;
    EXPECT_TRUE(e.errors().empty()) << e.errors().front().describe();
    EXPECT_EQ(ready[me], (kRanks - 1) * kLanes) << "rank " << me << ": a READY per lane";
    // The rule both sides apply: the connection kept is the one the plan's initiator asked for.
    for (const ConnResult& r : e.results()) {
      EXPECT_FALSE(r.withdrawn);
      EXPECT_EQ(r.role == cm::Role::active, plan::initiates(me, r.peer, kRanks)) << me << "->" << r.peer;
    }
  }
  // One crossing per (pair, lane), each decided once at the side that gave way, no retries.
  EXPECT_EQ(total(*job, Counter::crossed_yielded), lanes_total);
  EXPECT_EQ(total(*job, Counter::retries), 0u) << "a crossing must cost no retry";
  EXPECT_EQ(total(*job, Counter::asks), 2 * lanes_total);
  // The loser's QPs went back: what is alive is exactly the connections' two ends.
  EXPECT_EQ(c.live_total(), static_cast<int64_t>(2 * lanes_total));
  std::printf("crossing: %llu lanes, %llu crossings won by refusing, %llu given way, QPs made %llu, alive %lld\n",
              static_cast<unsigned long long>(lanes_total),
              static_cast<unsigned long long>(total(*job, Counter::crossed_won)),
              static_cast<unsigned long long>(total(*job, Counter::crossed_yielded)),
              static_cast<unsigned long long>([&] {
                uint64_t m = 0;
                for (uint64_t v : c.made) m += v;
                return m;
              }()),
              static_cast<long long>(c.live_total()));
}

TEST(OnDemand, OnlyTheLanesAskedForConnect) {
  constexpr uint32_t kRanks = 8, kLanes = 1;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, kLanes, c);
  ASSERT_TRUE(job) << job.error().message();
  // Rank r asks r+3 and 5r+1 (mod 8): some pairs from one end, some from both (crossing).
  std::set<std::pair<uint32_t, uint32_t>> asked;
  for (uint32_t me = 0; me < kRanks; ++me) {
    for (uint32_t q : {(me + 3) % kRanks, (me * 5 + 1) % kRanks}) {
      if (q == me) continue;
      ASSERT_TRUE(job->ranks[me].engine->connect(q));
      asked.insert({std::min(me, q), std::max(me, q)});
    }
  }
  ASSERT_TRUE(run_until(f, *job, [&] { return all_done(*job); }, 60s));
  expect_exactly(*job, kLanes, asked);
  for (uint32_t me = 0; me < kRanks; ++me) {
    EXPECT_TRUE(job->ranks[me].engine->errors().empty());
    for (uint32_t q = 0; q < kRanks; ++q)
      if (q != me && !asked.count({std::min(me, q), std::max(me, q)})) {
        EXPECT_EQ(job->ranks[me].engine->lane_state(q, 0), LaneState::idle);
      }
  }
  EXPECT_EQ(c.live_total(), static_cast<int64_t>(2 * asked.size()));
}

TEST(OnDemand, AnAddressIsAskedForWhenFirstNeededAndMayComeLater) {
  constexpr uint32_t kRanks = 4;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  // No peer table at all: each engine knows only itself.
  Counts c(kRanks);  // outlives the job: its QPs count down into it
  Job job;
  std::vector<Peer> addresses;
  for (uint32_t i = 0; i < kRanks; ++i) {
    Rank r;
    r.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 4096);
    auto e = Engine::create(f.provider(i), od_options(f, i, kRanks, 1), counted(r.factory->hook(), c.live[i], c.made[i]));
    ASSERT_TRUE(e) << e.error().message();
    r.engine = std::move(e).value();
    addresses.push_back(Peer{i, r.engine->local_address()});
    ASSERT_TRUE(r.engine->start());
    job.ranks.push_back(std::move(r));
  }
  Engine& zero = *job.ranks[0].engine;
  // Without an address and without a callback, connect says what is missing.
  Status no = zero.connect(1);
  ASSERT_FALSE(no);
  EXPECT_NE(no.message().find("no address for rank 1"), std::string::npos) << no.message();
  EXPECT_EQ(zero.lane_state(1, 0), LaneState::idle);

  std::vector<uint32_t> asked;
  zero.on_address_needed([&](uint32_t peer) { asked.push_back(peer); });
  ASSERT_TRUE(zero.connect(1));
  ASSERT_TRUE(zero.connect(2));
  ASSERT_TRUE(zero.connect(1));  // asked already: no second question
  EXPECT_EQ(asked, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(zero.lane_state(1, 0), LaneState::connecting);
  // Nothing can happen until the transport answers.
  (void)run_until(f, job, [] { return false; }, 200ms);
  EXPECT_EQ(zero.lane_state(1, 0), LaneState::connecting);
  EXPECT_EQ(zero.stats()[Counter::connects_started], 0u);
  // Rank 1's address comes; rank 2's later. The passive sides never learn rank 0's.
  ASSERT_TRUE(zero.add_peer(addresses[1]));
  ASSERT_TRUE(run_until(f, job, [&] { return zero.lane_state(1, 0) == LaneState::ready; }, 30s));
  EXPECT_EQ(zero.lane_state(2, 0), LaneState::connecting);
  ASSERT_TRUE(zero.add_peer(addresses[2]));
  ASSERT_TRUE(run_until(f, job, [&] { return all_done(job); }, 30s));
  expect_exactly(job, 1, {{0, 1}, {0, 2}});
  EXPECT_EQ(asked.size(), 2u);
  // A malformed address is refused, naming the rank.
  Status bad = zero.add_peer(Peer{3, {1, 2, 3}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("rank 3"), std::string::npos) << bad.message();
}

TEST(OnDemand, OnePeerIsDisconnectedAndReconnectedFromEitherSide) {
  constexpr uint32_t kRanks = 3, kLanes = 2;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, kLanes, c);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  Engine& b = *job->ranks[1].engine;
  std::vector<std::string> seen_b;
  uint32_t closed_a = 0, closed_b = 0, disconnected_b = 0;
  a.on_lane_event([&](const LaneEvent& e) { closed_a += e.kind == LaneEvent::Kind::closed; });
  b.on_lane_event([&](const LaneEvent& e) { closed_b += e.kind == LaneEvent::Kind::closed; });
  b.on_steady_event([&](const SteadyEvent& e) { disconnected_b += e.type == prov::CmEventType::disconnected; });
  auto ready_both = [&] {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (a.lane_state(1, l) != LaneState::ready || b.lane_state(0, l) != LaneState::ready) return false;
    return true;
  };
  auto idle_both = [&] {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (a.lane_state(1, l) != LaneState::idle || b.lane_state(0, l) != LaneState::idle) return false;
    return true;
  };
  // Rank 2 stays connected to rank 0 throughout: one peer's disconnect touches nobody else.
  ASSERT_TRUE(a.connect(2));
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return ready_both() && all_done(*job); }, 30s));
  auto first = live_lanes(a);

  ASSERT_TRUE(a.disconnect(1));
  EXPECT_EQ(a.lane_state(1, 0), LaneState::idle);  // at once on the side that asks
  ASSERT_TRUE(run_until(f, *job, [&] { return idle_both(); }, 30s)) << "the peer never saw the disconnect";
  EXPECT_EQ(disconnected_b, kLanes);
  EXPECT_EQ(closed_b, kLanes);
  // The QPs of rank 0's lanes to rank 1 were never taken: handed back at both ends.
  EXPECT_EQ(c.live[1], 0);
  EXPECT_EQ(c.live[0], static_cast<int64_t>(kLanes));  // the lanes to rank 2

  // The other side asks this time.
  ASSERT_TRUE(b.connect(0));
  ASSERT_TRUE(run_until(f, *job, [&] { return ready_both(); }, 30s));
  auto second = live_lanes(a);
  for (uint32_t l = 0; l < kLanes; ++l)
    EXPECT_NE(first.at({1, l}).first, second.at({1, l}).first) << "lane " << l << ": a new QP";
  // And again from rank 0, right after its disconnect: its REQ may overtake the DREQ, which
  // the peer then refuses as a duplicate until it has seen the disconnect (retried).
  ASSERT_TRUE(a.disconnect(1));
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return ready_both(); }, 60s));
  expect_exactly(*job, kLanes, {{0, 1}, {0, 2}});
  EXPECT_EQ(a.lane_state(2, 0), LaneState::ready);
  EXPECT_EQ(closed_a, 2 * kLanes);
  for (const auto& r : job->ranks) EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors().front().describe();
  EXPECT_EQ(c.live_total(), static_cast<int64_t>(2 * 2 * kLanes));
}

// Closing a lane takes back what the transport was not given: the result of a lane never
// handed over is withdrawn (its QP goes back to the factory's owner), the result of one handed
// over (Engine::hand_over, as the C API does for every result) stays a connection. The lane's
// next connection in the same slot starts not handed over.
TEST(OnDemand, ClosingALaneWithdrawsItsResultUnlessItWasHandedOver) {
  constexpr uint32_t kRanks = 2, kLanes = 2;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, kLanes, c);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  Engine& b = *job->ranks[1].engine;
  auto lanes_are = [&](LaneState want) {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (a.lane_state(1, l) != want || b.lane_state(0, l) != want) return false;
    return true;
  };
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return lanes_are(LaneState::ready); }, 30s));
  uint32_t slot[kLanes] = {};
  for (uint32_t i = 0; i < a.results().size(); ++i) slot[a.results()[i].lane] = i;
  ASSERT_NE(slot[0], slot[1]);
  a.hand_over(slot[0]);
  EXPECT_TRUE(a.results()[slot[0]].handed_over);
  EXPECT_FALSE(a.results()[slot[1]].handed_over);

  ASSERT_TRUE(a.disconnect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return lanes_are(LaneState::idle); }, 30s));
  EXPECT_FALSE(a.results()[slot[0]].withdrawn) << "the transport was given lane 0: it stays a connection";
  EXPECT_TRUE(a.results()[slot[1]].withdrawn) << "lane 1 was never given to the transport: taken back";
  EXPECT_EQ(a.connected(), 1u);

  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return lanes_are(LaneState::ready); }, 30s));
  EXPECT_FALSE(a.results()[slot[0]].handed_over) << "lane 0's new connection was not handed over";
  EXPECT_FALSE(a.results()[slot[0]].withdrawn);
  EXPECT_EQ(a.connected(), kLanes);
  for (const auto& r : job->ranks) EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors().front().describe();
}

// A lane connected, closed and connected again holds one result slot: results() does not grow
// with the cycles, every READY of a lane names the same index, and that index shows the new
// connection (its QP held by the engine, QPNs crossed with the peer's). Counters count every
// connection.
TEST(OnDemand, AReconnectedLaneKeepsItsResultSlot) {
  constexpr uint32_t kRanks = 2, kLanes = 2, kCycles = 10;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, kLanes, c);
  ASSERT_TRUE(job) << job.error().message();
  Engine* e[2] = {job->ranks[0].engine.get(), job->ranks[1].engine.get()};
  std::vector<LaneEvent> ready[2];
  for (uint32_t r = 0; r < 2; ++r)
    e[r]->on_lane_event([&ready, r](const LaneEvent& ev) {
      if (ev.kind == LaneEvent::Kind::ready) ready[r].push_back(ev);
    });
  auto lanes_are = [&](LaneState want) {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (e[0]->lane_state(1, l) != want || e[1]->lane_state(0, l) != want) return false;
    return true;
  };
  std::map<uint32_t, uint32_t> slot[2];  // lane -> the index its READYs name
  for (uint32_t cy = 0; cy < kCycles; ++cy) {
    ready[0].clear();
    ready[1].clear();
    ASSERT_TRUE(e[cy % 2]->connect(1 - cy % 2));
    ASSERT_TRUE(run_until(f, *job, [&] { return lanes_are(LaneState::ready); }, 30s)) << "cycle " << cy;
    for (uint32_t r = 0; r < 2; ++r) {
      EXPECT_EQ(e[r]->results().size(), kLanes) << "rank " << r << " cycle " << cy << ": one result per lane";
      ASSERT_EQ(ready[r].size(), kLanes) << "rank " << r << " cycle " << cy;
      for (const LaneEvent& ev : ready[r]) {
        auto [it, first] = slot[r].emplace(ev.lane, ev.index);
        EXPECT_EQ(it->second, ev.index) << "rank " << r << " lane " << ev.lane << " cycle " << cy << ": its slot moved";
        const ConnResult& mine = e[r]->results().at(ev.index);
        const ConnResult& theirs = e[1 - r]->results().at(slot[1 - r].count(ev.lane) ? slot[1 - r][ev.lane] : 0);
        EXPECT_FALSE(mine.withdrawn);
        EXPECT_EQ(mine.lane, ev.lane);
        ASSERT_NE(e[r]->qp(ev.index), nullptr) << "rank " << r << " lane " << ev.lane << " cycle " << cy;
        EXPECT_EQ(e[r]->qp(ev.index)->qpn(), mine.local_qpn) << "the slot shows the new connection";
        if (slot[1 - r].count(ev.lane) != 0) {
          EXPECT_EQ(mine.remote_qpn, theirs.local_qpn) << "rank " << r << " lane " << ev.lane << " cycle " << cy;
        }
      }
    }
    const uint32_t closer = (cy / 2) % 2;
    ASSERT_TRUE(e[closer]->disconnect(1 - closer));
    ASSERT_TRUE(run_until(f, *job, [&] { return lanes_are(LaneState::idle); }, 30s)) << "cycle " << cy;
  }
  for (uint32_t r = 0; r < 2; ++r) {
    const Stats& st = e[r]->stats();
    EXPECT_EQ(st[Counter::established_active] + st[Counter::established_passive], uint64_t{kLanes} * kCycles);
    EXPECT_EQ(st[Counter::lanes_closed], uint64_t{kLanes} * kCycles);
    EXPECT_TRUE(e[r]->errors().empty()) << e[r]->errors().front().describe();
  }
  EXPECT_EQ(c.live_total(), 0) << "every closed lane's QP went back";
}

TEST(OnDemand, APeerThatRestartedConnectsAgain) {
  constexpr uint32_t kRanks = 2;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, 1, c);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return all_done(*job) && a.lane_state(1, 0) == LaneState::ready; }, 30s));
  const uint32_t old_remote = live_lanes(a).at({1, 0}).second;
  // Rank 1 goes away the way a crashed process does (its ids destroyed: its CM disconnects)...
  job->ranks[1].engine.reset();
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(1, 0) == LaneState::idle; }, 60s))
      << "rank 0 never saw its peer go";
  // ...and comes back with a new engine, a new address and new QPs; it asks first.
  auto e = Engine::create(f.provider(1), od_options(f, 1, kRanks, 1), counted(job->ranks[1].factory->hook(), c.live[1], c.made[1]));
  ASSERT_TRUE(e) << e.error().message();
  job->ranks[1].engine = std::move(e).value();
  Engine& b = *job->ranks[1].engine;
  ASSERT_TRUE(b.add_peer(Peer{0, a.local_address()}));
  ASSERT_TRUE(a.add_peer(Peer{1, b.local_address()}));
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(b.connect(0));
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(1, 0) == LaneState::ready && b.lane_state(0, 0) == LaneState::ready; }, 60s));
  expect_exactly(*job, 1, {{0, 1}});
  EXPECT_NE(live_lanes(a).at({1, 0}).second, old_remote);
  for (const auto& r : job->ranks) EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors().front().describe();
}

TEST(OnDemand, TheEagerRingConnectsAtStartWithThePlansRoles) {
  constexpr uint32_t kRanks = 6;
  WIREUP_REQUIRE_ENGINE_FABRIC(f, kRanks);
  Counts c(kRanks);
  auto job = od_job(f, kRanks, 1, c, [](EngineOptions& o) { o.eager_ring = 1; });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_until(f, *job, [&] { return all_done(*job); }, 30s));
  std::set<std::pair<uint32_t, uint32_t>> ring;
  for (uint32_t r = 0; r < kRanks; ++r) ring.insert({std::min(r, (r + 1) % kRanks), std::max(r, (r + 1) % kRanks)});
  expect_exactly(*job, 1, ring);
  EXPECT_EQ(total(*job, Counter::crossed_yielded) + total(*job, Counter::crossed_won), 0u)
      << "the ring's roles are the plan's: nothing crosses";
  // On demand beside it.
  ASSERT_TRUE(job->ranks[0].engine->connect(3));
  ASSERT_TRUE(run_until(f, *job, [&] { return all_done(*job) && job->ranks[3].engine->lane_state(0, 0) == LaneState::ready; }, 30s));
  ring.insert({0, 3});
  expect_exactly(*job, 1, ring);
}

TEST(OnDemand, MisuseIsRefusedWithASentence) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  Counts c(2);
  auto bulk = make_job(f, 2, 1);
  ASSERT_TRUE(bulk) << bulk.error().message();
  Status s = bulk->ranks[0].engine->connect(1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("on_demand"), std::string::npos) << s.message();
  ASSERT_FALSE(bulk->ranks[0].engine->disconnect(1));
  auto job = od_job(f, 2, 1, c);
  ASSERT_TRUE(job) << job.error().message();
  Engine& e = *job->ranks[0].engine;
  Status self = e.connect(0);
  ASSERT_FALSE(self);
  EXPECT_NE(self.message().find("this rank"), std::string::npos) << self.message();
  Status far = e.connect(2);
  ASSERT_FALSE(far);
  EXPECT_NE(far.message().find("nranks"), std::string::npos) << far.message();
  EngineOptions o = od_options(f, 0, 2, 1);
  o.on_demand = false;
  o.eager_ring = 1;
  qp::DefaultQpFactory factory(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto refused = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("eager_ring"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace wireup::etest
