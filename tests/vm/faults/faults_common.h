// Shared pieces of the real-stack fault scenarios (tests/vm/faults, run inside the soft-RoCE
// VM on the rdma provider): engine options tuned for TCG, a driver for many engines in one
// process, and the checks every scenario makes.
#pragma once

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "provider/provider.h"
#include "qp/factory.h"
#include "wireup/engine.h"
#include "wireup/options.h"

namespace wireup::vmfaults {

constexpr uint64_t kJobKey = 0xfa0175fa0175ULL;

struct Rank {
  std::unique_ptr<qp::DefaultQpFactory> factory;  // declared first: outlives the engine's QPs
  std::unique_ptr<Engine> engine;
  std::unique_ptr<std::vector<SteadyEvent>> steady = std::make_unique<std::vector<SteadyEvent>>();
  bool frozen = false;  // never progressed (a listener that never accepts)
};

// Options for the VM: resolve and QP timeouts that TCG does not trip, few connects in flight,
// ECE off (rxe has none), and `timeout` for the whole wireup.
EngineOptions vm_options(uint32_t rank, uint32_t nranks, uint32_t lanes, const prov::SockAddr& listen,
                         Nanos timeout);

// Creates rank `rank`'s engine on `p`, recording its steady-channel events.
Status make_rank(prov::Provider& p, Rank& r, const EngineOptions& o);

// Progresses every engine that is not frozen until all of them are done, or `bound` passes.
Status run(prov::Provider& p, std::vector<Rank>& ranks, Nanos bound);

// Progresses for `d` more (steady events after wireup).
void linger(prov::Provider& p, std::vector<Rank>& ranks, Nanos d);

// A failed check: printed at once, counted for the exit status.
struct Checks {
  int failed = 0;
  void expect(bool ok, const std::string& what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what.c_str());
      ++failed;
    }
  }
};

// Every pair between ranks outside `skip` connected on both sides, with crossed QPNs and
// opposite roles, and no error between them.
void expect_connected(Checks& c, const std::vector<Rank>& ranks, uint32_t lanes, const std::set<uint32_t>& skip);

// "min / median / max ms" of a set of durations.
std::string spread(std::vector<Nanos> v);

// The IB CM's counters of port 1 of DEV: /sys/class/infiniband/DEV/ports/1/GROUP/MSG, summed
// over MSG when MSG is empty (GROUP: cm_tx_msgs, cm_tx_retries, cm_rx_msgs, cm_rx_duplicates);
// -1 if unreadable.
long cm_counter(const std::string& dev, const std::string& group, const std::string& msg = "");

}  // namespace wireup::vmfaults
