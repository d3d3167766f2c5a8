// The ECE provider calls in the order of the application-owned-QP flow (see policy.h).
// Each step records what it saw in a Report so the connection result can show it.
#pragma once

#include <optional>

#include "common/status.h"
#include "ece/policy.h"
#include "provider/provider.h"

namespace wireup::ece {

// ibv_query_ece: the device's ECE, nullopt when it answers EOPNOTSUPP (no ECE), an error
// for anything else.
Result<std::optional<prov::Ece>> query_device(prov::Qp& qp);

// Active side, after the QP exists and before rdma_connect: puts the offer on the id.
// Returns the offer (nullopt: none sent). Fails only in `required` mode without ECE.
Result<std::optional<prov::Ece>> prepare_active(const Policy& p, prov::Qp& qp, prov::CmId& id,
                                                Report& report);

// Passive side, on CONNECT_REQUEST after the QP exists: decides; when not rejecting, sets the
// accepted options on the QP and on the id (they travel in the REP). The caller rejects with
// reject_ece when Decision::reject.
Result<Decision> answer_request(const Policy& p, prov::Qp& qp, prov::CmId& id, Report& report);

// Active side, on CONNECT_RESPONSE: checks the passive side's answer and sets it on the QP.
// The caller rejects with reject_ece when Decision::reject.
Result<Decision> apply_reply(const Policy& p, const std::optional<prov::Ece>& offered, prov::Qp& qp,
                             prov::CmId& id, Report& report);

}  // namespace wireup::ece
