// Minimal leveled logging to stderr. WIREUP_LOG=error|warn|info|debug|trace sets the level
// (default warn). Logging is a side channel: nothing in the library depends on it.
#pragma once

#include <cstdio>
#include <string>

namespace wireup::log {

enum class Level : int { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

Level level();
void set_level(Level l);
void write(Level l, const char* file, int line, const std::string& msg);
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace wireup::log

#define WIREUP_LOG(lvl, ...)                                                        \
  do {                                                                              \
    if (static_cast<int>(::wireup::log::Level::lvl) <= static_cast<int>(::wireup::log::level())) \
      ::wireup::log::write(::wireup::log::Level::lvl, __FILE__, __LINE__,           \
                           ::wireup::log::format(__VA_ARGS__));                     \
  } while (0)
