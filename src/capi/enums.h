// The public enums of wireup.h beside the engine's: each value mapped by hand, so the
// engine's enums may change while the public values never do. The *_name() functions print
// the engine's own names, so that logs, wireup_stats_json() and the C API agree.
#pragma once

#include <optional>

#include "wireup/engine_types.h"
#include "wireup/wireup.h"

namespace wireup::capi {

wireup_error_kind_t to_public(cm::FailKind k);
std::optional<cm::FailKind> from_public(wireup_error_kind_t k);
wireup_ece_outcome_t to_public(ece::Outcome o);
std::optional<ece::Outcome> from_public(wireup_ece_outcome_t o);
// The reason the peer's REJ carried: one we know, NONE without one, UNKNOWN for a wireup REJ
// with a reason this library does not know.
wireup_reject_reason_t peer_reason_of(const PeerError& e);
wireup_reject_reason_t to_public(RejectCode c);

}  // namespace wireup::capi
