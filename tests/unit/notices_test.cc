// The notice protocol's state alone (notices.h): the lines per host, a notice's tries and
// phases, the retries due, and how long the end of wireup waits for abandons. No connection
// is made: the tests play the engine's part.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "wireup/notices.h"

namespace wireup {
namespace {

using namespace std::chrono_literals;
using Kind = Notices::Kind;
using Phase = Notices::Phase;

// One QP-less request on the wire per host, the others of that host in order; another host's
// line does not wait behind it.
TEST(NoticeLines, OnePerHostOnTheWireTheRestInOrder) {
  NoticeLines lines;
  std::set<uint64_t> wire;  // what the test's "CM" has not answered yet
  std::vector<uint64_t> sent;
  auto on_wire = [&](uint64_t k) { return wire.count(k) > 0; };
  auto send = [&](uint64_t k) {
    if (k == 99) return false;  // moved on meanwhile: skipped, the next one goes
    sent.push_back(k);
    wire.insert(k);
    return true;
  };
  lines.wait("10.0.0.1", 1);
  lines.wait("10.0.0.1", 99);
  lines.wait("10.0.0.1", 2);
  lines.wait("10.0.0.2", 5);
  EXPECT_EQ(lines.pump(on_wire, send), 2);
  EXPECT_EQ(sent, (std::vector<uint64_t>{1, 5}));
  EXPECT_EQ(lines.pump(on_wire, send), 0) << "1 and 5 are still on the wire";
  wire.erase(1);  // answered
  EXPECT_EQ(lines.pump(on_wire, send), 1);
  EXPECT_EQ(sent, (std::vector<uint64_t>{1, 5, 2})) << "99 was skipped";
  wire.clear();
  EXPECT_EQ(lines.pump(on_wire, send), 0);
  EXPECT_EQ(lines.lines(), 0u) << "idle lines are forgotten";
}

cm::Failure failed(cm::FailKind k) {
  cm::Failure f;
  f.kind = k;
  return f;
}

// A try from the start to its answer, as the engine drives it.
void try_once(Notices& n, uint64_t key, Nanos at) {
  (void)n.begin_try(key, at);
  n.route_resolved(key, "10.0.0.1");
  EXPECT_EQ(n.send_queued(at, [](uint64_t) { return true; }), 1);
  (void)n.answered(key);
}

TEST(Notices, AnAbandonHoldsTheEndOfWireupUntilClosed) {
  Notices n;
  EXPECT_EQ(n.abandon_until(), 0ns);
  ASSERT_TRUE(n.open_abandon(3));
  EXPECT_FALSE(n.open_abandon(3)) << "a pair announces once";
  (void)n.begin_try(3, 1s);
  EXPECT_EQ(n.find(3)->tries, 1u);
  EXPECT_EQ(n.find(3)->phase, Phase::resolving);
  EXPECT_EQ(n.abandon_until(), 11s) << "kAbandonBound from the try";
  n.route_resolved(3, "10.0.0.1");
  EXPECT_EQ(n.send_queued(2s, [](uint64_t) { return true; }), 1);
  EXPECT_EQ(n.find(3)->phase, Phase::on_wire);
  EXPECT_EQ(n.abandon_until(), 12s) << "and from the REQ leaving";
  (void)n.answered(3);
  n.retry_at(3, 5s);
  EXPECT_EQ(n.abandon_until(), 15s) << "and from the retry's due time";
  EXPECT_TRUE(n.abandoning(14s));
  EXPECT_FALSE(n.abandoning(15s));
  EXPECT_FALSE(n.close(3)) << "no connection was held";
  EXPECT_EQ(n.abandon_until(), 0ns) << "no abandon open: nothing to wait for";
  EXPECT_FALSE(n.abandoning(1s));
  EXPECT_EQ(n.pop_due(Kind::abandon, 5s), std::nullopt) << "a closed notice's retry is skipped";
}

// Due order is time order (not the order retries were queued), each kind apart, and an entry
// whose notice has moved on (closed, or already on its next try) is skipped.
TEST(Notices, RetriesPopInDueOrderEachKindApart) {
  Notices n;
  const cm::Failure why = failed(cm::FailKind::unreachable);
  for (uint64_t key : {1, 2, 4}) {
    n.open_probe(key, 1, &why);
    try_once(n, key, 0s);
  }
  ASSERT_TRUE(n.open_abandon(7));
  try_once(n, 7, 0s);
  n.retry_at(1, 30ms);
  n.retry_at(2, 10ms);
  n.retry_at(4, 20ms);
  n.retry_at(7, 5ms);
  EXPECT_EQ(n.next_due(Kind::rtu_lost), 10ms);
  EXPECT_EQ(n.next_due(Kind::abandon), 5ms);
  EXPECT_EQ(n.pop_due(Kind::rtu_lost, 9ms), std::nullopt) << "nothing due yet";
  EXPECT_EQ(n.pop_due(Kind::rtu_lost, 15ms), 2u);
  EXPECT_EQ(n.pop_due(Kind::rtu_lost, 15ms), std::nullopt);
  EXPECT_EQ(n.next_due(Kind::rtu_lost), 20ms);
  (void)n.begin_try(4, 16ms);  // its next try left already
  EXPECT_EQ(n.pop_due(Kind::rtu_lost, 40ms), 1u) << "4 is resolving, not backing off: skipped";
  EXPECT_EQ(n.pop_due(Kind::rtu_lost, 40ms), std::nullopt);
  EXPECT_EQ(n.next_due(Kind::rtu_lost), Nanos::max());
  EXPECT_EQ(n.pop_due(Kind::abandon, 40ms), 7u);
}

TEST(Notices, AProbeGetsAFreshBudgetForANewerAttempt) {
  Notices n;
  const cm::Failure first = failed(cm::FailKind::unreachable);
  const cm::Failure later = failed(cm::FailKind::local_error);
  Notices::Notice& p = n.open_probe(5, 2, &first);
  try_once(n, 5, 0s);
  try_once(n, 5, 0s);
  EXPECT_EQ(n.open_probe(5, 2, nullptr).tries, 2u) << "the same attempt: the budget goes on";
  EXPECT_EQ(&n.open_probe(5, 3, &later), &p);
  EXPECT_EQ(p.tries, 0u) << "a newer attempt: a fresh budget";
  EXPECT_EQ(p.attempt, 3u);
  EXPECT_EQ(p.unreachable.kind, cm::FailKind::unreachable) << "why we asked first stays";
  EXPECT_EQ(n.abandon_until(), 0ns) << "a probe holds nothing";
}

// The deadline or the device's loss drops the queued retries: nothing is sent again, but an
// abandon still open holds the end of wireup until its time is up.
TEST(Notices, DroppedRetriesLeaveTheAbandonsTime) {
  Notices n;
  ASSERT_TRUE(n.open_abandon(1));
  try_once(n, 1, 0s);
  n.retry_at(1, 2s);
  n.drop_retries();
  EXPECT_EQ(n.next_due(Kind::abandon), Nanos::max());
  EXPECT_EQ(n.pop_due(Kind::abandon, 3s), std::nullopt);
  EXPECT_EQ(n.find(1)->phase, Phase::backing_off);
  EXPECT_TRUE(n.abandoning(11s));
  EXPECT_FALSE(n.abandoning(12s));
}

// The lines inside Notices: one of ours on the wire per host; a notice refused at once, or
// closed while queued, lets the next one go.
TEST(Notices, OneOnTheWirePerHost) {
  Notices n;
  for (uint64_t key : {1, 2, 3, 4}) ASSERT_TRUE(n.open_abandon(key));
  for (uint64_t key : {1, 2, 3, 4}) (void)n.begin_try(key, 0s);
  n.route_resolved(1, "10.0.0.1");
  n.route_resolved(2, "10.0.0.1");
  n.route_resolved(3, "10.0.0.1");
  n.route_resolved(4, "10.0.0.2");
  std::vector<uint64_t> sent;
  auto send = [&](uint64_t key) {
    sent.push_back(key);
    if (key != 2) return true;
    (void)n.answered(key);  // refused at once: the engine settles it in place
    (void)n.close(key);
    return false;
  };
  EXPECT_EQ(n.send_queued(0s, send), 2);
  EXPECT_EQ(sent, (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(n.send_queued(0s, send), 0) << "1 is still on the wire";
  (void)n.answered(1);
  EXPECT_EQ(n.send_queued(0s, send), 1);
  EXPECT_EQ(sent, (std::vector<uint64_t>{1, 4, 2, 3})) << "2 refused at once, 3 went";
  EXPECT_EQ(n.find(3)->phase, Phase::on_wire);
  (void)n.close(3);
  (void)n.answered(4);
  EXPECT_EQ(n.send_queued(0s, send), 0);
  EXPECT_FALSE(n.lines_busy()) << "idle lines are forgotten";
}

}  // namespace
}  // namespace wireup
