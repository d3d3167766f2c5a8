// The PMIx driver's checks after wireup (wireup_a2a_pmix_checks.cc): each among the live
// ranks, through the launcher's PMIx server.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "bootstrap/pmix_session.h"
#include "wireup/wireup.hpp"
#include "wireup_a2a.h"
#include "wireup_a2a_driver.h"
#include "wireup_a2a_rdma.h"

namespace wireup::a2a {

// The QPN cross-check: each live rank publishes what it recorded per (peer, lane), then reads
// what every other live rank recorded about it. The lanes lost on either end since they
// connected go into `x`, for the data checks.
void qpn_exchange(bootstrap::PmixSession& s, wireup::Wireup& e, const std::vector<uint32_t>& live, uint32_t lanes,
                  CheckCounts& c, Excluded& x);
// The SEND both ways over every lane to a live peer that `skip` does not have.
Problem data_exchange(const Options& o, RdmaRank& rr, bootstrap::PmixSession& s, const std::vector<uint32_t>& live,
                      const Excluded& skip, CheckCounts& c);
// RDMA WRITE and READ both ways over the same lanes.
Problem one_sided_exchange(const Options& o, RdmaRank& rr, bootstrap::PmixSession& s,
                           const std::vector<uint32_t>& live, const Excluded& skip, CheckCounts& c);
// Every live rank's report to rank `live[0]`, which prints the summary; the job's exit status,
// the same on every live rank.
int summarize_job(bootstrap::PmixSession& s, const RankReport& rep, const std::vector<uint32_t>& live,
                  const JobInfo& job, bool json);

}  // namespace wireup::a2a
