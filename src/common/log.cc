#include "common/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace wireup::log {
namespace {

Level from_env() {
  const char* v = std::getenv("WIREUP_LOG");
  if (v == nullptr) return Level::warn;
  static const char* names[] = {"error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 5; ++i)
    if (std::strcmp(v, names[i]) == 0) return static_cast<Level>(i);
  std::fprintf(stderr, "wireup: WIREUP_LOG=%s is not one of error|warn|info|debug|trace; using warn\n", v);
  return Level::warn;
}

std::atomic<int>& current() {
  static std::atomic<int> lvl{static_cast<int>(from_env())};
  return lvl;
}

}  // namespace

Level level() { return static_cast<Level>(current().load(std::memory_order_relaxed)); }
void set_level(Level l) { current().store(static_cast<int>(l)); }

void write(Level l, const char* file, int line, const std::string& msg) {
  static const char* tags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
  const char* base = std::strrchr(file, '/');
  std::fprintf(stderr, "wireup %s %s:%d %s\n", tags[static_cast<int>(l)], base ? base + 1 : file, line,
               msg.c_str());
}

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return fmt;
  return std::string(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}

}  // namespace wireup::log
