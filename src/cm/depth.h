// READ/atomic depths of one connection: what this side offers in its REQ or REP, and what the
// passive side answers to a REQ. Pure functions, so that every rule is tested alone.
//
// The two numbers of rdma_conn_param, seen from the side that sends them:
//   initiator_depth      RDMA READs/atomics this side's QP may have outstanding (its RTS
//                        max_rd_atomic); bounded by the device's max_qp_init_rd_atom;
//   responder_resources  RDMA READs/atomics this side's QP accepts outstanding as a target
//                        (its RTR max_dest_rd_atomic); bounded by max_qp_rd_atom.
// librdmacm refuses values above those bounds with EINVAL (cma.c, ucma_valid_param); the IB CM
// then hands each side the other's numbers swapped into its own view (cm.c,
// cm_format_req_event / cm_format_rep_event), and ib_cm_init_qp_attr answers RTR with the
// responder resources and RTS with the initiator depth it holds for the connection. The active
// side's values are the REP's once it arrived (cm_rep_handler), so the passive side's answer
// decides: it must never offer to issue more than the REQ's side accepts, or the responder
// NAKs the excess (mlx5 does; rxe does not check).
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "provider/types.h"

namespace wireup::cm {

struct Depths {
  uint8_t initiator_depth = 0;
  uint8_t responder_resources = 0;
  bool operator==(const Depths&) const = default;
};

// This side's offer: the configured values (nullopt: the device's maximum, as UCX does), each
// refused when above the device's bound, the error naming the key's meaning, both numbers
// and the device.
Result<Depths> local_depths(std::optional<uint8_t> initiator_depth, std::optional<uint8_t> responder_resources,
                            const prov::DeviceInfo& dev);

// The passive side's answer to a REQ whose CONNECT_REQUEST carried `req` (already in this
// side's view: req.initiator_depth is what the peer accepts as a target, req.responder_resources
// what it will issue): never issue more than the peer accepts, never hold more resources than
// it will use.
Depths answer_depths(const Depths& local, const Depths& req);

}  // namespace wireup::cm
