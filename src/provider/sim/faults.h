// Faults of the simulated fabric. Everything random is drawn from the fabric's one seeded
// generator in event order, so a run is reproduced from its seed and its inputs alone.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/clock.h"

namespace wireup::prov::sim {

// IB CM messages (MADs) the fabric carries.
enum class CmMsg : uint8_t { req, mra, rej, rep, rtu, dreq, drep };
const char* to_string(CmMsg m);
inline constexpr uint32_t msg_bit(CmMsg m) { return 1u << static_cast<unsigned>(m); }
inline constexpr uint32_t kAllMsgs = 0x7f;

inline constexpr Nanos kForever = Nanos::max();

// Applies to CM messages matching type, endpoints and time window.
struct MessageRule {
  uint32_t types = kAllMsgs;  // msg_bit(...) mask
  int64_t src_node = -1;      // -1: any
  int64_t dst_node = -1;
  uint32_t dst_ip = 0;        // 0: any; else only messages to this address (host order,
                              // spec.h's sim_ipv4): one device of the node, as one rail
  Nanos from{0};              // sent at or after
  Nanos until = kForever;     // sent before
  double drop = 0;            // probability that a matching message is lost
  double duplicate = 0;       // probability that it arrives twice
  Nanos delay{0};             // added to its flight time
  Nanos jitter{0};            // plus a uniform draw in [0, jitter]
  int64_t max_hits = -1;      // the rule applies to at most this many messages (-1: no limit)
};

// The passive CM answers a new REQ with a REJ of `reason` instead of a CONNECT_REQUEST.
struct ForcedReject {
  int64_t src_node = -1;
  int64_t dst_node = -1;
  int reason = 28;            // 8 no listener, 28 consumer, 35 vendor option, ...
  double probability = 1;
  int64_t max_hits = -1;
};

struct NodeDeath {
  uint32_t node = 0;
  Nanos at{0};                // from then on the node neither sends nor answers
};

struct DeviceRemoval {
  uint32_t node = 0;
  uint32_t device = 0;
  Nanos at{0};                // DEVICE_REMOVAL on every id bound to it, its QPs to ERR
};

struct FaultPlan {
  // Every CM message: loss and duplication probabilities, extra delay plus uniform jitter.
  double loss = 0;
  double duplicate = 0;
  Nanos delay{0};
  Nanos jitter{0};
  std::vector<MessageRule> rules{};    // on top of the above, first match wins
  std::vector<ForcedReject> rejects{}; // first match wins
  std::vector<NodeDeath> deaths{};
  std::vector<DeviceRemoval> removals{};
  double addr_error = 0;   // probability that a resolve_addr times out (ADDR_ERROR)
  double route_error = 0;  // probability that a resolve_route times out (ROUTE_ERROR)
};

// What the fault plan decided for one message.
struct MessageFate {
  bool lost = false;
  bool duplicated = false;
  Nanos extra{0};      // added to the flight time of the (first) copy
  Nanos dup_extra{0};  // of the second copy
};

// Draws the plan's decisions. Draws happen only for probabilities strictly between 0 and 1,
// so a plan without random faults never touches the generator.
class FaultInjector {
 public:
  FaultInjector(FaultPlan plan, std::mt19937_64& rng) : plan_(std::move(plan)), rng_(rng) {}
  MessageFate message(CmMsg type, uint32_t src, uint32_t dst, Nanos now, uint32_t dst_ip = 0);
  // A forced reject reason for a new REQ from src to dst, or 0.
  int forced_reject(uint32_t src, uint32_t dst);
  bool addr_error() { return chance(plan_.addr_error); }
  bool route_error() { return chance(plan_.route_error); }
  const FaultPlan& plan() const { return plan_; }
  FaultPlan& plan() { return plan_; }

 private:
  bool chance(double p);
  Nanos jitter(Nanos max);

  FaultPlan plan_;
  std::mt19937_64& rng_;
  std::vector<int64_t> rule_hits_;
  std::vector<int64_t> reject_hits_;
};

}  // namespace wireup::prov::sim
