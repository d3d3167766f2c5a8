// wireup_a2a: the all-to-all runner (the project's main job). See wireup_a2a.h for the files
// and `wireup_a2a --help` for the usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "wireup_a2a.h"

int main(int argc, char** argv) {
  using namespace wireup::a2a;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return std::fputs(kUsage, stdout), 0;
  auto o = parse_options(argc, argv);
  if (!o) {
    // Under mpirun every rank sees the same bad command line: let one of them say so.
    const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
    if (r == nullptr || std::strcmp(r, "0") == 0)
      std::fprintf(stderr, "wireup_a2a: %s\n(try --help)\n", o.error().c_str());
    return 2;
  }
  if (o->provider == "sim") return run_sim(*o);
  return run_rdma(*o, argc, argv);
}
