#include "provider/rdma/convert.h"

#include <cstring>

namespace wireup::prov::rdma {

// The seam reuses the verbs numbering; if a header ever changes it, fail the build here.
static_assert(qp_mask::state == IBV_QP_STATE && qp_mask::av == IBV_QP_AV &&
              qp_mask::path_mtu == IBV_QP_PATH_MTU && qp_mask::dest_qpn == IBV_QP_DEST_QPN &&
              qp_mask::max_dest_rd_atomic == IBV_QP_MAX_DEST_RD_ATOMIC &&
              qp_mask::sq_psn == IBV_QP_SQ_PSN && qp_mask::cap == IBV_QP_CAP);
static_assert(static_cast<int>(QpState::rts) == IBV_QPS_RTS &&
              static_cast<int>(QpState::err) == IBV_QPS_ERR);
static_assert(access::remote_write == IBV_ACCESS_REMOTE_WRITE &&
              access::remote_atomic == IBV_ACCESS_REMOTE_ATOMIC);
static_assert(static_cast<int>(CmEventType::timewait_exit) == RDMA_CM_EVENT_TIMEWAIT_EXIT &&
              static_cast<int>(CmEventType::connect_response) == RDMA_CM_EVENT_CONNECT_RESPONSE);
static_assert(wc_opcode_recv == IBV_WC_RECV && wc_opcode_send == IBV_WC_SEND &&
              wc_opcode_rdma_write == IBV_WC_RDMA_WRITE && wc_opcode_rdma_read == IBV_WC_RDMA_READ &&
              wc_opcode_comp_swap == IBV_WC_COMP_SWAP && wc_opcode_fetch_add == IBV_WC_FETCH_ADD &&
              wc_opcode_recv_rdma_with_imm == IBV_WC_RECV_RDMA_WITH_IMM);
static_assert(wc_flag_with_imm == IBV_WC_WITH_IMM);
static_assert(wc_status::loc_len_err == IBV_WC_LOC_LEN_ERR && wc_status::loc_qp_op_err == IBV_WC_LOC_QP_OP_ERR &&
              wc_status::loc_prot_err == IBV_WC_LOC_PROT_ERR && wc_status::wr_flush_err == IBV_WC_WR_FLUSH_ERR &&
              wc_status::rem_inv_req_err == IBV_WC_REM_INV_REQ_ERR &&
              wc_status::rem_access_err == IBV_WC_REM_ACCESS_ERR &&
              wc_status::retry_exc_err == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(WrOpcode::rdma_write) == IBV_WR_RDMA_WRITE &&
              static_cast<int>(WrOpcode::rdma_write_with_imm) == IBV_WR_RDMA_WRITE_WITH_IMM &&
              static_cast<int>(WrOpcode::send) == IBV_WR_SEND &&
              static_cast<int>(WrOpcode::send_with_imm) == IBV_WR_SEND_WITH_IMM &&
              static_cast<int>(WrOpcode::rdma_read) == IBV_WR_RDMA_READ &&
              static_cast<int>(WrOpcode::atomic_cmp_and_swp) == IBV_WR_ATOMIC_CMP_AND_SWP &&
              static_cast<int>(WrOpcode::atomic_fetch_and_add) == IBV_WR_ATOMIC_FETCH_AND_ADD);
static_assert(access::remote_read == IBV_ACCESS_REMOTE_READ && access::local_write == IBV_ACCESS_LOCAL_WRITE);

ibv_send_wr to_ibv(const SendWr& w, ibv_sge* sge) {
  ibv_send_wr r;
  std::memset(&r, 0, sizeof r);
  r.wr_id = w.wr_id;
  r.sg_list = w.sge.length == 0 ? nullptr : sge;
  r.num_sge = w.sge.length == 0 ? 0 : 1;
  r.opcode = static_cast<ibv_wr_opcode>(w.opcode);
  r.send_flags = w.signaled ? IBV_SEND_SIGNALED : 0;
  switch (w.opcode) {
    case WrOpcode::send_with_imm:
    case WrOpcode::rdma_write_with_imm:
      r.imm_data = w.imm_data;
      break;
    default:
      break;
  }
  switch (w.opcode) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm:
    case WrOpcode::rdma_read:
      r.wr.rdma.remote_addr = w.remote_addr;
      r.wr.rdma.rkey = w.rkey;
      break;
    case WrOpcode::atomic_cmp_and_swp:
    case WrOpcode::atomic_fetch_and_add:
      r.wr.atomic.remote_addr = w.remote_addr;
      r.wr.atomic.rkey = w.rkey;
      r.wr.atomic.compare_add = w.compare_add;
      r.wr.atomic.swap = w.swap;
      break;
    default:
      break;
  }
  return r;
}

ibv_qp_attr to_ibv(const QpAttr& a) {
  ibv_qp_attr r;
  std::memset(&r, 0, sizeof r);
  r.qp_state = static_cast<ibv_qp_state>(a.qp_state);
  r.path_mtu = static_cast<ibv_mtu>(a.path_mtu);
  r.qkey = a.qkey;
  r.rq_psn = a.rq_psn;
  r.sq_psn = a.sq_psn;
  r.dest_qp_num = a.dest_qp_num;
  r.qp_access_flags = a.qp_access_flags;
  std::memcpy(r.ah_attr.grh.dgid.raw, a.ah_attr.dgid.raw.data(), 16);
  r.ah_attr.grh.flow_label = a.ah_attr.flow_label;
  r.ah_attr.grh.sgid_index = a.ah_attr.sgid_index;
  r.ah_attr.grh.hop_limit = a.ah_attr.hop_limit;
  r.ah_attr.grh.traffic_class = a.ah_attr.traffic_class;
  r.ah_attr.dlid = a.ah_attr.dlid;
  r.ah_attr.sl = a.ah_attr.sl;
  r.ah_attr.src_path_bits = a.ah_attr.src_path_bits;
  r.ah_attr.static_rate = a.ah_attr.static_rate;
  r.ah_attr.is_global = a.ah_attr.is_global;
  r.ah_attr.port_num = a.ah_attr.port_num;
  r.pkey_index = a.pkey_index;
  r.max_rd_atomic = a.max_rd_atomic;
  r.max_dest_rd_atomic = a.max_dest_rd_atomic;
  r.min_rnr_timer = a.min_rnr_timer;
  r.port_num = a.port_num;
  r.timeout = a.timeout;
  r.retry_cnt = a.retry_cnt;
  r.rnr_retry = a.rnr_retry;
  return r;
}

QpAttr from_ibv(const ibv_qp_attr& r) {
  QpAttr a;
  a.qp_state = static_cast<QpState>(r.qp_state);
  a.path_mtu = r.path_mtu;
  a.qkey = r.qkey;
  a.rq_psn = r.rq_psn;
  a.sq_psn = r.sq_psn;
  a.dest_qp_num = r.dest_qp_num;
  a.qp_access_flags = r.qp_access_flags;
  std::memcpy(a.ah_attr.dgid.raw.data(), r.ah_attr.grh.dgid.raw, 16);
  a.ah_attr.flow_label = r.ah_attr.grh.flow_label;
  a.ah_attr.sgid_index = r.ah_attr.grh.sgid_index;
  a.ah_attr.hop_limit = r.ah_attr.grh.hop_limit;
  a.ah_attr.traffic_class = r.ah_attr.grh.traffic_class;
  a.ah_attr.dlid = r.ah_attr.dlid;
  a.ah_attr.sl = r.ah_attr.sl;
  a.ah_attr.src_path_bits = r.ah_attr.src_path_bits;
  a.ah_attr.static_rate = r.ah_attr.static_rate;
  a.ah_attr.is_global = r.ah_attr.is_global;
  a.ah_attr.port_num = r.ah_attr.port_num;
  a.pkey_index = r.pkey_index;
  a.max_rd_atomic = r.max_rd_atomic;
  a.max_dest_rd_atomic = r.max_dest_rd_atomic;
  a.min_rnr_timer = r.min_rnr_timer;
  a.port_num = r.port_num;
  a.timeout = r.timeout;
  a.retry_cnt = r.retry_cnt;
  a.rnr_retry = r.rnr_retry;
  return a;
}

rdma_conn_param to_rdma(const ConnParam& p) {
  rdma_conn_param r;
  std::memset(&r, 0, sizeof r);
  r.private_data = p.private_data.empty() ? nullptr : p.private_data.data();
  r.private_data_len = static_cast<uint8_t>(p.private_data.size());
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.flow_control = p.flow_control;
  r.retry_count = p.retry_count;
  r.rnr_retry_count = p.rnr_retry_count;
  r.srq = p.srq;
  r.qp_num = p.qp_num;
  return r;
}

CmEventType from_rdma(rdma_cm_event_type t) { return static_cast<CmEventType>(t); }

PortState from_ibv(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP: return PortState::nop;
    case IBV_PORT_DOWN: return PortState::down;
    case IBV_PORT_INIT: return PortState::init;
    case IBV_PORT_ARMED: return PortState::armed;
    case IBV_PORT_ACTIVE: return PortState::active;
    case IBV_PORT_ACTIVE_DEFER: return PortState::active_defer;
  }
  return PortState::unknown;
}

}  // namespace wireup::prov::rdma
