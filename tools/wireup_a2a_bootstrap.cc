// --bootstrap: which out-of-band channel the rdma path uses. pmix needs a PMIx server (the
// launcher's); without one, or in a build without OpenPMIx, the run says so in one sentence
// and bootstraps through MPI instead.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "wireup_a2a.h"
#ifdef WIREUP_A2A_PMIX
#include "wireup_a2a_pmix.h"
#endif

namespace wireup::a2a {
namespace {

// Under a launcher every rank would say the same: rank 0 (or a singleton) speaks.
bool speaker() {
  for (const char* var : {"PMIX_RANK", "OMPI_COMM_WORLD_RANK"})
    if (const char* r = std::getenv(var); r != nullptr) return std::strcmp(r, "0") == 0;
  return true;
}

}  // namespace

int run_rdma(const Options& o, int& argc, char**& argv) {
  if (o.bootstrap == "mpi") return run_mpi(o, argc, argv);
#ifdef WIREUP_A2A_PMIX
  bootstrap::PmixSession::Opened s = bootstrap::PmixSession::open();
  if (s.state == bootstrap::PmixOpen::connected) return run_pmix(o, std::move(s.session));
  if (s.state == bootstrap::PmixOpen::failed) {
    // A server is there but does not work: falling back would hide a broken launch.
    std::fprintf(stderr, "wireup_a2a: bootstrap pmix failed: %s\n", s.why.c_str());
    return 1;
  }
  if (speaker())
    std::fprintf(stderr, "wireup_a2a: bootstrap pmix not available (%s): bootstrapping through MPI instead\n",
                 s.why.c_str());
#else
  if (o.bootstrap == "pmix" && speaker())
    std::fprintf(stderr, "wireup_a2a: bootstrap pmix not available (this wireup_a2a was built without OpenPMIx): "
                         "bootstrapping through MPI instead\n");
#endif
  return run_mpi(o, argc, argv);
}

}  // namespace wireup::a2a
