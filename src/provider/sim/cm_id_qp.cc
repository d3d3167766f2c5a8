// The QP side of a simulated id: rdma_init_qp_attr as cma.c answers it for each state, the
// ECE values the CM carries, and rdma_migrate_id. The rdma_cm calls are in cm_id.cc.
#include <cerrno>

#include "provider/sim/channel.h"
#include "provider/sim/cm_id.h"
#include "provider/sim/cm_id_util.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

Result<QpAttrWithMask> SimCmId::init_qp_attr(QpState state) {
  const char* call = "rdma_init_qp_attr";
  WIREUP_TRY(require_device(call));
  QpAttrWithMask out;
  QpAttr& a = out.attr;
  a.qp_state = state;
  a.port_num = 1;
  a.pkey_index = 0;
  if (ib == IbState::none) {
    // No IB CM id yet (before rdma_connect): cma_ib_init_qp_attr answers INIT attributes
    // whatever state was asked for, as the kernel does.
    a.qp_access_flags = 0;
    out.mask = qp_mask::state | qp_mask::pkey_index | qp_mask::port | qp_mask::access_flags;
    return out;
  }
  const bool connected = knows_peer(ib) || ib == IbState::req_sent || ib == IbState::mra_req_rcvd;
  switch (state) {
    case QpState::init:
      if (!connected) return fail(call, EINVAL, std::string("for INIT: ") + state_of(*this));
      a.qp_access_flags = access::remote_write;
      if (responder_resources != 0) a.qp_access_flags |= access::remote_read | access::remote_atomic;
      out.mask = qp_mask::state | qp_mask::access_flags | qp_mask::pkey_index | qp_mask::port;
      return out;
    case QpState::rtr:
      if (!knows_peer(ib))
        return fail(call, EINVAL, std::string("for RTR: the CM does not know the peer yet: ") + state_of(*this));
      a.ah_attr.dgid = ipv4_gid(remote_ip);
      a.ah_attr.is_global = 1;
      a.ah_attr.hop_limit = 64;  // RoCE v2: an IP TTL
      a.ah_attr.traffic_class = tos;
      a.ah_attr.port_num = 1;
      a.path_mtu = mtu_enum(path_mtu_bytes);
      a.dest_qp_num = remote_qpn;
      a.rq_psn = local_psn;  // cma: rq_psn = our own starting PSN, the one our REQ/REP carried
      a.max_dest_rd_atomic = responder_resources;
      a.min_rnr_timer = 0;
      out.mask = qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn |
                 qp_mask::rq_psn | qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer;
      return out;
    case QpState::rts:
      if (!knows_peer(ib))
        return fail(call, EINVAL, std::string("for RTS: the CM does not know the peer yet: ") + state_of(*this));
      a.sq_psn = remote_psn;
      // cm_init_av_by_path: packet lifetime + 1; RDMA_OPTION_ID_ACK_TIMEOUT overrides.
      a.timeout = ack_timeout_set ? ack_timeout : static_cast<uint8_t>(core.latency.packet_lifetime + 1);
      a.retry_cnt = retry_count;
      a.rnr_retry = rnr_retry_count;
      a.max_rd_atomic = initiator_depth;
      out.mask = qp_mask::state | qp_mask::sq_psn | qp_mask::timeout | qp_mask::retry_cnt |
                 qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic;
      return out;
    default:
      return fail(call, EINVAL, std::string("the CM gives attributes for INIT, RTR and RTS, not ") +
                                    prov::to_string(state));
  }
}

Status SimCmId::set_local_ece(const Ece& ece) {
  if (ece.vendor_id == 0) return fail("rdma_set_local_ece", EINVAL, "vendor_id 0");
  local_ece = ece;
  return Status::ok();
}

Result<Ece> SimCmId::get_remote_ece() { return remote_ece; }

Status SimCmId::migrate_native(EventChannel& to) {
  auto* target = dynamic_cast<SimEventChannel*>(&to);
  if (target == nullptr || &target->core != &core || target->node != node)
    return fail("rdma_migrate_id", EINVAL, "target channel belongs to another provider or node");
  if (events_reported > events_acked)
    return Error::make(ErrorCode::invalid_state, "rdma_migrate_id",
                       std::to_string(events_reported - events_acked) +
                           " retrieved event(s) of this id are not acked: the real call blocks "
                           "until they are; the single-threaded sim refuses instead")
        .with_peer(peer_addr().to_string());
  if (chan != nullptr) chan->move_events(self, *target);
  attach(target);
  return Status::ok();
}

}  // namespace wireup::prov::sim
