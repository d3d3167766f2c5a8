// The process's rank on its node: given explicitly, by config device.local_rank, or by the
// launcher (Open MPI, MPICH/Hydra, Slurm, PMIx). A launcher variable that is set but is not
// a local rank is an error naming the variable, never a silent 0 or "unknown".
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace wireup::host {

// The launcher variables, in the order they are read.
inline constexpr const char* kLocalRankVars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                                 "PMIX_LOCAL_RANK"};
inline constexpr int kMaxLocalRank = 65535;  // as config device.local_rank

struct LocalRank {
  int value = -1;       // < 0: unknown (no source gave one)
  std::string source;   // "--local-rank", "device.local_rank", "env SLURM_LOCALID", "none: ..."
};

// Reads a variable: nullptr when unset. Injected so tests control the environment.
using GetEnv = std::function<const char*(const char*)>;
GetEnv process_getenv();

// Strict: decimal digits only, 0..kMaxLocalRank; the error names `what` and the text.
Result<int> parse_local_rank(const std::string& what, const std::string& text);

// explicit_rank >= 0 wins, then config_rank >= 0 (device.local_rank), then the first launcher
// variable that is set. "none" is not an error: ranking goes on without spreading.
Result<LocalRank> resolve_local_rank(int explicit_rank, const char* explicit_source, int config_rank,
                                     const GetEnv& env);

}  // namespace wireup::host
