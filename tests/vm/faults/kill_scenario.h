// A rank SIGKILLed in the middle of wireup, one process per rank (tests/vm/faults).
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"

namespace wireup::vmfaults {

// Forks `ranks` processes with one engine each on `addr`; kills `victim` once `after` of its
// pairs are connected; checks what the survivors report. Exit status as vm_faults's.
int kill_scenario(const std::string& addr, uint32_t ranks, uint32_t lanes, uint32_t victim, uint32_t after,
                  Nanos timeout);

}  // namespace wireup::vmfaults
