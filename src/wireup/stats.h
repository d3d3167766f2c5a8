// Wireup statistics: counters, per-phase timing samples, JSON export.
// Collected by the engine as it goes; summarised (p50/p99) only when asked.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cm/connection.h"
#include "common/clock.h"
#include "ece/policy.h"
#include "wireup/private_data.h"

namespace wireup {

enum class Phase : uint8_t {
  resolve_addr,   // rdma_resolve_addr -> ADDR_RESOLVED
  resolve_route,  // rdma_resolve_route -> ROUTE_RESOLVED
  qp_create,      // ROUTE_RESOLVED (or CONNECT_REQUEST) -> QP at INIT, incl. waiting for the QP window
  req_to_rep,     // REQ sent -> CONNECT_RESPONSE (active)
  rtr_rts,        // QP to RTR and RTS
  establish,      // RTS -> established (passive: waits for the RTU)
  total,          // first attempt started -> established
  count_,
};
const char* to_string(Phase p);

struct PhaseSummary {
  size_t n = 0;
  double p50_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

class Stats {
 public:
  void add(Phase p, Nanos d);
  // Room for the samples of `active` and `passive` established connections (what record()
  // adds per role), so that recording never grows a vector mid-wireup.
  void reserve(size_t active, size_t passive);
  void record(const cm::Connection& c, Nanos first_start);

  uint64_t connects_started = 0;      // active attempts, first ones and retries
  uint64_t retries = 0;
  uint64_t established_active = 0;
  uint64_t established_passive = 0;
  uint64_t failed = 0;                // (peer, lane) given up on
  uint64_t superseded = 0;            // half-open passive attempts replaced by a newer one
  uint64_t strangers = 0;             // requests rejected before any resource
  uint64_t disconnects = 0;           // steady-state DISCONNECTED after wireup
  uint64_t events = 0;                // CM events handled
  // The RTU gap (WireKind::rtu_lost): notices this rank sent as the passive side (every try),
  // notices it answered as the active side, and of those the lanes it tore down to
  // reconnect and the ones it could not reconnect (reported as lost).
  uint64_t rtu_lost_sent = 0;
  uint64_t rtu_lost_received = 0;
  uint64_t repairs = 0;
  uint64_t repairs_refused = 0;
  std::map<int, uint64_t> rejects_received;          // by IB reject reason (8, 28, 35, ...)
  std::map<std::string, uint64_t> rejects_sent;      // by RejectCode name / "ece"
  std::map<std::string, uint64_t> failures;          // by FailKind name
  std::map<std::string, uint64_t> ece_outcomes;      // by ece::Outcome name

  PhaseSummary summary(Phase p) const;
  std::string to_json() const;
  // The raw samples of one phase (ns), so that a job's percentiles can be taken over the
  // samples of all its ranks rather than averaged from per-rank percentiles.
  const std::vector<int64_t>& samples(Phase p) const { return samples_[static_cast<size_t>(p)]; }

 private:
  std::array<std::vector<int64_t>, static_cast<size_t>(Phase::count_)> samples_;
};

}  // namespace wireup
