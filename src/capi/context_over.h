// A C API context over a provider the caller already has, instead of the rdma provider that
// wireup_context_create opens: how tests run the C API, unchanged, on the simulated fabric
// (src/testsupport/capi_seam.h). Not in the public headers. Nothing here names a provider:
// libwireup.a holds this and stays free of the simulator.
#pragma once

#include <memory>

#include "capi/qp_adapter.h"
#include "wireup/wireup.h"

namespace wireup::capi {

// Where the context sits: the provider and device it uses (both outlive the context) and
// the adapter saying what the transport's ibv_context / ibv_qp are there.
struct ProviderSeat {
  prov::Provider& provider;
  prov::Device& device;
  std::unique_ptr<QpAdapter> qps;
};

// wireup_context_create on `seat` instead of the rdma provider: the same configuration,
// environment and local rank; the device is seat.device (no ranking) and params->listen_ip
// is required (no sysfs lookup). params->provider is ignored. Errors as
// wireup_context_create, recorded for wireup_last_error(NULL).
wireup_status_t context_create_over(const wireup_context_params_t* params, ProviderSeat seat, wireup_context_t** out);

}  // namespace wireup::capi
