// Wireup statistics: counters indexed by enums (names only when a report or JSON is made),
// per-phase timing samples, and the one function that cuts a connection's time stamps into
// phases (used here and by the C API's results).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cm/connection.h"
#include "common/clock.h"
#include "ece/policy.h"
#include "wireup/admission.h"
#include "wireup/engine_types.h"
#include "wireup/private_data.h"

namespace wireup {

enum class Phase : uint8_t {
  resolve_addr,   // rdma_resolve_addr -> ADDR_RESOLVED
  resolve_route,  // rdma_resolve_route -> ROUTE_RESOLVED
  qp_create,      // ROUTE_RESOLVED (or CONNECT_REQUEST) -> QP at INIT, incl. waiting for the QP window
  req_to_rep,     // REQ sent -> CONNECT_RESPONSE (active)
  rtr_rts,        // QP to RTR and RTS (passive: to RTR; RTS follows ESTABLISHED)
  establish,      // RTS -> established (passive: waits for the RTU)
  total,          // first attempt started -> established
  attempt,        // start of the successful attempt (passive: its REQ) -> established
  count_,
};
inline constexpr size_t kPhases = static_cast<size_t>(Phase::count_);
const char* to_string(Phase p);
// Phases the statistics report samples of (those before `attempt`). The C API's
// wireup_phase_t mirrors these.
inline constexpr size_t kSampledPhases = static_cast<size_t>(Phase::attempt);
constexpr bool sampled(Phase p) { return static_cast<size_t>(p) < kSampledPhases; }

// The phases of one connection from its time stamps; cm::kUnset where a phase was not
// reached (or does not exist for the role, like resolve_addr on the passive side).
std::array<Nanos, kPhases> phase_spans(const cm::Timings& t, cm::Role role, Nanos first_start);

struct PhaseSummary {
  size_t n = 0;
  double p50_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

enum class Counter : uint8_t {
  connects_started,     // active attempts, first ones and retries
  connects_paced,       // first attempts held back by incast pacing (incast.h)
  retries,
  established_active,
  established_passive,
  failed,               // (peer, lane) given up on
  superseded,           // half-open passive attempts replaced by a newer one
  strangers,            // requests rejected before any resource
  strangers_unlogged,   // of those, from sources past the log's memory (not logged)
  disconnects,          // steady-state DISCONNECTED after wireup
  events,               // CM events handled
  // The RTU gap (repair.h): notices this rank sent as the passive side (every try), notices
  // it answered as the active side, and of those the lanes it tore down to reconnect and
  // the ones it could not reconnect (reported as lost).
  rtu_lost_sent,
  rtu_lost_received,
  repairs,
  repairs_refused,
  // Final answers told across (WireKind::abandon): notices this rank sent as the active side
  // after giving up locally, and the ones it received as the passive side.
  abandons_sent,
  abandons_received,
  // The device's own events (engine_device.cc): async events taken from it, COMM_EST told
  // to the CM (rdma_notify), DEVICE_REMOVAL seen on this rank's ids (each id once), and
  // ADDR_CHANGE on them.
  device_events,
  comm_est_notified,
  device_removals,
  addr_changes,
  // On demand: lanes the transport asked for (connect(), eager peers), requests of the peer we
  // refused because ours crosses them and wins (RejectCode::crossed), our own attempts given
  // up because the peer's crossing request wins, and lanes disconnected (either side).
  asks,
  crossed_won,
  crossed_yielded,
  lanes_closed,
  // Peers declared gone after wireup (peer_down.h), once each, whatever the cause.
  peers_down,
  count_,
};
const char* to_string(Counter c);

// What one rail carried (admission.h: each rail has its own windows). The engine's totals
// (Counter) stay as they were; these split some of them by the rail of the attempt: an active
// lane's local rail, a passive one's listener.
struct RailCounts {
  uint64_t connects_started = 0;     // active attempts started on the rail, first ones and retries
  uint64_t retries = 0;              // of those, attempts after a pair's first (wherever that ran)
  uint64_t established_active = 0;
  uint64_t established_passive = 0;
  uint64_t rejects_received = 0;     // REJs the peers sent to attempts on the rail
};

class Stats {
 public:
  static constexpr size_t kRejectReasons = 64;  // IB CM reject reasons are 1..35 (IBTA 12.6.7.2)

  uint64_t& operator[](Counter c) { return counters_[static_cast<size_t>(c)]; }
  uint64_t operator[](Counter c) const { return counters_[static_cast<size_t>(c)]; }

  void reject_received(int ib_reason);
  void reject_sent(RejectCode c) { ++rejects_sent_[static_cast<size_t>(c)]; }
  void failure(cm::FailKind k) { ++failures_[static_cast<size_t>(k)]; }
  uint64_t rejects_received(int ib_reason) const;
  uint64_t rejects_sent(RejectCode c) const { return rejects_sent_[static_cast<size_t>(c)]; }
  uint64_t failures(cm::FailKind k) const { return failures_[static_cast<size_t>(k)]; }
  uint64_t ece_outcomes(ece::Outcome o) const { return ece_[static_cast<size_t>(o)]; }

  // The samples are cut from the results' time stamps when asked for (the latest connection
  // of every (peer, lane), withdrawn ones included: records.h), not kept apart: that cost
  // 8 bytes per phase and endpoint, and would grow with every connection an on-demand engine
  // ever makes. `results` must outlive the Stats (both are the engine's).
  void attach(const std::vector<ConnResult>* results) { results_ = results; }
  // The windows' peaks are read from the admission when asked for (it must outlive the Stats).
  void attach(const Admission* windows) { windows_ = windows; }

  // Rail `rail`'s counts (made on first use).
  RailCounts& rail(uint32_t rail) {
    if (rail >= rails_.size()) rails_.resize(rail + 1);
    return rails_[rail];
  }
  // One entry per rail: as many as the admission has (or as were counted, if more).
  std::vector<RailCounts> rails() const;
  // The windows' peaks per rail and over all rails together (zeros without an admission).
  WindowPeaks window_peaks(uint32_t rail) const;
  WindowPeaks window_peaks_total() const;
  void record(const cm::Connection& c);

  PhaseSummary summary(Phase p) const;
  std::string to_json() const;
  // The non-zero tallies by name (or IB reason), for reports that merge ranks.
  std::map<int, uint64_t> rejects_received_by_reason() const;
  std::map<std::string, uint64_t> rejects_sent_by_name() const;
  std::map<std::string, uint64_t> failures_by_name() const;
  std::map<std::string, uint64_t> ece_outcomes_by_name() const;
  // The raw samples of one phase (ns), in the order the (peer, lane)s first connected, so
  // that a job's percentiles can be taken over the samples of all its ranks rather than
  // averaged from per-rank percentiles.
  std::vector<int64_t> samples(Phase p) const;

 private:
  static constexpr size_t kFailKinds = cm::kFailKinds;
  static constexpr size_t kRejectCodes = static_cast<size_t>(kLastRejectCode) + 1;
  static constexpr size_t kEceOutcomes = static_cast<size_t>(ece::Outcome::rejected) + 1;

  std::array<uint64_t, static_cast<size_t>(Counter::count_)> counters_{};
  std::array<uint64_t, kRejectReasons> rejects_received_{};  // the last one: any larger value
  std::array<uint64_t, kRejectCodes> rejects_sent_{};
  std::array<uint64_t, kFailKinds> failures_{};
  std::array<uint64_t, kEceOutcomes> ece_{};
  const std::vector<ConnResult>* results_ = nullptr;
  std::vector<RailCounts> rails_;
  const Admission* windows_ = nullptr;
};

}  // namespace wireup
