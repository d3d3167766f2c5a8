// Translations between the provider seam's plain types and the verbs/rdma_cm structs.
// Kept in one place so the rdma provider stays a 1:1 mapping.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "provider/types.h"

namespace wireup::prov::rdma {

ibv_qp_attr to_ibv(const QpAttr& a);
// The work request of `w`, its one SGE in `sge` (none when the length is 0).
ibv_send_wr to_ibv(const SendWr& w, ibv_sge* sge);
QpAttr from_ibv(const ibv_qp_attr& a);
rdma_conn_param to_rdma(const ConnParam& p);
CmEventType from_rdma(rdma_cm_event_type t);
PortState from_ibv(ibv_port_state s);

}  // namespace wireup::prov::rdma
