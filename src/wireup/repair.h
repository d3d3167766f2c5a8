// The RTU repair protocol, both sides, as pure decisions (the engine carries them out).
//
// The IB CM's last message, the RTU, is not acknowledged: the active side is established as
// soon as it has sent it. If every RTU is lost, and with it every REP retransmission that
// would make the active CM send it again, the passive side's REP retries run out and it gets
// UNREACHABLE; its CM tells the active side nothing (cm.c cm_process_send_error: on
// IB_CM_REP_ERROR the id goes idle, no REJ; the sim does the same). Left alone, the active
// side reports the lane connected and the passive side reports it failed, and the transport's
// first send on it hangs.
//
// The passive side cannot tell a lost REP (the active side retries with a newer attempt) from
// a lost RTU (it never will), so it asks: a REQ without a QP to the active rank's listener,
// kind rtu_lost, naming the lane and the attempt. The active side always refuses it (there
// is no QP to connect) and says in the RejectCode what it did:
//   repair_accepted  it was established with that attempt and still wiring up: it tore the
//                    lane down and reconnects with a newer attempt (one of its max_attempts,
//                    so repairs cannot loop); the passive side waits for that attempt;
//   repair_pending   not established with that attempt: a newer one is coming anyway;
//   repair_refused   it cannot reconnect (wireup ended, the lane was handed over -- the
//                    transport took the QP or was given the result, ConnResult::handed_over
//                    --, or no attempts left) and reported the loss on its side (a
//                    SteadyEvent, or a PeerError);
//                    the passive side reports the pair failed too.
// A lane the transport may be using is never torn down: a result handed over (the C API
// marks every one it hands over, Engine::hand_over) may carry the transport's work already on
// its QP, and its owner holds it as connected. The lane is reported lost instead, and the QP stays the transport's.
// A notice that cannot be delivered is retried like a connect (max_attempts tries with
// backoff); REJ 8 after all of them means the active rank's listener is gone (its wireup
// ended and its rtu_linger ran out), and the passive side says so in its PeerError.
#pragma once

#include <cstdint>

#include "wireup/engine_types.h"
#include "wireup/pair_table.h"

namespace wireup::repair {

// --- the active side: answering a notice ------------------------------------------------------

struct ActiveView {
  PairState state = PairState::waiting;
  uint32_t attempt = 0;       // attempts made on the pair
  uint32_t max_attempts = 0;
  bool wiring_up = false;     // some planned pair of this rank is still open
  // Established, and the lane not handed over: the engine still has the QP (take_qp was not
  // called) and the result was not given to the transport (ConnResult::handed_over). Only
  // such a lane may be torn down.
  bool can_take_back = false;
};

enum class Action : uint8_t {
  none,                 // just answer
  abandon_and_retry,    // drop the attempt still in flight, schedule the next one
  abandon_and_give_up,  // drop it, no attempts left: the pair fails
  tear_down_and_retry,  // established, not handed over (can_take_back): tear down, reconnect
  tear_down_and_give_up,
  report_handed_over,   // the transport has the lane: tell it (SteadyEvent rtu_lost)
};

struct Answer {
  RejectCode code = RejectCode::repair_pending;
  Action action = Action::none;
  const char* why = "";
};

Answer answer(const ActiveView& v, uint32_t notice_attempt);

// --- the passive side: what the answer to our notice means ----------------------------------

enum class Outcome : uint8_t {
  peer_reconnects,  // repair_accepted: wait for its newer attempt
  peer_retries,     // repair_pending: wait, as for any lost REP
  ask_again,        // not answered (or a transient refusal) and tries are left
  give_up,          // final: see cause
};

struct Settled {
  Outcome outcome = Outcome::ask_again;
  PeerError::Cause cause = PeerError::Cause::failed;  // give_up only
  RejectCode peer_code = RejectCode::none;
};

// `answer` is how the notice's connection failed (it always does: the answer is a REJ);
// `tries` how many notices were sent for this attempt.
Settled settle(const cm::Failure& answer, uint32_t tries, uint32_t max_attempts);

}  // namespace wireup::repair
