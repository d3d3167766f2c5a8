// The PMIx driver's exchanges through the launcher's PMIx server (wireup_a2a_pmix.cc uses
// them for every step): each rank publishes one record under a key, a fence, then each reads
// every member's; a barrier and an all-ranks verdict built on that. Every wait is bounded:
// the fence by the session's timeout, each Get by its own, and a failure names the ranks
// that did not answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/pmix_session.h"
#include "wireup_a2a_driver.h"

namespace wireup::a2a {

constexpr int kDirectGetTimeoutS = 10;  // a direct-modex Get (PMIX_TIMEOUT): the peer has committed

inline std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string text_of(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// Every member's record of `key` ("" for a rank not in `among`; all ranks when empty).
// `collect`: the fence collects (bulk); else each Get asks the peer's server (direct modex).
Expected<std::vector<std::string>> exchange(bootstrap::PmixSession& s, const std::string& key, const std::string& mine,
                                            const std::vector<uint32_t>& among, bool collect = true);
// A barrier that holds even where the launcher's fence does not (the .cc says where).
Problem barrier(bootstrap::PmixSession& s, const std::string& name, const std::vector<uint32_t>& among,
                bool collect = true);
// Every member says whether its step worked; false if any did not (its problem printed).
bool all_ok(bootstrap::PmixSession& s, const std::string& step, const Problem& p,
            const std::vector<uint32_t>& among = {}, bool collect = true);

}  // namespace wireup::a2a
