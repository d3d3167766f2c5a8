// The live rdma provider the VM suites run on, and the address its device answers at: one place
// for the rdma fabrics of the conformance, engine and fault-sweep suites.
#pragma once

#include <memory>

#include "common/status.h"
#include "provider/provider.h"

namespace wireup::testing {

struct RdmaUnderTest {
  std::unique_ptr<prov::Provider> provider;
  prov::SockAddr address;  // port 0: each listener binds its own
};

// WIREUP_VM_ADDR if set (the soft-RoCE VM sets it; tests/vm/rails-check.sh points it at the
// second rail), else the first IPv4 address on an RDMA device's netdev. `who` names the
// caller in the error (no_device when there is no device or no address: the suites' loud skip).
Result<RdmaUnderTest> rdma_under_test(const char* who);

}  // namespace wireup::testing
