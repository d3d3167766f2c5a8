// What Engine::create() checks of its options before it builds anything, and the connection
// profile it derives from them (once per engine: every connection shares it).
#pragma once

#include "cm/connection.h"
#include "common/status.h"
#include "qp/factory.h"
#include "wireup/engine_types.h"

namespace wireup {

// Every option whose value the engine cannot work with, named ("Engine::create: ..."); the
// QP overrides are make_profile()'s to check.
Status check_options(const EngineOptions& o, const qp::QpFactory& factory);

// The profile every connection of the engine shares; its QP overrides checked here, once
// (qp::CheckedOverrides), not at each transition.
Result<cm::Profile> make_profile(const EngineOptions& o);

}  // namespace wireup
