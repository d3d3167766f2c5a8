#include "wireup/repair.h"

namespace wireup::repair {

Answer answer(const ActiveView& v, uint32_t notice_attempt) {
  const bool left = v.attempt < v.max_attempts;
  if (v.state == PairState::failed)
    return {RejectCode::repair_refused, Action::none, "this side gave up on the pair (see its errors)"};
  if (v.state == PairState::connecting && v.attempt == notice_attempt) {
    // Still connecting with the attempt the peer has given up on: a REP that arrives late
    // would make us established against a CM id that is gone.
    if (left) return {RejectCode::repair_pending, Action::abandon_and_retry, "attempt abandoned, a newer one follows"};
    return {RejectCode::repair_refused, Action::abandon_and_give_up, "no attempts left"};
  }
  if (v.state != PairState::established || v.attempt != notice_attempt)
    return {RejectCode::repair_pending, Action::none, "not established with that attempt: a newer attempt follows"};
  // Established with the attempt whose RTU the peer never got: no connection is behind our QP.
  if (v.wiring_up && v.can_take_back)
    return left ? Answer{RejectCode::repair_accepted, Action::tear_down_and_retry, "torn down, reconnecting"}
                : Answer{RejectCode::repair_refused, Action::tear_down_and_give_up, "no attempts left"};
  return {RejectCode::repair_refused, Action::report_handed_over, "handed over: reported to the transport"};
}

Settled settle(const cm::Failure& a, uint32_t tries, uint32_t max_attempts) {
  using C = PeerError::Cause;
  const RejectCode code = peer_reject_code(a);
  switch (code) {
    case RejectCode::repair_accepted: return {Outcome::peer_reconnects, C::failed, code};
    case RejectCode::repair_pending: return {Outcome::peer_retries, C::failed, code};
    case RejectCode::repair_refused: return {Outcome::give_up, C::rtu_peer_cannot_reconnect, code};
    case RejectCode::none:
    case RejectCode::local_failure:
    case RejectCode::shutting_down:
      break;  // not answered, or transient on the peer's side: ask again
    default:
      // An answer that is not about repairs (a peer that does not know the notice): final.
      return {Outcome::give_up, C::rtu_notice_refused, code};
  }
  if (tries < max_attempts) return {Outcome::ask_again, C::failed, code};
  const bool gone = a.kind == cm::FailKind::rejected && a.status == prov::reject_reason::no_listener;
  return {Outcome::give_up, gone ? C::rtu_listener_gone : C::rtu_notice_undeliverable, code};
}

}  // namespace wireup::repair
