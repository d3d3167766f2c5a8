// The time model of the simulated fabric: per-step costs and the IB CM protocol timers.
//
// How the costs are charged (see core.cc):
//  - synchronous verbs/CM calls (create id, bind, create/modify QP, destroy) occupy the calling
//    node's CPU: node.cpu_free = max(now, node.cpu_free) + cost; whatever the node sends next
//    leaves at cpu_free;
//  - resolve_addr / resolve_route complete `cost` after the call, without occupying the CPU
//    (the kernel resolves in a worker);
//  - a CM message arrives `cm_message` after it leaves (plus the fault plan's delay/jitter);
//  - every rdma_cm event costs `cpu_per_event` of the receiving node's CPU before it becomes
//    visible on its channel (the kernel + library + engine work per event).
// The data path (SEND/RECV) is instantaneous: it exists to check connections, not to model
// bandwidth.
#pragma once

#include <chrono>
#include <string>

#include "common/clock.h"

namespace wireup::prov::sim {

struct LatencyModel {
  // --- per-step costs -----------------------------------------------------------------------
  Nanos create_id{0};
  Nanos bind{0};
  Nanos resolve_addr{0};
  Nanos resolve_route{0};
  Nanos create_qp{0};
  Nanos modify_qp{0};
  Nanos destroy_qp{0};
  Nanos destroy_id{0};
  Nanos alloc_pd{0};
  Nanos create_cq{0};
  Nanos reg_mr{0};
  Nanos cm_message{0};      // one-way IB CM MAD, sender's CM to receiver's CM
  Nanos cpu_per_event{0};   // per rdma_cm event at the receiving node

  // --- IB CM protocol constants (Linux drivers/infiniband/core) -----------------------------
  int cm_response_timeout = 20;  // cma.c CMA_CM_RESPONSE_TIMEOUT: 4.096 us * 2^20 ~ 4 s
  // cma.c CMA_IBOE_PACKET_LIFETIME: 18 in Debian 12's Linux 6.1 (the VM measured ~6.1 s per
  // REQ attempt, which is 2 x 2^10 ms + 2^12 ms), 16 in later kernels.
  int packet_lifetime = 18;
  int max_cm_retries = 15;       // cma.c CMA_MAX_CM_RETRIES
  int mra_service_timeout = 24;  // cma.c CMA_CM_MRA_SETTING (IB_CM_MRA_FLAG_DELAY | 24), ~68 s

  // cm.c cm_convert_to_ms(): 4.096 us * 2^t, approximated as 2^(t - 8) ms.
  static Nanos cm_time(int t);
  // Per-attempt timeout of a REQ, REP or DREQ: 2 x packet lifetime + response timeout
  // (cm.c ib_send_cm_req: timeout_ms). 6.144 s with the defaults; 16 attempts before the
  // sender gives up (UNREACHABLE after ~98.3 s).
  Nanos cm_attempt_timeout() const;
  // How long an MRA extends the peer's wait: service timeout + av timeout (cm.c cm_mra_handler).
  Nanos mra_timeout() const;
  // TIMEWAIT duration: the av timeout, packet lifetime + 1 (cm.c cm_enter_timewait).
  Nanos timewait() const;

  // Defaults for projections: published hardware figures where they exist, otherwise
  // derived from the VM measurements (each value's source is next to it in the .cc).
  static LatencyModel hardware();
  // The soft-RoCE VM as measured (qemu TCG, 2 vCPUs): useful for relative costs and to
  // compare sim and VM runs, not as hardware latencies.
  static LatencyModel rxe_vm();
  // Every step costs nothing; protocol timers keep their values (retransmissions still
  // happen in virtual time). For pure-logic tests.
  static LatencyModel zero();

  // One line per value, for logs and benchmark labels.
  std::string describe() const;
};

}  // namespace wireup::prov::sim
