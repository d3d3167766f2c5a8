// What to inject and what was seen: a count of calls per kind (and of the distinct places in
// the code that made them), and at most one target, "fail the n-th call of this kind". A plan
// without a target only counts: a sweep runs a scenario once so, then once per (kind, n).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "common/status.h"
#include "fault/kinds.h"

namespace wireup::fault {

struct Target {
  Kind kind;
  uint64_t n;  // 1-based: the n-th call of `kind` fails
};

class Plan {
 public:
  Plan() = default;
  explicit Plan(Target t) : target_(t) {}

  // Every wrapped call asks this once, before the real call: true when this one is to fail.
  // `site`: the caller's return address, to count the distinct places that make the call.
  bool hit(Kind k, const void* site);
  // A disarmed plan neither counts nor fails anything: a check after the scenario (its own
  // SENDs, its teardown) runs on the provider unhindered.
  void set_armed(bool on) { armed_ = on; }
  // The error the real library gives for a failure of `k` (Kind's errno and call name).
  static Error error(Kind k, std::string peer = {});

  uint64_t calls(Kind k) const { return calls_[static_cast<size_t>(k)]; }
  size_t sites(Kind k) const { return sites_[static_cast<size_t>(k)].size(); }
  bool injected() const { return injected_; }
  const std::optional<Target>& target() const { return target_; }
  std::string describe() const;  // "create_qp #3 (ibv_create_qp: ENOMEM)" or "counting"

 private:
  std::optional<Target> target_;
  std::array<uint64_t, kKindCount> calls_{};
  std::array<std::set<const void*>, kKindCount> sites_{};
  bool injected_ = false;
  bool armed_ = true;
};

}  // namespace wireup::fault
