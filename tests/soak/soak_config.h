// What one soak run does, drawn from its seed alone: job shape, engine windows, the fault
// plan of the simulated fabric, and which rank dies or loses its device when. Pure: the same
// seed always gives the same RunConfig (std::mt19937_64 + libstdc++'s distributions).
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"

namespace wireup::soak {

enum class Death : uint8_t {
  none,
  crash,  // the node goes silent (SimFabric::kill_node): no REJ, no DREQ, nothing answers
  kill,   // the process dies: its engine is destroyed, so the CM sends REJ/DREQ for its ids
};
const char* to_string(Death d);

struct RunConfig {
  uint64_t seed = 0;
  uint32_t ranks = 0;           // 3..24
  uint32_t lanes = 0;           // 1..3
  uint32_t connect_window = 0;
  uint32_t qp_window = 0;
  uint32_t max_attempts = 0;
  int latency = 0;              // 0 hardware(), 1 rxe_vm(), 2 zero()
  // Every CM message.
  double loss = 0, duplicate = 0;
  Nanos delay{0}, jitter{0};
  // Forced rejects of new REQs: reason 28 everywhere, and reason 8 for REQs to one node.
  double reject28 = 0;
  double reject8 = 0;
  uint32_t reject8_node = 0;
  double addr_error = 0, route_error = 0;
  // A bad spell: messages of some types between two nodes (or anywhere) lost with flap_drop
  // from flap_from to flap_until, in both directions. Long enough, it runs REQ or REP
  // retransmissions out (UNREACHABLE) while the other side holds a half-open attempt.
  bool flap = false;
  int64_t flap_a = -1, flap_b = -1;  // -1: any node
  uint32_t flap_types = 0;           // prov::sim::msg_bit mask
  double flap_drop = 0;
  Nanos flap_from{0}, flap_until{0};
  Death death = Death::none;
  uint32_t victim = 0;
  Nanos death_at{0};
  bool removal = false;         // device 0 of removal_rank goes away at removal_at
  uint32_t removal_rank = 0;
  Nanos removal_at{0};
  Nanos wireup_timeout{0};
  Nanos close_drain{0};

  std::string describe() const;
};

// The run of `seed`.
RunConfig draw(uint64_t seed);

}  // namespace wireup::soak
