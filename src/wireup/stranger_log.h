// Which stranger sources were logged already: one line per source host (not per port: every
// request comes from a new id and port), so that a flood from one host cannot flood the log.
// Bounded: past `capacity` distinct hosts nothing more is remembered or logged, only counted,
// so a flood from ever-new addresses grows neither memory nor the log.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_set>

namespace wireup {

class StrangerLog {
 public:
  static constexpr size_t kDefaultCapacity = 256;
  explicit StrangerLog(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  enum class Verdict : unsigned char { log, seen, unlogged };
  // `source` as "host:port"; the port is ignored.
  Verdict note(const std::string& source);
  size_t remembered() const { return hosts_.size(); }
  size_t unlogged() const { return unlogged_; }

 private:
  size_t capacity_;
  size_t unlogged_ = 0;
  std::unordered_set<std::string> hosts_;
};

}  // namespace wireup
