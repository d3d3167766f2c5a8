// The engine's pure parts, each alone: retry policy, admission, request gate (the stranger
// table), repair decisions, pair table, stranger log, wire builders, phase spans.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <string>

#include "wireup/admission.h"
#include "wireup/fifo.h"
#include "wireup/pair_table.h"
#include "wireup/peer_table.h"
#include "wireup/records.h"
#include "wireup/repair.h"
#include "wireup/request_gate.h"
#include "wireup/retry_policy.h"
#include "wireup/stats.h"
#include "wireup/stranger_log.h"
#include "wireup/wire.h"

namespace wireup {
namespace {

using namespace std::chrono_literals;

// A Wire with a fixed nonce base, so that tests can build exactly what an engine sent.
Wire make_wire(uint64_t key, uint32_t self, uint64_t nonce_base = 1) {
  auto w = Wire::create(key, self, nonce_base);
  EXPECT_TRUE(w) << w.error().message();
  return *w;
}

cm::Failure rejected(int reason, std::span<const uint8_t> pd = {}) {
  cm::Failure f;
  f.kind = cm::FailKind::rejected;
  f.status = reason;
  f.private_data.assign(pd.begin(), pd.end());
  return f;
}
cm::Failure failed(cm::FailKind k) {
  cm::Failure f;
  f.kind = k;
  return f;
}

// --- retry policy ------------------------------------------------------------------------------

TEST(RetryPolicy, WhatIsWorthAnotherAttempt) {
  // As the engine hands failures over (Engine::failure_of): a REJ's private data is there
  // only if it authenticated as the answer to our request.
  const Wire w = make_wire(7, 1);
  EXPECT_TRUE(retryable(failed(cm::FailKind::unreachable)));
  EXPECT_TRUE(retryable(failed(cm::FailKind::address_error)));
  EXPECT_TRUE(retryable(failed(cm::FailKind::route_error)));
  EXPECT_TRUE(retryable(failed(cm::FailKind::connect_error)));
  EXPECT_TRUE(retryable(rejected(prov::reject_reason::no_listener)));
  EXPECT_TRUE(retryable(rejected(prov::reject_reason::stale_conn))) << "the peer restarted: try a fresh QP";
  EXPECT_TRUE(retryable(rejected(prov::reject_reason::consumer)))
      << "a REJ that is not ours, or whose reason did not authenticate";
  EXPECT_TRUE(retryable(rejected(28, w.reject(RejectCode::local_failure, 0, 0, 1, 5))));
  EXPECT_TRUE(retryable(rejected(28, w.reject(RejectCode::stale_attempt, 0, 0, 1, 5))));
  EXPECT_FALSE(retryable(rejected(28, w.reject(RejectCode::wrong_role, 0, 0, 1, 5))));
  EXPECT_FALSE(retryable(rejected(28, w.reject(RejectCode::unknown_rank, 0, 0, 1, 5))));
  EXPECT_FALSE(retryable(rejected(prov::reject_reason::vendor_option)));
  EXPECT_FALSE(retryable(failed(cm::FailKind::ece_rejected)));
  EXPECT_FALSE(retryable(failed(cm::FailKind::local_error)));
  // The network gone from under a local call (a port's link down): transient.
  for (int err : {ENETUNREACH, ENETDOWN}) {
    cm::Failure f = failed(cm::FailKind::local_error);
    f.error = Error::from_errno("rdma_resolve_addr", err);
    EXPECT_TRUE(retryable(f)) << err;
  }
  // EINVAL from rdma_resolve_route / rdma_connect / rdma_establish: the kernel moved the id (a device removal
  // under way, its DEVICE_REMOVAL not read yet). Not from other calls, nor our own checks.
  for (const char* call : {"rdma_resolve_route", "rdma_connect", "rdma_establish"}) {
    cm::Failure f = failed(cm::FailKind::local_error);
    f.error = Error::from_errno(call, EINVAL);
    EXPECT_TRUE(retryable(f)) << call;
    f.error = Error::make(ErrorCode::invalid_argument, call, "private data over 56 bytes");
    EXPECT_FALSE(retryable(f)) << call << " refused by our own check (errno 0)";
  }
  for (const char* call : {"ibv_modify_qp", "rdma_migrate_id", "rdma_accept"}) {
    cm::Failure f = failed(cm::FailKind::local_error);
    f.error = Error::from_errno(call, EINVAL);
    EXPECT_FALSE(retryable(f)) << call;
  }
  cm::Failure nomem = failed(cm::FailKind::local_error);
  nomem.error = Error::from_errno("ibv_create_qp", ENOMEM);
  EXPECT_FALSE(retryable(nomem));
  EXPECT_FALSE(retryable(failed(cm::FailKind::device_removal)));
}

// A notice (abandon, rtu_lost) is sent again only if it did not reach the peer's engine or
// found it not ready; REJ 10 is the peer CM holding another QP-less REQ from our device.
TEST(RetryPolicy, WhatMakesANoticeWorthSendingAgain) {
  const Wire w = make_wire(9, 1);
  EXPECT_TRUE(notice_undelivered(failed(cm::FailKind::unreachable)));
  EXPECT_TRUE(notice_undelivered(failed(cm::FailKind::connect_error)));
  EXPECT_TRUE(notice_undelivered(rejected(prov::reject_reason::no_listener)));
  EXPECT_TRUE(notice_undelivered(rejected(prov::reject_reason::stale_conn))) << "a QP-less REQ collided at the CM";
  EXPECT_TRUE(notice_undelivered(rejected(28, w.reject(RejectCode::local_failure, 0, 0, 1, 5)))) << "not started yet";
  EXPECT_FALSE(notice_undelivered(rejected(28, w.reject(RejectCode::abandon_noted, 0, 0, 1, 5))));
  EXPECT_FALSE(notice_undelivered(rejected(28, w.refuse_stranger(RejectCode::wrong_role))));
  EXPECT_FALSE(notice_undelivered(rejected(prov::reject_reason::consumer))) << "someone else's listener";
  EXPECT_FALSE(notice_undelivered(failed(cm::FailKind::address_error)));
  EXPECT_FALSE(notice_undelivered(failed(cm::FailKind::local_error)));
}

TEST(RetryPolicy, BackoffDoublesToItsCapWithJitterWithinBounds) {
  const RetryPolicy p{5, 50ms, 300ms, 0.25};
  EXPECT_EQ(backoff(p, 1, 0), 50ms);
  EXPECT_EQ(backoff(p, 2, 0), 100ms);
  EXPECT_EQ(backoff(p, 3, 0), 200ms);
  EXPECT_EQ(backoff(p, 4, 0), 300ms);
  EXPECT_EQ(backoff(p, 40, 0), 300ms);
  EXPECT_EQ(backoff(p, 1, 1), Nanos(62'500'000));
  EXPECT_EQ(backoff(p, 1, -1), Nanos(37'500'000));
  EXPECT_EQ(backoff(p, 1, 9), Nanos(62'500'000)) << "draws are clamped to [-1, 1]";
}

TEST(RetryPolicy, DecideGivesUpOnTheLastAttemptAndOnFinalFailures) {
  const RetryPolicy p{3, 50ms, 5s, 0};
  const Nanos now = 10s;
  auto d = decide(p, failed(cm::FailKind::unreachable), 1, now, 0);
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.at, now + 50ms);
  EXPECT_TRUE(decide(p, failed(cm::FailKind::unreachable), 2, now, 0).retry);
  EXPECT_FALSE(decide(p, failed(cm::FailKind::unreachable), 3, now, 0).retry);
  EXPECT_FALSE(decide(p, rejected(prov::reject_reason::vendor_option), 1, now, 0).retry);
}

TEST(RetryScheduler, PopsInDueOrder) {
  RetryScheduler s(RetryPolicy{5, 10ms, 1s, 0}, 1);
  EXPECT_EQ(s.next_due(), Nanos::max());
  s.schedule(7, 2, 0s);  // due 20 ms
  s.schedule(8, 1, 0s);  // due 10 ms
  EXPECT_EQ(s.due_after(1, 0s), 10ms) << "a notice's delay, queued nowhere";
  EXPECT_EQ(s.next_due(), 10ms);
  EXPECT_FALSE(s.pop_due(5ms));
  EXPECT_EQ(*s.pop_due(30ms), 8u);
  EXPECT_EQ(*s.pop_due(30ms), 7u);
  EXPECT_FALSE(s.pop_due(30ms));
  EXPECT_FALSE(s.after_failure(1, failed(cm::FailKind::unreachable), 5, 0s).retry);
  EXPECT_EQ(s.next_due(), Nanos::max()) << "a give-up schedules nothing";
}

// Notices take their jitter from the connects' draws: one sequence, whichever asks.
TEST(RetryScheduler, NoticeDelaysAndConnectsShareOneJitterSequence) {
  const RetryPolicy p{5, 100ms, 10s, 0.5};
  RetryScheduler a(p, 42), b(p, 42);
  const Nanos a1 = a.due_after(1, 0s);
  const Nanos a2 = a.schedule(3, 1, 0s);
  EXPECT_EQ(b.schedule(3, 1, 0s), a1);
  EXPECT_EQ(b.due_after(1, 0s), a2);
  EXPECT_NE(a1, a2) << "two draws";
}

// --- admission ---------------------------------------------------------------------------------

TEST(Admission, ConnectWindow) {
  Admission a(2, 1);
  EXPECT_TRUE(a.try_acquire_connect(0));
  EXPECT_TRUE(a.try_acquire_connect(0));
  EXPECT_FALSE(a.try_acquire_connect(0));
  a.release_connect(0);
  EXPECT_TRUE(a.connect_room(0));
  EXPECT_EQ(a.connects_in_flight(0), 1u);
}

TEST(Admission, QpWindowsArePerRoleAndWaitersKeepTheirOrder) {
  Admission a(8, 1);
  a.wait_for_qp(0, cm::Role::active, 11);
  a.wait_for_qp(0, cm::Role::active, 12);
  a.wait_for_qp(0, cm::Role::passive, 21);
  EXPECT_TRUE(a.qp_grant_ready());
  uint64_t k = 0;
  ASSERT_TRUE(a.next_waiter(0, cm::Role::active, &k));
  EXPECT_EQ(k, 11u);
  EXPECT_TRUE(a.try_acquire_qp(0, cm::Role::active));
  EXPECT_FALSE(a.next_waiter(0, cm::Role::active, &k)) << "the active window is full";
  // A full active window never blocks the passive side: that is what breaks the deadlock of
  // two ranks whose windows filled with their own connects.
  ASSERT_TRUE(a.next_waiter(0, cm::Role::passive, &k));
  EXPECT_EQ(k, 21u);
  EXPECT_TRUE(a.try_acquire_qp(0, cm::Role::passive));
  a.release_qp(0, cm::Role::active);
  ASSERT_TRUE(a.next_waiter(0, cm::Role::active, &k));
  EXPECT_EQ(k, 12u);
  a.drop_waiters();
  EXPECT_FALSE(a.qp_grant_ready());
}

// Each rail is its own HCA and its own listener at the peer: one rail's full windows leave
// the other's untouched, and the peaks are kept per rail and over the rails together.
TEST(Admission, EachRailHasItsOwnWindows) {
  Admission a(1, 1, 2);
  ASSERT_EQ(a.rails(), 2u);
  EXPECT_TRUE(a.try_acquire_connect(0));
  EXPECT_FALSE(a.connect_room(0));
  EXPECT_TRUE(a.connect_room(1)) << "rail 0's full connect window holds back rail 1";
  EXPECT_TRUE(a.try_acquire_connect(1));
  EXPECT_FALSE(a.try_acquire_connect(1));
  EXPECT_EQ(a.connects_in_flight(0), 1u);
  EXPECT_EQ(a.connects_in_flight(1), 1u);

  a.wait_for_qp(0, cm::Role::active, 10);
  a.wait_for_qp(0, cm::Role::active, 11);
  a.wait_for_qp(1, cm::Role::active, 20);
  uint64_t k = 0;
  ASSERT_TRUE(a.next_waiter(0, cm::Role::active, &k));
  EXPECT_EQ(k, 10u);
  EXPECT_TRUE(a.try_acquire_qp(0, cm::Role::active));
  EXPECT_FALSE(a.next_waiter(0, cm::Role::active, &k)) << "rail 0's QP window is full";
  EXPECT_TRUE(a.qp_grant_ready()) << "rail 1 has a waiter and a free place";
  ASSERT_TRUE(a.next_waiter(1, cm::Role::active, &k));
  EXPECT_EQ(k, 20u);
  EXPECT_TRUE(a.try_acquire_qp(1, cm::Role::active));
  EXPECT_FALSE(a.qp_grant_ready()) << "key 11 waits for rail 0's place";

  EXPECT_EQ(a.peaks(0).connects, 1u);
  EXPECT_EQ(a.peaks(1).connects, 1u);
  EXPECT_EQ(a.peaks_total().connects, 2u);
  EXPECT_EQ(a.peaks(0).qps[static_cast<int>(cm::Role::active)], 1u);
  EXPECT_EQ(a.peaks_total().qps[static_cast<int>(cm::Role::active)], 2u);
  // A place goes back to its own rail: rail 1's release frees nothing on rail 0.
  a.release_qp(1, cm::Role::active);
  EXPECT_FALSE(a.next_waiter(0, cm::Role::active, &k));
  a.release_qp(0, cm::Role::active);
  ASSERT_TRUE(a.next_waiter(0, cm::Role::active, &k));
  EXPECT_EQ(k, 11u);
  a.release_connect(1);
  a.release_connect(0);
  EXPECT_EQ(a.peaks_total().connects, 2u) << "a peak stays";
}

// A pair due while its rail's connect window is full waits for that rail only, ahead of
// nothing on the other; a lost rail hands back every key waiting on it, its queues empty.
TEST(Admission, ConnectWaitersPerRailAndALostRailsWaitersAreHandedBack) {
  Admission a(1, 1, 2);
  ASSERT_TRUE(a.try_acquire_connect(1));
  a.wait_for_connect(1, 7);
  a.wait_for_connect(1, 8);
  EXPECT_FALSE(a.connect_ready()) << "rail 1 is full";
  uint64_t k = 0;
  EXPECT_FALSE(a.next_connect_waiter(1, &k));
  EXPECT_FALSE(a.next_connect_waiter(0, &k)) << "rail 1's waiters are not rail 0's";
  a.release_connect(1);
  EXPECT_TRUE(a.connect_ready());
  ASSERT_TRUE(a.next_connect_waiter(1, &k));
  EXPECT_EQ(k, 7u);
  a.wait_for_qp(1, cm::Role::passive, 30);
  a.wait_for_qp(1, cm::Role::active, 31);
  const std::vector<uint64_t> moved = a.take_waiters(1);
  EXPECT_EQ(moved, (std::vector<uint64_t>{8, 31, 30}));
  EXPECT_FALSE(a.connect_ready());
  EXPECT_FALSE(a.qp_grant_ready());
  EXPECT_TRUE(a.take_waiters(1).empty());
}

// --- the request gate: every stranger, one row ---------------------------------------------------

struct GateRow {
  const char* what;
  std::function<void(WireHeader&)> edit;
  RejectCode want;  // none: admitted
  Admit admit;
};

TEST(RequestGate, StrangerTable) {
  // Rank 1 of 4, 2 lanes. plan::initiates: 0 -> 1, 1 -> 2; between 1 and 3 (distance 2 in 4)
  // the lower rank (1) initiates.
  PeerTable peers;
  peers.assign({{0, prov::SockAddr::ipv4(0x0a000001, 1)},
                {2, prov::SockAddr::ipv4(0x0a000002, 1)},
                {3, prov::SockAddr::ipv4(0x0a000003, 1)}});
  const Wire ours = make_wire(0x1234, 1);
  const Wire theirs = make_wire(0x1234, 0);
  const GateContext ctx{&ours, 1, 4, 2, &peers, true, true};
  auto base = [] {
    WireHeader h;
    h.kind = WireKind::request;
    h.src_rank = 0;
    h.dst_rank = 1;
    h.lane = 1;
    h.attempt = 1;
    return h;
  };
  const std::vector<GateRow> rows = {
      {"a planned peer's request", [](WireHeader&) {}, RejectCode::none, Admit::connect},
      {"for another rank", [](WireHeader& h) { h.dst_rank = 2; }, RejectCode::wrong_destination, Admit::refuse},
      {"a rank beyond the job", [](WireHeader& h) { h.src_rank = 40; }, RejectCode::unknown_rank, Admit::refuse},
      {"ourselves", [](WireHeader& h) { h.src_rank = 1; }, RejectCode::unknown_rank, Admit::refuse},
      {"a lane beyond the plan", [](WireHeader& h) { h.lane = 2; }, RejectCode::bad_lane, Admit::refuse},
      {"a peer we initiate to", [](WireHeader& h) { h.src_rank = 2; }, RejectCode::wrong_role, Admit::refuse},
      {"a REP as a request", [](WireHeader& h) { h.kind = WireKind::accept; }, RejectCode::bad_magic, Admit::refuse},
      {"a REJ as a request", [](WireHeader& h) { h.kind = WireKind::reject; h.reason = RejectCode::duplicate; },
       RejectCode::bad_magic, Admit::refuse},
      {"a notice from a peer we initiate to", [](WireHeader& h) { h.kind = WireKind::rtu_lost; h.src_rank = 2; },
       RejectCode::none, Admit::rtu_notice},
      {"a notice from a peer that initiates to us", [](WireHeader& h) { h.kind = WireKind::rtu_lost; },
       RejectCode::wrong_role, Admit::refuse},
      {"an abandon from a peer that initiates to us", [](WireHeader& h) { h.kind = WireKind::abandon; },
       RejectCode::none, Admit::abandon},
      {"an abandon from a peer we initiate to", [](WireHeader& h) { h.kind = WireKind::abandon; h.src_rank = 2; },
       RejectCode::wrong_role, Admit::refuse},
  };
  for (const GateRow& r : rows) {
    WireHeader h = base();
    r.edit(h);
    const GateVerdict v = check_request(ctx, theirs.seal(h));
    EXPECT_EQ(v.admit, r.admit) << r.what;
    EXPECT_TRUE(v.authentic) << r.what;
    EXPECT_EQ(v.code, r.want) << r.what << ": " << v.why;
    if (r.want != RejectCode::none) {
      EXPECT_FALSE(v.why.empty()) << r.what;
    }
  }
  // Bytes that are not a wireup header at all.
  const std::vector<uint8_t> junk(56, 0xab);
  EXPECT_EQ(check_request(ctx, junk).code, RejectCode::bad_magic);
  EXPECT_EQ(check_request(ctx, {}).code, RejectCode::bad_magic);
  auto b = theirs.seal(base());
  b[4] = 9;  // version
  EXPECT_EQ(check_request(ctx, b).code, RejectCode::bad_version);
  // Another job's key, no tag at all: refused before anything else is looked at.
  const Wire other = make_wire(0x9999, 0);
  for (const auto& bytes : {other.seal(base()), encode(base())}) {
    const GateVerdict v = check_request(ctx, bytes);
    EXPECT_EQ(v.code, RejectCode::wrong_job_key) << v.why;
    EXPECT_FALSE(v.authentic);
    EXPECT_TRUE(v.stranger());
  }
  // A peer quicker than we are: it asks before our start(). Transient, not a stranger.
  GateContext early = ctx;
  early.started = early.accepting = false;
  const GateVerdict soon = check_request(early, theirs.seal(base()));
  EXPECT_EQ(soon.code, RejectCode::local_failure) << soon.why;
  EXPECT_FALSE(soon.stranger());
  // Known peers asking while we no longer wire up.
  GateContext closed = ctx;
  closed.accepting = false;
  const GateVerdict late = check_request(closed, theirs.seal(base()));
  EXPECT_EQ(late.code, RejectCode::shutting_down);
  EXPECT_FALSE(late.stranger()) << "a planned peer that came late is not a stranger";
  EXPECT_TRUE(check_request(ctx, junk).stranger());
}

TEST(RequestGate, PairStateTable) {
  WireHeader h;
  h.attempt = 3;
  GateVerdict v;
  v.admit = Admit::connect;
  v.header = h;
  EXPECT_EQ(check_pair(v, PairState::waiting, 2).admit, Admit::connect);
  EXPECT_EQ(check_pair(v, PairState::connecting, 2).admit, Admit::connect) << "a newer attempt supersedes";
  EXPECT_EQ(check_pair(v, PairState::probing, 2).admit, Admit::connect) << "a newer attempt answers our notice";
  EXPECT_EQ(check_pair(v, PairState::waiting, 3).code, RejectCode::stale_attempt);
  EXPECT_EQ(check_pair(v, PairState::connecting, 7).code, RejectCode::stale_attempt);
  EXPECT_EQ(check_pair(v, PairState::established, 2).code, RejectCode::duplicate);
  EXPECT_EQ(check_pair(v, PairState::failed, 2).code, RejectCode::shutting_down);
  v.header.attempt = 0;
  EXPECT_EQ(check_pair(v, PairState::waiting, 0).code, RejectCode::stale_attempt) << "attempt 0 never exists";
}

// --- the repair decisions -------------------------------------------------------------------------

TEST(Repair, ActiveSideAnswers) {
  using repair::Action;
  auto ans = [](PairState s, uint32_t attempt, bool wiring, bool can_take_back, uint32_t notice_attempt) {
    return repair::answer(repair::ActiveView{s, attempt, 4, wiring, can_take_back}, notice_attempt);
  };
  EXPECT_EQ(ans(PairState::failed, 2, true, false, 2).code, RejectCode::repair_refused);
  auto a = ans(PairState::connecting, 2, true, false, 2);
  EXPECT_EQ(a.code, RejectCode::repair_pending);
  EXPECT_EQ(a.action, Action::abandon_and_retry);
  EXPECT_EQ(ans(PairState::connecting, 4, true, false, 4).action, Action::abandon_and_give_up);
  EXPECT_EQ(ans(PairState::connecting, 3, true, false, 2).action, Action::none) << "an older attempt's notice";
  EXPECT_EQ(ans(PairState::established, 3, true, true, 2).code, RejectCode::repair_pending);
  a = ans(PairState::established, 2, true, true, 2);
  EXPECT_EQ(a.code, RejectCode::repair_accepted);
  EXPECT_EQ(a.action, Action::tear_down_and_retry);
  EXPECT_EQ(ans(PairState::established, 4, true, true, 4).action, Action::tear_down_and_give_up);
  a = ans(PairState::established, 2, false, true, 2);
  EXPECT_EQ(a.code, RejectCode::repair_refused);
  EXPECT_EQ(a.action, Action::report_handed_over) << "wireup over: the lane is the transport's";
  EXPECT_EQ(ans(PairState::established, 2, true, false, 2).action, Action::report_handed_over)
      << "the transport took the QP, or it is kept (handed over through the C API)";
  EXPECT_EQ(ans(PairState::established, 4, true, false, 4).action, Action::report_handed_over)
      << "handed over and no attempts left: still reported, never torn down";
}

TEST(Repair, PassiveSideReadsTheAnswer) {
  const Wire w = make_wire(7, 0);
  using repair::Outcome;
  using C = PeerError::Cause;
  auto rej = [&](RejectCode c) { return rejected(28, w.reject(c, 1, 0, 2, 9)); };
  EXPECT_EQ(repair::settle(rej(RejectCode::repair_accepted), 1, 5).outcome, Outcome::peer_reconnects);
  EXPECT_EQ(repair::settle(rej(RejectCode::repair_pending), 1, 5).outcome, Outcome::peer_retries);
  auto s = repair::settle(rej(RejectCode::repair_refused), 1, 5);
  EXPECT_EQ(s.outcome, Outcome::give_up);
  EXPECT_EQ(s.cause, C::rtu_peer_cannot_reconnect);
  EXPECT_EQ(repair::settle(rej(RejectCode::local_failure), 1, 5).outcome, Outcome::ask_again);
  s = repair::settle(rej(RejectCode::wrong_role), 1, 5);
  EXPECT_EQ(s.cause, C::rtu_notice_refused);
  EXPECT_EQ(s.peer_code, RejectCode::wrong_role);
  EXPECT_EQ(repair::settle(rejected(prov::reject_reason::no_listener), 4, 5).outcome, Outcome::ask_again);
  EXPECT_EQ(repair::settle(rejected(prov::reject_reason::no_listener), 5, 5).cause, C::rtu_listener_gone);
  EXPECT_EQ(repair::settle(failed(cm::FailKind::unreachable), 5, 5).cause, C::rtu_notice_undeliverable);
}

// --- the pair table --------------------------------------------------------------------------------

TEST(PairTable, OneStatePerPairAndStableIndexes) {
  PairTable t;
  t.build({pair_key(5, 0), pair_key(3, 0), pair_key(5, 1)}, {pair_key(1, 0)});
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.open(), 4u);
  Pair* p = t.find(3, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->role, cm::Role::active);
  EXPECT_EQ(p->state(), PairState::waiting);
  EXPECT_EQ(t.at(t.index(*p)), p);
  EXPECT_EQ(t.find(1, 0)->role, cm::Role::passive);
  EXPECT_EQ(t.find(9, 0), nullptr);
  EXPECT_EQ(t.at(99), nullptr);
  // Start order is the order given, not the key order.
  EXPECT_EQ(t.next_to_start()->peer, 5u);
  EXPECT_EQ(t.next_to_start()->peer, 3u);
  Pair* last = t.next_to_start();
  EXPECT_EQ(last->lane, 1u);
  EXPECT_TRUE(t.all_started());
  EXPECT_EQ(t.next_to_start(), nullptr);
  t.become(*p, Failed{3});
  EXPECT_EQ(p->state(), PairState::failed);
  EXPECT_EQ(p->as<Failed>()->error, 3u);
  EXPECT_EQ(p->as<Waiting>(), nullptr);
  EXPECT_EQ(t.open(), 3u);
}

// The open count follows every state change, whatever the order: a settled pair settled
// again (an idle lane given up, a failed one closed) leaves it alone, and it never wraps.
TEST(PairTable, BecomeKeepsTheOpenCount) {
  PairTable t;
  t.build({pair_key(1, 0), pair_key(2, 0)}, {});
  ASSERT_EQ(t.open(), 2u);
  Pair& a = *t.find(1, 0);
  Pair& b = *t.find(2, 0);
  t.become(a, Connecting{});
  EXPECT_EQ(t.open(), 2u) << "waiting -> connecting: still open";
  t.become(a, Established{});
  EXPECT_EQ(t.open(), 1u);
  t.become(a, Idle{});
  EXPECT_EQ(t.open(), 1u) << "established -> idle: both settled";
  t.become(a, Failed{});
  EXPECT_EQ(t.open(), 1u) << "idle -> failed: both settled, nothing to count";
  t.become(b, Probing{});
  EXPECT_EQ(t.open(), 1u);
  t.become(b, Failed{});
  EXPECT_EQ(t.open(), 0u);
  t.become(b, Failed{});
  EXPECT_EQ(t.open(), 0u) << "failed twice: no wrap";
  t.become(a, Waiting{});
  EXPECT_EQ(t.open(), 1u) << "reopened";
  Pair& c = t.add(pair_key(3, 0), cm::Role::passive);
  EXPECT_TRUE(c.open());
  EXPECT_EQ(t.open(), 2u);
  for (PairState s : {PairState::waiting, PairState::connecting, PairState::probing}) EXPECT_TRUE(is_open(s));
  for (PairState s : {PairState::established, PairState::failed, PairState::idle}) EXPECT_FALSE(is_open(s));
}

TEST(PairTable, PairsAddedOnDemandKeepEveryIndexAndAddress) {
  PairTable t;
  t.build({pair_key(4, 0)}, {pair_key(2, 0)});
  Pair* built = t.find(4, 0);
  ASSERT_NE(built, nullptr);
  std::vector<Pair*> added;
  for (uint32_t peer = 100; peer > 5; --peer) added.push_back(&t.add(pair_key(peer, 0), cm::Role::passive));
  EXPECT_EQ(t.size(), 2u + 95u);
  EXPECT_EQ(t.open(), 2u + 95u);
  EXPECT_EQ(t.find(4, 0), built) << "growth moved a built pair";
  for (Pair* p : added) {
    EXPECT_EQ(t.find(p->peer, 0), p);
    EXPECT_EQ(t.at(t.index(*p)), p);
  }
  EXPECT_EQ(t.find(2, 0)->role, cm::Role::passive);
  EXPECT_EQ(t.find(3, 0), nullptr);
  EXPECT_EQ(t.find(100, 1), nullptr);
  // Queued on demand behind the built start order.
  t.queue_start(*added.back());
  EXPECT_EQ(t.next_to_start(), built);
  EXPECT_EQ(t.next_to_start(), added.back());
  EXPECT_TRUE(t.all_started());
}

// --- the stranger log ------------------------------------------------------------------------------

TEST(StrangerLog, OneLinePerHostAndBoundedMemory) {
  StrangerLog log(2);
  EXPECT_EQ(log.note("10.0.0.1:100"), StrangerLog::Verdict::log);
  EXPECT_EQ(log.note("10.0.0.1:101"), StrangerLog::Verdict::seen) << "another port, the same host";
  EXPECT_EQ(log.note("10.0.0.2:100"), StrangerLog::Verdict::log);
  for (int i = 3; i < 1000; ++i) EXPECT_EQ(log.note("10.0.0." + std::to_string(i) + ":1"), StrangerLog::Verdict::unlogged);
  EXPECT_EQ(log.remembered(), 2u);
  EXPECT_EQ(log.unlogged(), 997u);
  EXPECT_EQ(log.note("10.0.0.2:9"), StrangerLog::Verdict::seen);
}

// --- wire builders ---------------------------------------------------------------------------------

TEST(Wire, EveryKindDecodesToWhatWasBuilt) {
  Wire w = make_wire(0xfeed, 4, 100);
  EXPECT_EQ(w.fresh_nonce(), 100u);
  EXPECT_EQ(w.fresh_nonce(), 101u) << "never the same nonce twice";
  auto req = w.open(w.request(9, 3, 2, 77));
  ASSERT_TRUE(req) << req.error().message();
  EXPECT_EQ(req->kind, WireKind::request);
  EXPECT_EQ(req->src_rank, 4u);
  EXPECT_EQ(req->dst_rank, 9u);
  EXPECT_EQ(req->lane, 3u);
  EXPECT_EQ(req->attempt, 2u);
  EXPECT_EQ(req->nonce, 77u);
  EXPECT_EQ(w.open(w.accept(9, 3, 2, 77))->kind, WireKind::accept);
  EXPECT_EQ(w.open(w.rtu_lost(9, 3, 2, 77))->kind, WireKind::rtu_lost);
  EXPECT_EQ(w.open(w.abandon(9, 3, 2, 77))->kind, WireKind::abandon);
  auto rej = w.open(w.reject(RejectCode::repair_pending, 9, 3, 2, 77));
  EXPECT_EQ(rej->reason, RejectCode::repair_pending);
  auto st = decode(w.refuse_stranger(RejectCode::wrong_job_key));
  EXPECT_EQ(st->reason, RejectCode::wrong_job_key);
  EXPECT_EQ(st->dst_rank, 0u) << "a stranger learns only our rank and the reason";
  EXPECT_EQ(st->src_rank, 4u);
  EXPECT_EQ(st->nonce, 0u);
  EXPECT_FALSE(w.open(w.refuse_stranger(RejectCode::wrong_job_key))) << "unauthenticated by design";
  static_assert(kWireHeaderSize <= prov::private_data_limit::req_tcp, "inside the 56-byte REQ budget");
}

TEST(Wire, TheJobKeyNeverTravels) {
  const uint64_t key = 0x0123456789abcdefULL;
  const Wire w = make_wire(key, 4);
  for (const WireBytes& b : {w.request(1, 0, 1, 5), w.accept(1, 0, 1, 5), w.reject(RejectCode::duplicate, 1, 0, 1, 5),
                             w.rtu_lost(1, 0, 1, 5), w.abandon(1, 0, 1, 5)}) {
    for (size_t at = 0; at + 8 <= b.size(); ++at) {
      uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v |= uint64_t(b[at + i]) << (8 * i);
      EXPECT_NE(v, key) << "the key in clear at offset " << at;
    }
  }
}

// Each byte of a sealed REQ and REP flipped in turn (each bit of it, in fact): refused.
TEST(Wire, EveryFlippedByteIsRefused) {
  const Wire a = make_wire(0x77, 0);
  const Wire b = make_wire(0x77, 1);
  const WireBytes req = a.request(1, 0, 3, 0x1122334455667788ULL);
  const WireBytes rep = b.accept(0, 0, 3, 0x1122334455667788ULL);
  ASSERT_TRUE(b.open(req));
  ASSERT_TRUE(a.open_answer(rep, 0x1122334455667788ULL));
  int refused = 0;
  for (size_t i = 0; i < kWireHeaderSize; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      WireBytes r = req, p = rep;
      r[i] ^= uint8_t(1u << bit);
      p[i] ^= uint8_t(1u << bit);
      EXPECT_FALSE(b.open(r)) << "REQ byte " << i << " bit " << bit;
      EXPECT_FALSE(a.open_answer(p, 0x1122334455667788ULL)) << "REP byte " << i << " bit " << bit;
      refused += 2;
    }
  }
  EXPECT_EQ(refused, 2 * 8 * 48);
  // A REP that is genuine but answers another request (an earlier attempt's, replayed).
  EXPECT_FALSE(a.open_answer(b.accept(0, 0, 3, 0x1122334455667789ULL), 0x1122334455667788ULL));
  // The gate refuses each flipped REQ as well, and never admits one.
  PeerTable peers;
  peers.assign({{0, prov::SockAddr::ipv4(0x0a000001, 1)}});
  const GateContext ctx{&b, 1, 2, 1, &peers, true, true};
  ASSERT_EQ(check_request(ctx, req).admit, Admit::connect);
  for (size_t i = 0; i < kWireHeaderSize; ++i) {
    WireBytes r = req;
    r[i] ^= 0x01;
    const GateVerdict v = check_request(ctx, r);
    EXPECT_EQ(v.admit, Admit::refuse) << "byte " << i;
    EXPECT_FALSE(v.authentic) << "byte " << i;
  }
  // And the REP check, each flipped REP.
  const GateContext actx{&a, 0, 2, 1, &peers, true, true};
  ASSERT_TRUE(check_reply(actx, rep, 1, 0, 3, 0x1122334455667788ULL));
  for (size_t i = 0; i < kWireHeaderSize; ++i) {
    WireBytes p = rep;
    p[i] ^= 0x80;
    EXPECT_FALSE(check_reply(actx, p, 1, 0, 3, 0x1122334455667788ULL)) << "byte " << i;
  }
}

// --- phase spans and counters ----------------------------------------------------------------------

TEST(Stats, PhaseSpansPerRole) {
  cm::Timings t;
  t.start = 10ns;
  t.addr_resolved = 15ns;
  t.route_resolved = 20ns;
  t.qp_created = 30ns;
  t.request = 31ns;
  t.response = 40ns;
  t.rts = 45ns;
  t.established = 46ns;
  auto a = phase_spans(t, cm::Role::active, 1ns);
  EXPECT_EQ(a[size_t(Phase::resolve_addr)], 5ns);
  EXPECT_EQ(a[size_t(Phase::req_to_rep)], 9ns);
  EXPECT_EQ(a[size_t(Phase::attempt)], 36ns);
  EXPECT_EQ(a[size_t(Phase::total)], 45ns);
  cm::Timings pt;  // passive: it starts with the request
  pt.start = pt.request = 10ns;
  pt.qp_created = 12ns;
  pt.rts = 15ns;
  pt.established = 20ns;
  auto p = phase_spans(pt, cm::Role::passive, 10ns);
  EXPECT_EQ(p[size_t(Phase::resolve_addr)], cm::kUnset);
  EXPECT_EQ(p[size_t(Phase::qp_create)], 2ns);
  EXPECT_EQ(p[size_t(Phase::rtr_rts)], 3ns);
  EXPECT_EQ(p[size_t(Phase::establish)], 5ns);
  EXPECT_EQ(p[size_t(Phase::attempt)], 10ns);
  t.rts = 44ns;
  t.established = 43ns;  // a clock that went backwards gives no span, never a negative one
  EXPECT_EQ(phase_spans(t, cm::Role::active, 1ns)[size_t(Phase::establish)], cm::kUnset);
  cm::Timings u;  // nothing reached
  for (Nanos d : phase_spans(u, cm::Role::active, cm::kUnset)) EXPECT_EQ(d, cm::kUnset);
}

// A result keeps its stamps exact to the nanosecond, however far apart (engine_types.h); an
// unset stamp stays unset, a first start before the attempt comes back.
TEST(Stats, ResultTimingsKeepTheStamps) {
  cm::Timings t;
  t.start = 5'000'000'000'123ns;  // a steady clock's ns, far from 0
  t.addr_resolved = t.start + 1ns;
  t.route_resolved = t.start + 16'777'215ns;  // 2^24 - 1: the last offset a float holds exactly
  t.request = t.start + 16'777'300ns;
  t.established = t.start + 90'000'000'017ns;  // 90 s later
  const Nanos first = t.start - 7'000'000'001ns;  // the first attempt, 7 s earlier
  const ResultTimings r(t, first);
  const cm::Timings g = r.get();
  EXPECT_EQ(g.start, t.start);
  EXPECT_EQ(g.addr_resolved, t.addr_resolved);
  EXPECT_EQ(g.route_resolved, t.route_resolved);
  EXPECT_EQ(g.qp_created, cm::kUnset);
  EXPECT_EQ(g.response, cm::kUnset);
  EXPECT_EQ(g.rts, cm::kUnset);
  EXPECT_EQ(g.request, t.request);
  EXPECT_EQ(g.established, t.established);
  EXPECT_EQ(r.first_start(), first);
  EXPECT_EQ(ResultTimings(t, cm::kUnset).first_start(), cm::kUnset);
  cm::Timings passive;  // no start: the request is the first stamp
  passive.request = 3ns;
  passive.established = 9ns;
  const cm::Timings pg = ResultTimings(passive, 3ns).get();
  EXPECT_EQ(pg.start, cm::kUnset);
  EXPECT_EQ(pg.request, 3ns);
  EXPECT_EQ(pg.established, 9ns);
  const cm::Timings none = ResultTimings(cm::Timings{}, cm::kUnset).get();
  EXPECT_EQ(none.start, cm::kUnset);
  EXPECT_EQ(none.established, cm::kUnset);
}

// The samples are cut from the results, one per result that reached the phase.
TEST(Stats, SamplesComeFromTheResults) {
  std::vector<ConnResult> results(2);
  cm::Timings a;
  a.start = 100ns, a.addr_resolved = 110ns, a.established = 200ns;
  results[0].timings = ResultTimings(a, 50ns);
  results[0].role = cm::Role::active;
  cm::Timings p;
  p.request = 300ns, p.qp_created = 305ns, p.established = 400ns;
  results[1].timings = ResultTimings(p, 300ns);
  results[1].role = cm::Role::passive;
  Stats s;
  EXPECT_TRUE(s.samples(Phase::total).empty());
  s.attach(&results);
  EXPECT_EQ(s.samples(Phase::resolve_addr), (std::vector<int64_t>{10}));
  EXPECT_EQ(s.samples(Phase::qp_create), (std::vector<int64_t>{5}));
  EXPECT_EQ(s.samples(Phase::total), (std::vector<int64_t>{150, 100}));
  EXPECT_TRUE(s.samples(Phase::attempt).empty());  // not a sampled phase
  EXPECT_EQ(s.summary(Phase::total).n, 2u);
}

// One result slot and one error slot per pair: a pair's later connections (and errors) are
// written over its slot, so the tables hold one of each per pair ever used, and a slot's index
// never moves. A withdrawn record stops counting as withdrawn once its pair connects again.
TEST(Records, OneResultAndOneErrorSlotPerPair) {
  Records rec;
  auto conn = [](uint32_t peer, uint32_t qpn) {
    ConnResult r;
    r.peer = peer;
    r.local_qpn = qpn;
    return r;
  };
  EXPECT_EQ(rec.result_slot(7), Records::kNoSlot);
  EXPECT_EQ(rec.put_result(7, conn(1, 0x10)), 0u);
  EXPECT_EQ(rec.put_result(3, conn(2, 0x11)), 1u);
  for (uint32_t qpn = 0x20; qpn < 0x20 + 1000; ++qpn) {
    EXPECT_EQ(rec.put_result(7, conn(1, qpn)), 0u) << "pair 7's slot moved";
    if (qpn % 2 == 0) rec.withdraw(0);
  }
  ASSERT_EQ(rec.results().size(), 2u) << "one slot per pair, whatever the connections";
  EXPECT_EQ(rec.results()[0].local_qpn, 0x20u + 999) << "the slot holds the pair's latest connection";
  EXPECT_EQ(rec.results()[1].local_qpn, 0x11u);
  EXPECT_EQ(rec.result_slot(7), 0u);
  EXPECT_EQ(rec.result_slot(3), 1u);
  EXPECT_EQ(rec.withdrawn(), 0u) << "the withdrawn record was written over by the next connection";
  rec.withdraw(0);
  rec.withdraw(0);
  EXPECT_EQ(rec.withdrawn(), 1u);
  EXPECT_TRUE(rec.results()[0].withdrawn);

  PeerError e;
  e.peer = 1;
  for (uint32_t a = 1; a <= 100; ++a) {
    e.attempts = a;
    EXPECT_EQ(rec.put_error(7, e), 0u) << "pair 7's error slot moved";
  }
  e.peer = 2;
  EXPECT_EQ(rec.put_error(3, e), 1u);
  ASSERT_EQ(rec.errors().size(), 2u);
  EXPECT_EQ(rec.errors()[0].attempts, 100u) << "the slot holds why the pair was given up last";
  EXPECT_EQ(rec.errors()[1].peer, 2u);
}

// Whether the transport was given a result is the slot's record of its connection: set by
// hand_over, kept through a withdraw (a device removed under a connection handed over), and
// gone when the pair's next connection is written over the slot.
TEST(Records, HandedOverIsTheSlotsCurrentConnections) {
  Records rec;
  ConnResult r;
  r.peer = 1;
  EXPECT_EQ(rec.put_result(4, r), 0u);
  EXPECT_EQ(rec.put_result(5, r), 1u);
  EXPECT_FALSE(rec.handed_over(0)) << "a connection starts not handed over";
  rec.hand_over(0);
  EXPECT_TRUE(rec.handed_over(0));
  EXPECT_TRUE(rec.results()[0].handed_over);
  EXPECT_FALSE(rec.handed_over(1)) << "one slot's hand-over is its own";
  rec.withdraw(0);
  EXPECT_TRUE(rec.handed_over(0));
  EXPECT_EQ(rec.put_result(4, r), 0u);
  EXPECT_FALSE(rec.handed_over(0)) << "the pair's next connection was never given to the transport";
  EXPECT_FALSE(rec.results()[0].withdrawn);
}

TEST(Fifo, RemoveIfKeepsTheOthersInOrder) {
  Fifo<int> q;
  for (int i = 0; i < 10; ++i) q.push_back(i);
  q.pop_front();
  q.pop_front();  // 2..9 wait
  q.remove_if([](int x) { return x % 3 == 0; });
  EXPECT_EQ(std::vector<int>(q.begin(), q.end()), (std::vector<int>{2, 4, 5, 7, 8}));
  EXPECT_EQ(q.front(), 2);
  q.push_back(10);
  q.remove_if([](int) { return true; });
  EXPECT_TRUE(q.empty());
}

TEST(Stats, CountersByEnumNamesOnlyInJson) {
  Stats s;
  ++s[Counter::retries];
  s.reject_sent(RejectCode::wrong_job_key);
  s.reject_received(28);
  s.reject_received(500);  // beyond any IB reason: kept in the last bucket
  s.failure(cm::FailKind::unreachable);
  EXPECT_EQ(s[Counter::retries], 1u);
  EXPECT_EQ(s.rejects_sent(RejectCode::wrong_job_key), 1u);
  EXPECT_EQ(s.rejects_received(28), 1u);
  EXPECT_EQ(s.rejects_received(Stats::kRejectReasons - 1), 1u);
  const std::string j = s.to_json();
  EXPECT_NE(j.find("\"retries\":1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"rejects_sent\":{\"wrong_job_key\":1}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"failures\":{\"unreachable\":1}"), std::string::npos) << j;
  EXPECT_EQ(j.find("\"attempt\""), std::string::npos) << "not sampled";
}

}  // namespace
}  // namespace wireup
