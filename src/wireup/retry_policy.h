// When a failed attempt is tried again: a pure policy (which failures are worth another
// attempt, and how long to wait) and the scheduler that holds the connects due later and draws
// every backoff's jitter (a notice's retry waits in Notices, notices.h, with a delay drawn here).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "cm/connection.h"
#include "common/clock.h"

namespace wireup {

struct RetryPolicy {
  uint32_t max_attempts = 0;  // per (peer, lane), the first one included
  Nanos initial{0};
  Nanos max{0};
  double jitter = 0;  // the delay is scaled by 1 + jitter * u, u drawn from [-1, 1]
};

// A failure the peer or the fabric may not repeat: REJ 8 (nothing listening yet), REJ 10
// (stale connection: the peer restarted or still has our last attempt in TIMEWAIT), UNREACHABLE, ADDR/ROUTE/CONNECT_ERROR, a REJ that is not ours, and our own transient
// reasons (local_failure, stale_attempt). ECE (35), other IB reasons and every other
// RejectCode are final.
bool retryable(const cm::Failure& f);
// An EINVAL from a CM call the kernel refuses only when the id left the state the call needs,
// which only a device removal does behind our back (the id's DEVICE_REMOVAL follows).
bool id_moved_by_kernel(const Error& e);

// Whether a QP-less notice (abandon, rtu_lost) that got `answer` instead of its peer engine's
// reply is worth sending again: nothing answered (UNREACHABLE, CONNECT_ERROR), nothing listening
// yet (REJ 8), the peer engine not ready (its local_failure), or REJ 10 from the peer's CM:
// every QP-less REQ carries QPN 0, and a CM that still holds one from our device refuses the
// next as a stale connection until it is answered (cm_match_req) — another process on our node
// may have one there, the engine itself never does (Admission keeps one of ours on the wire).
bool notice_undelivered(const cm::Failure& answer);

// The delay before the attempt after `attempt` (1-based): initial * 2^(attempt-1), capped at
// max, then scaled by the jitter draw `u` in [-1, 1].
Nanos backoff(const RetryPolicy& p, uint32_t attempt, double u);

struct RetryDecision {
  bool retry = false;
  Nanos at{0};  // when, if retry
};
// After `attempt` failed with `f` at `now`.
RetryDecision decide(const RetryPolicy& p, const cm::Failure& f, uint32_t attempt, Nanos now, double u);

// The connects that wait out their backoff (and a place in the connect window), and the one
// source of jitter for every backoff the engine waits, notices' included (Notices keeps their
// queues). Entries name pairs (the engine uses pair indexes); a pair that moved on meanwhile is
// skipped by whoever pops it.
class RetryScheduler {
 public:
  RetryScheduler(RetryPolicy p, uint64_t seed) : policy_(p), rng_(seed) {}

  const RetryPolicy& policy() const { return policy_; }
  // When the try after the `attempt`-th (1-based) is due, from `now`: the backoff with a fresh
  // jitter draw. Queues nothing.
  Nanos due_after(uint32_t attempt, Nanos now);
  // Schedules `key`'s connect after its `attempt`-th try; returns when it is due.
  Nanos schedule(uint64_t key, uint32_t attempt, Nanos now);
  // Decides with decide() and schedules if it says retry.
  RetryDecision after_failure(uint64_t key, const cm::Failure& f, uint32_t attempt, Nanos now);
  // The next key due at `now`, removed from the queue.
  std::optional<uint64_t> pop_due(Nanos now);
  // The earliest due time, or Nanos::max().
  // Inline: progress() and next_wakeup() ask at every call, and the queue is nearly always empty.
  Nanos next_due() const { return connects_.empty() ? Nanos::max() : connects_.begin()->first; }
  void clear() { connects_.clear(); }

 private:
  double draw();

  RetryPolicy policy_;
  // The jitter draws' state (SplitMix64, retry_policy.cc): jitter only has to keep ranks'
  // retries from aligning.
  uint64_t rng_;
  std::multimap<Nanos, uint64_t> connects_;
};

}  // namespace wireup
