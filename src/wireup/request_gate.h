// The request gate: what the passive side makes of a CONNECT_REQUEST, decided from its
// private data, the peer table, the plan and the pair's state alone, before anything is
// allocated for it. Pure: every stranger case is a row of a table test.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "wireup/pair_table.h"
#include "wireup/peer_table.h"
#include "wireup/private_data.h"
#include "wireup/wire.h"

namespace wireup {

struct GateContext {
  const Wire* wire = nullptr;  // the job's key: every message must authenticate under it
  uint32_t self = 0;
  uint32_t nranks = 0;
  uint32_t lanes = 0;
  const PeerTable* peers = nullptr;
  bool started = false;    // start() was called (before: the peer table may not be in yet)
  bool accepting = false;  // started and still wiring up (the setup channel is open)
  // On demand: any rank of the job may ask (the peer table may not list it, and roles come
  // from who asks): the engine checks the request against the pair, if there is one.
  bool on_demand = false;
};

enum class Admit : uint8_t {
  refuse,      // answer with a REJ carrying `code`
  connect,     // a planned peer's REQ for a pair we accept (on demand: any rank's): check_pair() next
  rtu_notice,  // a rtu_lost notice about a pair we initiate (repair.h)
  abandon,     // the active side of a pair we accept gave up on it (WireKind::abandon)
};

struct GateVerdict {
  Admit admit = Admit::refuse;
  WireHeader header;  // valid if `authentic`
  // The request authenticated under the job's key: our answer may name the pair and be
  // sealed (Wire::reject); otherwise only an unauthenticated refusal goes back.
  bool authentic = false;
  RejectCode code = RejectCode::none;
  std::string why;
  // A request that is not from a planned peer of this job (counted as a stranger), as
  // opposed to a planned peer's request that came at the wrong time.
  bool stranger() const {
    return admit == Admit::refuse && code != RejectCode::stale_attempt && code != RejectCode::duplicate &&
           code != RejectCode::shutting_down && code != RejectCode::local_failure &&
           code != RejectCode::crossed;
  }
};

// Who is asking: magic, version, the tag (job key), kind, destination, source rank, lane, role.
GateVerdict check_request(const GateContext& ctx, std::span<const uint8_t> private_data);

// Whether a planned peer's REQ (admit == connect) may go on, given the pair's state and the
// newest attempt seen: an older or equal attempt is stale, a connected lane a duplicate, a
// pair given up on is refused. On success the verdict stays `connect`.
GateVerdict check_pair(GateVerdict v, PairState state, uint32_t newest_attempt);

// The active side's check of a REP before its QP moves on: a wireup accept of this job, from
// `peer` to us, for `lane` and the `attempt` in flight, answering our REQ (its `nonce`).
// Anything else (a listener that is not wireup's, another job, a forged, stale, replayed or
// crossed answer) is an error saying what did not match.
Status check_reply(const GateContext& ctx, std::span<const uint8_t> private_data, uint32_t peer, uint32_t lane,
                   uint32_t attempt, uint64_t nonce);

}  // namespace wireup
