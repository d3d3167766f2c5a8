// The device's own events on the sim (engine_device.cc): COMM_EST when the RTU is lost and the
// active side's data comes first; the device removed in the middle of wireup; ADDR_CHANGE.
// COMM_EST and ADDR_CHANGE are sim only: rxe raises no COMM_EST, and Linux raises ADDR_CHANGE
// only for a bonding failover (tests/vm/device covers removal and async events on rxe).
#include <gtest/gtest.h>

#include <poll.h>

#include <algorithm>
#include <map>

#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::sim::CmMsg;
using prov::sim::MessageRule;
using prov::sim::SimConfig;

// Every RTU from node 0 to node 1 is lost, for good.
SimConfig rtus_lost() {
  SimConfig cfg;
  cfg.seed = 5;
  MessageRule r;
  r.types = prov::sim::msg_bit(CmMsg::rtu);
  r.src_node = 0;
  r.dst_node = 1;
  r.drop = 1;
  cfg.faults.rules.push_back(r);
  return cfg;
}

PairState state_of(const Engine& e, uint32_t peer) {
  for (const Pair& p : e.pairs())
    if (p.peer == peer && p.lane == 0) return p.state();
  return PairState::failed;
}

// Progresses both engines and the fabric in small virtual steps until `stop` or `bound`.
template <class Stop>
bool run(SimEngineFabric& f, Job& job, Nanos bound, Stop stop) {
  const Nanos until = f.fabric().now() + bound;
  while (f.fabric().now() < until) {
    for (auto& r : job.ranks) {
      auto w = r.engine->progress();
      EXPECT_TRUE(w) << w.error().message();
    }
    if (stop()) return true;
    f.fabric().run_for(1ms);
  }
  return false;
}

// The active side (rank 0 initiates to rank 1) is established with every RTU lost: the
// passive QP waits in RTR. Returns once that is so.
void connect_active_only(SimEngineFabric& f, Job& job) {
  ASSERT_TRUE(run(f, job, 5s, [&] { return job.ranks[0].engine->connected() == 1; }));
  ASSERT_EQ(job.ranks[1].engine->connected(), 0u);
  ASSERT_EQ(state_of(*job.ranks[1].engine, 0), PairState::connecting);
}

// One SEND from the active side's QP (the transport starts using its lane). The QP is the
// test's from then on (`qp`, declared inside the fabric's lifetime: destroyed before it).
void send_one(Job& job, std::vector<char>& mem, std::unique_ptr<prov::Mr>& mr, std::unique_ptr<prov::Qp>& qp) {
  Engine& a = *job.ranks[0].engine;
  qp = a.take_qp(1, 0);
  ASSERT_TRUE(qp);
  mem.assign(64, 'x');
  auto m = job.ranks[0].factory->pd(qp->device())->reg_mr(mem.data(), mem.size(), prov::access::local_write);
  ASSERT_TRUE(m) << m.error().message();
  mr = std::move(m).value();
  ASSERT_TRUE(qp->post_send(1, prov::Sge{reinterpret_cast<uint64_t>(mem.data()), 16, mr->lkey()}, true));
}

TEST(CommEst, ActiveSidesDataBeforeTheRtuEstablishesThePassiveSide) {
  SimEngineFabric f(2, rtus_lost());
  auto job = make_job(f, 2, 1, [](EngineOptions& o) { o.rtu_linger = 0s; });
  ASSERT_TRUE(job) << job.error().message();
  std::vector<DeviceEventReport> forwarded;
  job->ranks[1].engine->on_device_report([&](const DeviceEventReport& d) { forwarded.push_back(d); });
  connect_active_only(f, *job);
  std::vector<char> mem;
  std::unique_ptr<prov::Mr> mr;
  std::unique_ptr<prov::Qp> qp;
  send_one(*job, mem, mr, qp);
  const Nanos t0 = f.fabric().now();
  // Well inside the first REP retransmission (6.144 s): only COMM_EST can do it.
  ASSERT_TRUE(run(f, *job, 1s, [&] { return job->ranks[1].engine->connected() == 1; }));
  const Engine& p = *job->ranks[1].engine;
  EXPECT_LT(f.fabric().now() - t0, 100ms);
  EXPECT_EQ(p.stats()[Counter::comm_est_notified], 1u);
  EXPECT_EQ(p.stats()[Counter::device_events], 1u);
  EXPECT_EQ(p.stats()[Counter::rtu_lost_sent], 0u);
  EXPECT_TRUE(forwarded.empty()) << "COMM_EST is the engine's own: not forwarded";
  EXPECT_TRUE(p.errors().empty());
  const ConnResult& r = p.results().at(0);
  EXPECT_EQ(r.peer, 0u);
  ASSERT_NE(p.qp(0), nullptr);
  EXPECT_EQ(p.qp(0)->state(), prov::QpState::rts) << "RTS once the CM said established";
  EXPECT_EQ(r.remote_qpn, job->ranks[0].engine->results().at(0).local_qpn);
  EXPECT_TRUE(p.done());
}

// The control: the same lost RTUs and no data from the active side: the passive side stays in
// RTR, waiting for the CM (its REP retries, then the rtu_lost repair), with no COMM_EST.
TEST(CommEst, WithoutDataThePassiveSideWaitsForTheCm) {
  SimEngineFabric f(2, rtus_lost());
  auto job = make_job(f, 2, 1, [](EngineOptions& o) { o.rtu_linger = 0s; });
  ASSERT_TRUE(job) << job.error().message();
  connect_active_only(f, *job);
  EXPECT_FALSE(run(f, *job, 1s, [&] { return job->ranks[1].engine->connected() == 1; }));
  const Engine& p = *job->ranks[1].engine;
  EXPECT_EQ(p.stats()[Counter::comm_est_notified], 0u);
  EXPECT_EQ(p.stats()[Counter::device_events], 0u);
  EXPECT_EQ(state_of(p, 0), PairState::connecting);
}

// A COMM_EST of a QP the engine does not know (the transport's own) goes to the transport.
TEST(CommEst, AnotherQpsEventIsForwarded) {
  SimEngineFabric f(2, SimConfig{});
  auto job = make_job(f, 2, 1);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<DeviceEventReport> forwarded;
  job->ranks[1].engine->on_device_report([&](const DeviceEventReport& d) { forwarded.push_back(d); });
  ASSERT_TRUE(run(f, *job, 5s, [&] { return job->ranks[1].engine->connected() == 1; }));
  ASSERT_EQ(job->ranks[1].engine->devices().size(), 1u);
  f.fabric().raise_device_event(1, 0, prov::DeviceEventType::comm_est, 0xabcdef);
  f.fabric().raise_device_event(1, 0, prov::DeviceEventType::qp_fatal, job->ranks[1].engine->results().at(0).local_qpn);
  ASSERT_TRUE(run(f, *job, 10ms, [&] { return forwarded.size() == 2; }));
  EXPECT_EQ(forwarded[0].event.type, prov::DeviceEventType::comm_est);
  EXPECT_FALSE(forwarded[0].known);
  EXPECT_EQ(forwarded[0].event.qpn, 0xabcdefu);
  EXPECT_EQ(forwarded[1].event.type, prov::DeviceEventType::qp_fatal);
  EXPECT_TRUE(forwarded[1].known);
  EXPECT_EQ(forwarded[1].peer, 0u);
  EXPECT_EQ(job->ranks[1].engine->stats()[Counter::comm_est_notified], 0u);
}

// Rank 2's device is removed while the job wires up: it reports each of its pairs exactly once
// (connected, taken back, or given up with cause device_removed), holds no id, and has nothing
// left to do; the others connect among themselves and report rank 2's lanes.
TEST(DeviceRemoval, DuringWireupEveryPairOnceNoIdLeftNoSpin) {
  SimConfig cfg;
  cfg.seed = 9;
  cfg.latency = prov::sim::LatencyModel::rxe_vm();
  SimEngineFabric f(6, cfg);
  auto job = make_job(f, 6, 2, [](EngineOptions& o) {
    o.max_attempts = 3;
    o.wireup_timeout = 60s;
  });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run(f, *job, 5s, [&] { return job->ranks[2].engine->connected() >= 1; }));
  ASSERT_LT(job->ranks[2].engine->connected(), 10u) << "removal must come in the middle of wireup";
  std::vector<SteadyEvent> steady;
  job->ranks[2].engine->on_steady_event([&](const SteadyEvent& e) { steady.push_back(e); });
  f.fabric().remove_device(2, 0, f.fabric().now());
  auto r = drive(f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  const Engine& e = *job->ranks[2].engine;
  EXPECT_TRUE(e.device_lost());
  EXPECT_EQ(e.live_ids(), 0u);
  EXPECT_FALSE(e.setup_channel_open());
  EXPECT_EQ(e.next_wakeup(), Nanos::max());
  std::map<std::pair<uint32_t, uint32_t>, int> settled;
  for (const ConnResult& c : e.results()) {
    ++settled[{c.peer, c.lane}];
    EXPECT_TRUE(c.withdrawn) << "peer " << c.peer << ": its QP was never taken: taken back";
  }
  for (const PeerError& pe : e.errors()) {
    ++settled[{pe.peer, pe.lane}];
    EXPECT_EQ(pe.cause, PeerError::Cause::device_removed) << pe.describe();
  }
  EXPECT_EQ(settled.size(), 10u);
  for (const auto& [k, n] : settled) EXPECT_EQ(n, 1) << "peer " << k.first << " lane " << k.second;
  size_t listener = 0, conns = 0;
  for (const SteadyEvent& s : steady) {
    if (s.type != prov::CmEventType::device_removal) continue;
    (s.scope == SteadyEvent::Scope::listener ? listener : conns)++;
  }
  EXPECT_EQ(listener, 1u);
  EXPECT_EQ(conns, e.results().size());
  // The others: everything among themselves, rank 2's lanes reported.
  for (uint32_t rk = 0; rk < 6; ++rk) {
    if (rk == 2) continue;
    const Engine& o = *job->ranks[rk].engine;
    size_t to_others = 0;
    for (const ConnResult& c : o.results()) to_others += !c.withdrawn && c.peer != 2;
    EXPECT_EQ(to_others, 8u) << "rank " << rk;
    for (const PeerError& pe : o.errors()) EXPECT_EQ(pe.peer, 2u) << "rank " << rk << ": " << pe.describe();
  }
}

// A bonding failover under rank 1's device (sim only: Linux raises ADDR_CHANGE for
// NETDEV_BONDING_FAILOVER alone, and the VM has no bond): each established id and the
// lingering listener report it once, counted; nothing is torn down.
TEST(AddrChange, ReportedForEveryConnectionAndTheListener) {
  SimEngineFabric f(3, SimConfig{});
  auto job = make_job(f, 3, 2);  // the default linger keeps rank 1's listener open
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run(f, *job, 5s, [&] {
    for (auto& r : job->ranks)
      if (!r.engine->done()) return false;
    return true;
  }));
  std::vector<SteadyEvent> seen;
  job->ranks[1].engine->on_steady_event([&](const SteadyEvent& e) { seen.push_back(e); });
  const bool listening = job->ranks[1].engine->setup_channel_open();
  f.fabric().fail_over(1, 0);
  run(f, *job, 10ms, [] { return false; });
  size_t conns = 0, listener = 0;
  for (const SteadyEvent& e : seen) {
    ASSERT_EQ(e.type, prov::CmEventType::addr_change);
    (e.scope == SteadyEvent::Scope::listener ? listener : conns)++;
  }
  EXPECT_EQ(conns, 4u);
  EXPECT_EQ(listener, listening ? 1u : 0u);
  const Engine& e = *job->ranks[1].engine;
  EXPECT_EQ(e.stats()[Counter::addr_changes], conns + listener);
  EXPECT_EQ(e.connected(), 4u) << "an address change tears nothing down";
  EXPECT_FALSE(e.device_lost());
}

// --- who reads the device's async events (EngineOptions::async_events) ---

// Transport mode: the engines read nothing of the device; the COMM_EST the SEND raised waits
// for the transport, which reads it (the sim's read_raised: its ibv_get_async_event) and
// posts it; the passive side is then established as in library mode.
TEST(AsyncOwner, TransportModeCommEstIsTheTransportsToHandOver) {
  SimEngineFabric f(2, rtus_lost());
  auto job = make_job(f, 2, 1, [](EngineOptions& o) {
    o.rtu_linger = 0s;
    o.async_events = prov::AsyncOwner::transport;
  });
  ASSERT_TRUE(job) << job.error().message();
  std::vector<DeviceEventReport> forwarded;
  job->ranks[1].engine->on_device_report([&](const DeviceEventReport& d) { forwarded.push_back(d); });
  ASSERT_EQ(job->ranks[1].engine->devices().size(), 1u);
  prov::Device& dev = *job->ranks[1].engine->devices().front();
  EXPECT_EQ(dev.async_owner(), prov::AsyncOwner::transport);
  connect_active_only(f, *job);
  std::vector<char> mem;
  std::unique_ptr<prov::Mr> mr;
  std::unique_ptr<prov::Qp> qp;
  send_one(*job, mem, mr, qp);
  EXPECT_FALSE(run(f, *job, 200ms, [&] { return job->ranks[1].engine->connected() == 1; }));
  ASSERT_EQ(f.fabric().raised_pending(1, 0), 1u) << "the engine read an event the transport owns";
  EXPECT_EQ(job->ranks[1].engine->stats()[Counter::device_events], 0u);
  auto ev = f.fabric().read_raised(1, 0);
  ASSERT_TRUE(ev) << ev.error().message();
  ASSERT_EQ(ev->type, prov::DeviceEventType::comm_est);
  dev.post_async_event(*ev);
  EXPECT_EQ(dev.posted_pending(), 1u);
  EXPECT_TRUE(dev.async_pending());
  ASSERT_TRUE(run(f, *job, 100ms, [&] { return job->ranks[1].engine->connected() == 1; }));
  const Engine& p = *job->ranks[1].engine;
  EXPECT_EQ(p.stats()[Counter::comm_est_notified], 1u);
  EXPECT_EQ(p.stats()[Counter::device_events], 1u);
  EXPECT_EQ(dev.posted_pending(), 0u);
  EXPECT_TRUE(forwarded.empty());
  EXPECT_TRUE(p.errors().empty());
}

// The fd the engine offers the transport's loop in transport mode is the inbox's, readable
// exactly while a posted event waits; in library mode it is the device's own.
TEST(AsyncOwner, TheEnginesFdIsTheInboxInTransportMode) {
  SimEngineFabric f(2, SimConfig{});
  auto job = make_job(f, 2, 1, [](EngineOptions& o) { o.async_events = prov::AsyncOwner::transport; });
  ASSERT_TRUE(job) << job.error().message();
  prov::Device& dev = *job->ranks[0].engine->devices().front();
  const int fd = dev.async_fd();
  ASSERT_GE(fd, 0);
  auto fds = job->ranks[0].engine->fds();
  EXPECT_NE(std::find(fds.begin(), fds.end(), fd), fds.end());
  auto readable = [fd] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  };
  EXPECT_FALSE(readable());
  f.fabric().raise_device_event(0, 0, prov::DeviceEventType::port_err);
  EXPECT_FALSE(readable()) << "a raised event is the transport's: the inbox stays empty";
  prov::DeviceEvent e;
  e.type = prov::DeviceEventType::port_err;
  e.port = 1;
  dev.post_async_event(e);
  EXPECT_TRUE(readable());
  auto got = dev.get_async_event();
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, prov::DeviceEventType::port_err);
  EXPECT_EQ(got->device, dev.info().name) << "the device names itself on a posted copy";
  EXPECT_FALSE(readable());
  EXPECT_EQ(f.fabric().raised_pending(0, 0), 1u);
}

// Every engine on one device must agree on the owner; the claim goes with the last of them.
TEST(AsyncOwner, OneDeviceOneOwner) {
  SimEngineFabric f(1, SimConfig{});
  auto devs = f.fabric().provider(0).devices();
  ASSERT_TRUE(devs && !devs->empty());
  prov::Device& d = *devs->front();
  EXPECT_FALSE(d.async_owner().has_value());
  EXPECT_EQ(d.async_fd(), -1) << "nobody claimed the events: nothing reads them";
  f.fabric().raise_device_event(0, 0, prov::DeviceEventType::port_err);
  EXPECT_FALSE(d.get_async_event()) << "an unclaimed device is read by nobody";
  ASSERT_TRUE(d.claim_async(prov::AsyncOwner::library));
  ASSERT_TRUE(d.claim_async(prov::AsyncOwner::library));
  Status s = d.claim_async(prov::AsyncOwner::transport);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("device.async_events"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(d.info().name), std::string::npos) << s.message();
  auto got = d.get_async_event();
  ASSERT_TRUE(got) << "library mode reads the device's own events";
  d.release_async(prov::AsyncOwner::library);
  EXPECT_EQ(d.async_owner(), prov::AsyncOwner::library);
  d.release_async(prov::AsyncOwner::library);
  EXPECT_FALSE(d.async_owner().has_value());
  EXPECT_TRUE(d.claim_async(prov::AsyncOwner::transport));
  d.release_async(prov::AsyncOwner::transport);
}

// Library mode: forwarded events carry their object: the QPN, the port, or the CQ/SRQ handle.
TEST(AsyncOwner, LibraryModeForwardedEventsNameTheirObject) {
  SimEngineFabric f(2, SimConfig{});
  auto job = make_job(f, 2, 1);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<DeviceEventReport> forwarded;
  job->ranks[1].engine->on_device_report([&](const DeviceEventReport& d) { forwarded.push_back(d); });
  ASSERT_TRUE(run(f, *job, 5s, [&] { return job->ranks[1].engine->connected() == 1; }));
  int srq = 0, cq = 0;
  f.fabric().raise_device_event(1, 0, prov::DeviceEventType::srq_limit_reached, 0, &srq);
  f.fabric().raise_device_event(1, 0, prov::DeviceEventType::cq_err, 0, &cq);
  f.fabric().raise_device_event(1, 0, prov::DeviceEventType::port_active);
  ASSERT_TRUE(run(f, *job, 10ms, [&] { return forwarded.size() == 3; }));
  EXPECT_EQ(prov::scope_of(forwarded[0].event.type), prov::DeviceEventScope::srq);
  EXPECT_EQ(forwarded[0].event.object, &srq);
  EXPECT_EQ(prov::scope_of(forwarded[1].event.type), prov::DeviceEventScope::cq);
  EXPECT_EQ(forwarded[1].event.object, &cq);
  EXPECT_EQ(prov::scope_of(forwarded[2].event.type), prov::DeviceEventScope::port);
  EXPECT_EQ(forwarded[2].event.port, 1);
  EXPECT_EQ(forwarded[2].event.object, nullptr);
  EXPECT_NE(forwarded[0].event.describe().find("srq 0x"), std::string::npos) << forwarded[0].event.describe();
  EXPECT_EQ(f.fabric().raised_pending(1, 0), 0u);
}

}  // namespace
}  // namespace wireup::etest
