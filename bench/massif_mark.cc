#include "massif_mark.h"

#include <cstdlib>
#include <string>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define WIREUP_HAVE_VALGRIND 1
#endif

namespace wireup::bench {

void massif_snapshot() {
#ifdef WIREUP_HAVE_VALGRIND
  static int count = 0;
  const char* path = std::getenv("WIREUP_MASSIF_SNAPSHOT");
  if (path == nullptr || !RUNNING_ON_VALGRIND) return;
  const std::string cmd = "detailed_snapshot " + std::string(path) + "." + std::to_string(count++);
  VALGRIND_MONITOR_COMMAND(cmd.c_str());
#endif
}

}  // namespace wireup::bench
