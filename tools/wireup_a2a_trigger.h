// --run CMD --run-after-conns K [--run-rank R] (fault injection, tests only): one rank starts a
// command in the middle of its wireup, once K of its connections are established (say, `rdma
// link delete rxe1` to take a rail away while lanes are still connecting). The command runs
// under /bin/sh -c beside the rank, which keeps progressing meanwhile. On rxe, `rdma link
// delete` reaches the ranks mid-wireup (the rdma_cm's DEVICE_REMOVAL on every id of the
// device, ~40 connections after it started under TCG), but the command itself returns only
// once every process has closed the device (ib_uverbs_remove_one: rxe cannot disassociate a
// context), i.e. after the ranks exit: measured in the VM, 2026-12-05. So the wait after the
// close is short, and the command is left to finish after us.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "wireup_a2a.h"

namespace wireup::a2a {

// How long a rank waits for its command after its close (it then leaves it to init).
inline constexpr double kRunWaitS = 5;

class ConnTrigger {
 public:
  // Inert unless --run was given and `rank` is the rank to run it.
  ConnTrigger(const Options& o, int rank);
  ConnTrigger(const ConnTrigger&) = delete;
  ConnTrigger& operator=(const ConnTrigger&) = delete;
  ~ConnTrigger();
  // Starts the command the first time `established` reaches the count; says so on stderr.
  void poll(uint64_t established);
  // After the rank's close: waits for the command up to `timeout_s` and says how it ended, or
  // that it is left running (init reaps it after this process).
  void finish(double timeout_s);

 private:
  enum class State : uint8_t { inert, armed, running, ended };
  State state_ = State::inert;
  std::string cmd_;
  uint64_t after_ = 0;
  int rank_ = 0;
  pid_t pid_ = -1;
  double started_s_ = 0;  // CLOCK_REALTIME when it started
};

}  // namespace wireup::a2a
