// The ECE provider calls in the order of the application-owned-QP flow (see policy.h), split
// around the caller's INIT->RTR: the options are set before it, and what the firmware took is
// read and checked after it (mlx5 decides at that modify: rdma-core providers/mlx5/verbs.c).
// Each step records what it saw in a Report so the connection result can show it.
#pragma once

#include <optional>

#include "common/status.h"
#include "ece/policy.h"
#include "provider/provider.h"

namespace wireup::ece {

// ibv_query_ece: the device's ECE, nullopt when it answers EOPNOTSUPP (no ECE verbs), an
// error for anything else.
Result<std::optional<prov::Ece>> query_device(prov::Qp& qp);

// Active side, after the QP exists and before rdma_connect: puts the offer on the id.
// Returns the offer (nullopt: none sent). Fails only in `required` mode without ECE.
Result<std::optional<prov::Ece>> prepare_active(const Policy& p, prov::Qp& qp, prov::CmId& id,
                                                Report& report);

// Passive side, on CONNECT_REQUEST with the QP at INIT, before RTR: decides from the offer
// and, when there are options to ask for, sets them on the QP (ibv_set_ece). The caller
// rejects with reject_ece when Decision::reject, and otherwise moves the QP to RTR and calls
// confirm().
Result<Decision> before_rtr_passive(const Policy& p, prov::Qp& qp, prov::CmId& id, Report& report);

// Active side, on CONNECT_RESPONSE with the QP at INIT, before RTR: checks the passive side's
// answer and sets it on the QP (librdmacm does the same for its own QPs: cma.c,
// ucma_process_conn_resp_ece), so that both firmwares are asked for the same options. The
// caller rejects with reject_ece when Decision::reject, else RTR then confirm().
Result<Decision> before_rtr_active(const Policy& p, const std::optional<prov::Ece>& offered, prov::Qp& qp,
                                   prov::CmId& id, Report& report);

// Either side, after INIT->RTR: ibv_query_ece says what the firmware took of what was set;
// the required bits are checked against that. On the passive side (set_on_id) what was taken
// goes on the id: the REP carries it. The caller rejects with reject_ece when
// Decision::reject.
Result<Decision> confirm(const Policy& p, Decision before, prov::Qp& qp, prov::CmId& id, Report& report,
                         bool set_on_id);

}  // namespace wireup::ece
