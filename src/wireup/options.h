// From the typed configuration (src/config) to the engine's options. The only place that
// knows both, so the engine itself never reads a global config.
#pragma once

#include "config/config.h"
#include "config/settings.h"
#include "wireup/engine.h"

namespace wireup {

// The configuration table's defaults (config::built_in()) as engine options: what a test or
// a driver without a tuning file starts from.
EngineOptions engine_defaults();

// rank/nranks/listen address come from the transport; everything else from `s`.
// job_key: the API's value wins; else the config's; 0 is refused later by Engine::create.
EngineOptions engine_options(const config::Settings& s, uint32_t rank, uint32_t nranks,
                             const prov::SockAddr& listen, uint64_t job_key = 0);

}  // namespace wireup
