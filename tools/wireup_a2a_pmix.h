// The PMIx driver's entry (wireup_a2a_pmix.cc), built where OpenPMIx is (WIREUP_A2A_PMIX).
#pragma once

#include <memory>

#include "bootstrap/pmix_session.h"
#include "wireup_a2a.h"

namespace wireup::a2a {

// One rank under a PMIx launcher, with the session main() opened; no MPI call.
int run_pmix(const Options& o, std::unique_ptr<bootstrap::PmixSession> session);

}  // namespace wireup::a2a
