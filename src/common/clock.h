// Time source for engine logic: real (steady) or virtual (the sim fabric's clock).
// Engine code never reads the OS clock directly, so the same logic runs in virtual time.
#pragma once

#include <chrono>
#include <cstdint>

namespace wireup {

using Nanos = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now() const override {
    return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
  }
  static SteadyClock& instance();
};

}  // namespace wireup
