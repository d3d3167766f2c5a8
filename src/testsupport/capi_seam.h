// The C API over a provider of the seam, for tests: the simulated fabric runs the C API's own
// code (handles, factory, hand-over, results, events) unchanged, so what a transport sees can
// be tested with faults the real stack cannot script (every RTU lost, say).
//
// On such a context the transport's `struct ibv_context*` is the request's prov::Device and
// its `struct ibv_qp*` a prov::Qp that the transport made through the seam (on a PD of that
// device) and owns; seam_device() / seam_qp() / as_ibv_qp() convert. Nothing of this is in
// libwireup.a: it lives in the test-support library with the simulator.
#pragma once

#include <functional>
#include <vector>

#include "capi/context_over.h"
#include "common/status.h"
#include "provider/sim/fabric.h"

namespace wireup::capi_seam {

inline prov::Device* seam_device(ibv_context* c) { return reinterpret_cast<prov::Device*>(c); }
inline prov::Qp* seam_qp(ibv_qp* q) { return reinterpret_cast<prov::Qp*>(q); }
inline ibv_qp* as_ibv_qp(prov::Qp* q) { return reinterpret_cast<ibv_qp*>(q); }

// The adapter for such QPs: the QP must be on the request's device and in RESET.
std::unique_ptr<capi::QpAdapter> seam_qp_adapter();

// A context on `dev` of `p` (both outlive it), listening on params->listen_ip (required).
wireup_status_t context_create(prov::Provider& p, prov::Device& dev, const wireup_context_params_t* params,
                               wireup_context_t** out);

struct DriveOptions {
  Nanos bound{0};  // of virtual time: fails with timed_out when it passes first
  // Also wait out each handle's RTU linger (done and its setup channel closed), as a
  // transport's event loop that keeps calling wireup_progress() after wireup_done().
  bool until_setup_closed = false;
  // Called after every round of wireup_progress() calls (a transport reading its results).
  std::function<void()> after_round;
  // And until this holds too (on demand: a peer has seen a disconnect, say), if set.
  std::function<bool()> until;
};

// Calls wireup_progress() on every handle (all on `fab`) until each is done, advancing the
// fabric's virtual clock to the next CM message or engine timer whenever no handle had work.
// A failing wireup_progress() fails the drive with its message.
Status drive(prov::sim::SimFabric& fab, const std::vector<wireup_t*>& handles, const DriveOptions& o);

}  // namespace wireup::capi_seam
