// A provider that wraps another (rdma or sim) and fails chosen calls as the real library
// would (fault/plan.h says which; fault/kinds.h with which errno). Every object it hands out
// wraps the inner provider's object and forwards to it; what the caller sees of ids, devices,
// PDs and QPs is the wrapper, so every later call passes through the plan too. Test support:
// not part of libwireup.a.
//
// A failed call fails before the inner call is made (nothing is created, nothing changes
// state), except where the real library fails after the fact: an event turned into its error
// event (addr_event, route_event), and a CM event read that fails (get_event), which leaves
// the event pending for the next read, as the kernel keeps an event it could not hand over.
#pragma once

#include <memory>

#include "fault/plan.h"
#include "provider/provider.h"

namespace wireup::fault {

// `inner` must outlive the wrapper; `plan` is shared with whoever reads its counts.
std::unique_ptr<prov::Provider> wrap(prov::Provider& inner, std::shared_ptr<Plan> plan);
// The same, owning `inner`.
std::unique_ptr<prov::Provider> wrap(std::unique_ptr<prov::Provider> inner, std::shared_ptr<Plan> plan);

}  // namespace wireup::fault
