// The smallest struct_size the library takes for each caller-allocated struct: the end of its
// last field in the first layout shipped (wireup 0.1.0). Never raise these: a program built
// against those headers passes exactly that much. A field appended later is past them, and
// the library gives it its default when the caller's struct stops short of it.
#pragma once

#include <cstddef>

#include "wireup/wireup.h"

namespace wireup::capi {

// Where field f of T ends.
#define WIREUP_END_OF(T, f) (offsetof(T, f) + sizeof(T::f))

inline constexpr size_t kFirstContextParams = WIREUP_END_OF(wireup_context_params_t, listen_ip);
inline constexpr size_t kFirstParams = WIREUP_END_OF(wireup_params_t, qp_arg);
inline constexpr size_t kFirstResult = WIREUP_END_OF(wireup_result_t, qp_min_rnr_timer);
inline constexpr size_t kFirstPeerError = WIREUP_END_OF(wireup_peer_error_t, status);
inline constexpr size_t kFirstCounters = WIREUP_END_OF(wireup_counters_t, lanes_closed);
inline constexpr size_t kFirstTally = WIREUP_END_OF(wireup_tally_t, key_name);

}  // namespace wireup::capi
