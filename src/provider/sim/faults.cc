#include "provider/sim/faults.h"

namespace wireup::prov::sim {

const char* to_string(CmMsg m) {
  static const char* names[] = {"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP"};
  auto i = static_cast<size_t>(m);
  return i < std::size(names) ? names[i] : "?";
}

bool FaultInjector::chance(double p) {
  if (p <= 0) return false;
  if (p >= 1) return true;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p;
}

Nanos FaultInjector::jitter(Nanos max) {
  if (max <= Nanos{0}) return Nanos{0};
  return Nanos(static_cast<int64_t>(rng_() % (static_cast<uint64_t>(max.count()) + 1)));
}

namespace {
bool matches(int64_t want, uint32_t node) { return want < 0 || static_cast<uint32_t>(want) == node; }
}  // namespace

MessageFate FaultInjector::message(CmMsg type, uint32_t src, uint32_t dst, Nanos now, uint32_t dst_ip) {
  MessageFate f;
  double loss = plan_.loss;
  double dup = plan_.duplicate;
  Nanos delay = plan_.delay;
  Nanos jit = plan_.jitter;
  rule_hits_.resize(plan_.rules.size(), 0);
  for (size_t i = 0; i < plan_.rules.size(); ++i) {
    const MessageRule& r = plan_.rules[i];
    if (!(r.types & msg_bit(type)) || !matches(r.src_node, src) || !matches(r.dst_node, dst) ||
        (r.dst_ip != 0 && r.dst_ip != dst_ip) ||
        now < r.from || now >= r.until || (r.max_hits >= 0 && rule_hits_[i] >= r.max_hits))
      continue;
    ++rule_hits_[i];
    // A rule adds to the global plan: a lossy link on top of a lossy fabric.
    loss = 1 - (1 - loss) * (1 - r.drop);
    dup = 1 - (1 - dup) * (1 - r.duplicate);
    delay += r.delay;
    jit += r.jitter;
    break;
  }
  f.lost = chance(loss);
  if (f.lost) return f;
  f.extra = delay + jitter(jit);
  f.duplicated = chance(dup);
  if (f.duplicated) f.dup_extra = delay + jitter(jit);
  return f;
}

int FaultInjector::forced_reject(uint32_t src, uint32_t dst) {
  reject_hits_.resize(plan_.rejects.size(), 0);
  for (size_t i = 0; i < plan_.rejects.size(); ++i) {
    const ForcedReject& r = plan_.rejects[i];
    if (!matches(r.src_node, src) || !matches(r.dst_node, dst) || (r.max_hits >= 0 && reject_hits_[i] >= r.max_hits))
      continue;
    if (!chance(r.probability)) return 0;
    ++reject_hits_[i];
    return r.reason;
  }
  return 0;
}

}  // namespace wireup::prov::sim
