// One soak run: a job of RunConfig::ranks engines on a simulated fabric under the run's
// faults, driven to the end of wireup, checked, torn down, checked again.
//
// Invariants (each broken one is a line in RunReport::violations):
//  - no (peer, lane) appears twice in a rank's results, or both in its results and errors;
//  - every planned (peer, lane) of a live rank is in its results or in its errors, and every
//    error carries a reason (a FailKind other than none);
//  - a pair of two healthy ranks (alive, device present) is connected on both sides when the
//    run's wireup timeout cannot be reached; a pair connected on both sides has crossed QPNs
//    and opposite roles; one connected on one side only is allowed only where a timeout, a
//    death or a device removal explains it, or where both sides said so after the IB CM's
//    RTU gap: the passive side's PeerError is rtu_lost and the active side told its transport
//    (SteadyEvent rtu_lost), or the active side's listener was gone (REJ 8 to every notice:
//    its wireup and linger had ended, nothing can reach it); an UNREACHABLE left unrepaired
//    on the passive side of a pair the active side holds (the old gap) is a violation;
//  - every QP in the results is at RTS when queried (ERR on a removed device), and the fabric
//    holds exactly the QPs and CM ids the results hold (SimStats qps_alive, ids_alive): every
//    other QP and id was destroyed; no retrieved event is left un-acked;
//  - after close() and destruction: no id, QP, CQ, PD, MR or channel alive, no un-acked event,
//    no id destroyed with an un-acked event, no channel destroyed with ids on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/soak/soak_config.h"

namespace wireup::soak {

struct RunReport {
  std::vector<std::string> violations;
  uint64_t digest = 0;        // results, errors and fabric counters: equal for equal runs
  uint64_t connections = 0;   // endpoints in the results of live ranks
  uint64_t failed = 0;        // PeerErrors of live ranks
  uint64_t retries = 0;
  uint64_t unconfirmed = 0;   // pairs established on the active side only (see soak_run.cc)
  uint64_t rtu_reported = 0;  // of those, both sides reported the loss (SteadyEvent + PeerError)
  uint64_t rtu_unheard = 0;   // of those, the active side's listener was gone (REJ 8)
  uint64_t repairs = 0;       // lanes the active side tore down and reconnected
  uint64_t rtu_notices = 0;   // rtu_lost notices sent (every try)
  uint64_t fabric_events = 0;
  double virtual_s = 0;       // virtual time at the end of wireup
  bool death_applied = false; // the death / removal happened before the wireup ended
  bool removal_applied = false;
};

RunReport run(const RunConfig& c, bool verbose);

}  // namespace wireup::soak
