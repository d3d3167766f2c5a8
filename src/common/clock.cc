#include "common/clock.h"

namespace wireup {

SteadyClock& SteadyClock::instance() {
  static SteadyClock clock;
  return clock;
}

}  // namespace wireup
