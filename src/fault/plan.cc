#include "fault/plan.h"

#include <cstring>

#include "common/log.h"

namespace wireup::fault {

bool Plan::hit(Kind k, const void* site) {
  if (!armed_) return false;
  const size_t i = static_cast<size_t>(k);
  const uint64_t n = ++calls_[i];
  sites_[i].insert(site);
  if (!target_ || target_->kind != k || target_->n != n) return false;
  injected_ = true;
  WIREUP_LOG(info, "fault: injecting %s", describe().c_str());
  return true;
}

Error Plan::error(Kind k, std::string peer) {
  const KindInfo& ki = info(k);
  Error e = Error::from_errno(std::string(ki.call), ki.err, "injected fault");
  if (!peer.empty()) e.peer = std::move(peer);
  return e;
}

std::string Plan::describe() const {
  if (!target_) return "counting";
  const KindInfo& ki = info(target_->kind);
  return std::string(ki.name) + " #" + std::to_string(target_->n) + " (" + std::string(ki.call) + ": " +
         std::strerror(ki.err) + ")";
}

}  // namespace wireup::fault
