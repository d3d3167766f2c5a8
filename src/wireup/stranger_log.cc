#include "wireup/stranger_log.h"

namespace wireup {

StrangerLog::Verdict StrangerLog::note(const std::string& source) {
  std::string host = source.substr(0, source.rfind(':'));
  if (hosts_.count(host) != 0) return Verdict::seen;
  if (hosts_.size() >= capacity_) {
    ++unlogged_;
    return Verdict::unlogged;
  }
  hosts_.insert(std::move(host));
  return Verdict::log;
}

}  // namespace wireup
