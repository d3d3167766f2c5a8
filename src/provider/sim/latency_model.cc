#include "provider/sim/latency_model.h"

#include <algorithm>
#include <cstdio>

namespace wireup::prov::sim {

using std::chrono::microseconds;
using std::chrono::milliseconds;

Nanos LatencyModel::cm_time(int t) { return milliseconds(int64_t{1} << std::max(t - 8, 0)); }

Nanos LatencyModel::cm_attempt_timeout() const {
  return 2 * cm_time(packet_lifetime) + cm_time(cm_response_timeout);
}

Nanos LatencyModel::mra_timeout() const {
  return cm_time(mra_service_timeout) + cm_time(packet_lifetime + 1);
}

Nanos LatencyModel::timewait() const { return cm_time(packet_lifetime + 1); }

// Sources: shared/notes/latency-figures.md. "VM" = cmtime (rdma-core 44) client, 256
// connections, soft-RoCE in qemu TCG with 2 vCPUs, 2026-11-29, total/256 per connection.
LatencyModel LatencyModel::rxe_vm() {
  LatencyModel m;
  m.create_id = microseconds(16);      // VM cmtime "create id" 4.1 ms / 256
  m.bind = microseconds(30);           // VM cmtime "bind" 7.7 ms / 256
  m.resolve_addr = microseconds(41);   // VM cmtime "resolve addr" 10.5 ms / 256
  m.resolve_route = microseconds(27);  // VM cmtime "resolve route" 7.0 ms / 256
  m.create_qp = microseconds(192);     // VM cmtime "create qp" 49.2 ms / 256
  m.destroy_id = microseconds(16);     // VM cmtime "destroy" 4.0 ms / 256
  // Not measured on its own anywhere: assumed a quarter of a QP creation. A parameter.
  m.modify_qp = microseconds(48);
  m.destroy_qp = microseconds(16);     // not measured: assumed like destroy id
  // Derived from VM cmtime "connect" 1484 us per connection amortized: three rdma_cm events
  // per connection (CONNECT_REQUEST, the active side's answer, ESTABLISHED) after four QP
  // modifies: (1484 - 4 x 48) / 3 ~ 430 us.
  m.cpu_per_event = microseconds(430);
  // Derived from the VM's fastest single connect, 14.7 ms = REQ + REP one way, two events,
  // four modifies: (14700 - 2 x 430 - 4 x 48) / 2 ~ 6.8 ms.
  m.cm_message = microseconds(6800);
  // alloc_pd, create_cq, reg_mr: not measured; 0 (one per process, not per connection).
  return m;
}

// Hardware: rdma-core PR #1448 (cmtime, 1,000 connections, hardware not stated) is the only
// published per-step source; the other costs are the VM values scaled by the hardware/VM ratio
// of rdma_create_id (1 us / 16 us), i.e. divided by 16, and marked "derived".
LatencyModel LatencyModel::hardware() {
  LatencyModel m;
  m.create_id = microseconds(1);      // rdma-core PR #1448: rdma_create_id ~1 us/conn
  m.bind = microseconds(2);           // derived: VM 30 us / 16
  m.resolve_addr = microseconds(3);   // derived: VM 41 us / 16
  m.resolve_route = microseconds(2);  // derived: VM 27 us / 16
  // Per-call ibv_create_qp / ibv_modify_qp on ConnectX: not found (latency-figures.md).
  m.create_qp = microseconds(12);     // derived: VM 192 us / 16
  m.modify_qp = microseconds(3);      // derived: VM assumption 48 us / 16
  m.destroy_qp = microseconds(1);     // derived: VM 16 us / 16
  m.destroy_id = microseconds(1);     // derived: VM cmtime "destroy" 16 us / 16
  // rdma-core PR #1448: full rdma_cm connect, 1,000 connections, 889 us per connection
  // amortized; three events per connection after four modifies: (889 - 4 x 3) / 3 ~ 292 us.
  m.cpu_per_event = microseconds(292);
  // One-way CM MAD latency on hardware: not found. Assumed 20 us (a UD MAD through two
  // kernels' MAD layers); calibrate it when a measurement exists.
  m.cm_message = microseconds(20);
  return m;
}

LatencyModel LatencyModel::zero() { return LatencyModel{}; }

std::string LatencyModel::describe() const {
  auto us = [](Nanos n) { return static_cast<long long>(n.count() / 1000); };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "create_id %lld us, bind %lld us, resolve_addr %lld us, resolve_route %lld us, "
                "create_qp %lld us, modify_qp %lld us, cm_message %lld us, cpu_per_event %lld us, "
                "cm timeout %d, packet lifetime %d, retries %d (attempt %lld ms)",
                us(create_id), us(bind), us(resolve_addr), us(resolve_route), us(create_qp),
                us(modify_qp), us(cm_message), us(cpu_per_event), cm_response_timeout,
                packet_lifetime, max_cm_retries,
                static_cast<long long>(cm_attempt_timeout().count() / 1000000));
  return buf;
}

}  // namespace wireup::prov::sim
