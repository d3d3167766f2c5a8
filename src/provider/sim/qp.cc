// The simulated QP: the verbs state machine with the attribute masks each transition requires,
// ECE as devices with and without it answer, and a minimal SEND/RECV data path.
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

TransitionMasks rc_transition(QpState from, QpState to) {
  using namespace qp_mask;
  if (to == QpState::reset || to == QpState::err) return {true, 0, 0};  // from anywhere
  switch (from) {
    case QpState::reset:
      if (to == QpState::init) return {true, pkey_index | port | access_flags, 0};
      break;
    case QpState::init:
      if (to == QpState::init) return {true, 0, pkey_index | port | access_flags};
      if (to == QpState::rtr)
        return {true, av | path_mtu | dest_qpn | rq_psn | max_dest_rd_atomic | min_rnr_timer,
                alt_path | access_flags | pkey_index};
      break;
    case QpState::rtr:
      if (to == QpState::rts)
        return {true, sq_psn | timeout | retry_cnt | rnr_retry | max_qp_rd_atomic,
                cur_state | alt_path | access_flags | min_rnr_timer | path_mig_state};
      break;
    case QpState::rts:
      if (to == QpState::rts)
        return {true, 0, cur_state | access_flags | alt_path | path_mig_state | min_rnr_timer};
      if (to == QpState::sqd) return {true, 0, en_sqd_async_notify};
      break;
    case QpState::sqd:
      if (to == QpState::rts)
        return {true, 0, cur_state | access_flags | alt_path | path_mig_state | min_rnr_timer};
      if (to == QpState::sqd)
        return {true, 0,
                access_flags | alt_path | path_mig_state | min_rnr_timer | pkey_index | port |
                    av | max_qp_rd_atomic | max_dest_rd_atomic | timeout | retry_cnt | rnr_retry};
      break;
    default:
      break;
  }
  return {};
}

SimQp::SimQp(SimDevice& dev, SimPd& pd, const QpInitAttr& attr, uint32_t qpn)
    : dev_(dev), pd_(pd), qpn_(qpn), init_(attr) {
  // mlx5's create_qp keeps the firmware's ECE answer to the create command (verbs.c, get_ece
  // from the response); the kernel reports it only on a device with the ECE capability.
  if (dev_.spec().ece_supported) ece_get_ = dev_.spec().ece_options;
  self_ = dev_.core.qps.add(this);
  dev_.qp_by_num[qpn_] = self_;
  ++dev_.qps;
  ++dev_.core.stats.qps_alive;
}

SimQp::~SimQp() {
  dev_.core.charge(dev_.node, dev_.core.latency.destroy_qp);
  dev_.qp_by_num.erase(qpn_);
  --dev_.qps;
  dev_.core.qps.remove(self_);
  --dev_.core.stats.qps_alive;
}

Result<std::unique_ptr<Qp>> SimPd::create_qp(const QpInitAttr& a) {
  const char* call = "ibv_create_qp";
  SimDevice& d = dev_;
  if (d.removed) return d.gone(call);
  if (a.send_cq == nullptr || a.recv_cq == nullptr)
    return Error::make(ErrorCode::invalid_argument, call, "send_cq and recv_cq are required");
  if (dynamic_cast<SimCq*>(a.send_cq) == nullptr || dynamic_cast<SimCq*>(a.recv_cq) == nullptr)
    return Error::make(ErrorCode::invalid_argument, call, "CQs belong to another provider");
  if (a.type != QpType::rc)
    return Error::from_errno(call, EOPNOTSUPP, "the sim fabric models RC QPs only");
  if (d.qps >= d.spec().max_qp)
    return Error::from_errno(call, ENOMEM, "device " + d.info().name + " has its " +
                                               std::to_string(d.spec().max_qp) + " QPs");
  uint32_t qpn = d.next_qpn;
  while (d.qp_by_num.count(qpn) != 0) qpn = (qpn + 1) & 0xFFFFFF;
  d.next_qpn = (qpn + 1) & 0xFFFFFF;
  if (d.next_qpn < 0x11) d.next_qpn = 0x11;
  d.core.charge(d.node, d.core.latency.create_qp);
  return std::unique_ptr<Qp>(new SimQp(d, *this, a, qpn));
}

Status SimQp::modify(const QpAttr& a, uint32_t mask) {
  const char* call = "ibv_modify_qp";
  const QpState from = attr_.qp_state;
  const QpState to = (mask & qp_mask::state) ? a.qp_state : from;
  auto refuse = [&](const std::string& why) {
    return Error::from_errno(call, EINVAL,
                             std::string(to_string(from)) + " -> " + to_string(to) + " with " +
                                 qp_mask::names(mask) + ": " + why)
        .with_qpn(qpn_);
  };
  if (dev_.removed && to != QpState::err && to != QpState::reset) return dev_.gone(call).with_qpn(qpn_);
  const TransitionMasks t = rc_transition(from, to);
  if (!t.allowed) return refuse("not a QP state transition");
  if (uint32_t missing = t.required & ~mask; missing != 0)
    return refuse("missing " + qp_mask::names(missing));
  if (uint32_t extra = mask & ~(t.required | t.optional | qp_mask::state | qp_mask::cur_state); extra != 0)
    return refuse(qp_mask::names(extra) + " not allowed in this transition");
  const DeviceInfo& info = dev_.info();
  if ((mask & qp_mask::port) && (a.port_num < 1 || a.port_num > info.ports.size()))
    return refuse("port " + std::to_string(a.port_num) + " does not exist");
  if ((mask & qp_mask::path_mtu) && (a.path_mtu < 1 || (256u << (a.path_mtu - 1)) > info.ports[0].active_mtu))
    return refuse("path_mtu " + std::to_string(a.path_mtu) + " above the port's");
  if (((mask & qp_mask::max_dest_rd_atomic) && a.max_dest_rd_atomic > dev_.spec().max_rd_atomic) ||
      ((mask & qp_mask::max_qp_rd_atomic) && a.max_rd_atomic > dev_.spec().max_rd_atomic))
    return refuse("rd_atomic above the device's " + std::to_string(dev_.spec().max_rd_atomic));

  if (mask & qp_mask::access_flags) attr_.qp_access_flags = a.qp_access_flags;
  if (mask & qp_mask::pkey_index) attr_.pkey_index = a.pkey_index;
  if (mask & qp_mask::port) attr_.port_num = a.port_num;
  if (mask & qp_mask::av) attr_.ah_attr = a.ah_attr;
  if (mask & qp_mask::path_mtu) attr_.path_mtu = a.path_mtu;
  if (mask & qp_mask::dest_qpn) attr_.dest_qp_num = a.dest_qp_num;
  if (mask & qp_mask::rq_psn) attr_.rq_psn = a.rq_psn;
  if (mask & qp_mask::sq_psn) attr_.sq_psn = a.sq_psn;
  if (mask & qp_mask::max_dest_rd_atomic) attr_.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & qp_mask::max_qp_rd_atomic) attr_.max_rd_atomic = a.max_rd_atomic;
  if (mask & qp_mask::min_rnr_timer) attr_.min_rnr_timer = a.min_rnr_timer;
  if (mask & qp_mask::timeout) attr_.timeout = a.timeout;
  if (mask & qp_mask::retry_cnt) attr_.retry_cnt = a.retry_cnt;
  if (mask & qp_mask::rnr_retry) attr_.rnr_retry = a.rnr_retry;
  if (mask & qp_mask::qkey) attr_.qkey = a.qkey;
  dev_.core.charge(dev_.node, dev_.core.latency.modify_qp);
  // mlx5_modify_qp hands stored ECE options to the firmware with whatever modify comes next
  // (INIT->RTR in the CM flow) and keeps its answer; without stored options nothing changes.
  if (ece_set_ != 0) {
    ece_get_ = ece_set_ & dev_.spec().ece_options & dev_.spec().ece_fw_takes;
    ece_set_ = 0;
  }
  if (to == QpState::err) {
    to_error();
  } else if (to == QpState::reset) {
    recvs_.clear();
    unmatched_.clear();
    attr_ = QpAttr{};
  }
  attr_.qp_state = to;
  return Status::ok();
}

Result<QpAttr> SimQp::query(uint32_t) { return attr_; }

// ECE follows rdma-core providers/mlx5/verbs.c (mlx5_query_ece, mlx5_set_ece, mlx5_modify_qp);
// a device without the ECE verbs (rxe) answers EOPNOTSUPP to both (libibverbs dummy_ops.c).
Result<Ece> SimQp::query_ece() {
  if (!dev_.spec().ece_verbs)
    return Error::from_errno("ibv_query_ece", EOPNOTSUPP, "device " + dev_.info().name).with_qpn(qpn_);
  // Always answers, with or without the ECE capability: the vendor and the last answer.
  return Ece{dev_.spec().vendor_id, ece_get_};
}

Status SimQp::set_ece(const Ece& e) {
  const char* call = "ibv_set_ece";
  const SimDeviceSpec& s = dev_.spec();
  // libibverbs' ibv_set_ece answers EOPNOTSUPP for vendor 0 before the provider sees it.
  if (!s.ece_verbs || e.vendor_id == 0)
    return Error::from_errno(call, EOPNOTSUPP, "device " + dev_.info().name).with_qpn(qpn_);
  if (e.vendor_id != s.vendor_id)
    return Error::from_errno(call, EINVAL, "vendor_id is not the device's").with_qpn(qpn_);
  if (!s.ece_supported)
    return Error::from_errno(call, EOPNOTSUPP, "device " + dev_.info().name + " has no ECE").with_qpn(qpn_);
  // Only stored: the firmware sees the options at the next modify. The last answer is cleared.
  ece_set_ = e.options;
  ece_get_ = 0;
  return Status::ok();
}

SimQp* SimQp::peer() const {
  const Gid& g = attr_.ah_attr.dgid;
  if (g.raw[10] != 0xff || g.raw[11] != 0xff) return nullptr;
  uint32_t ip = (uint32_t{g.raw[12]} << 24) | (uint32_t{g.raw[13]} << 16) |
                (uint32_t{g.raw[14]} << 8) | g.raw[15];
  SimDevice* d = dev_.core.device_at(ip);
  if (d == nullptr || d->removed || dev_.core.node(d->node).dead) return nullptr;
  auto it = d->qp_by_num.find(attr_.dest_qp_num);
  return it == d->qp_by_num.end() ? nullptr : dev_.core.qps.get(it->second);
}

void SimQp::complete_send(uint64_t wr_id, bool signaled, int status) {
  if (!signaled && status == wc_status::success) return;
  WorkCompletion wc;
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = wc_opcode_send;
  wc.qp_num = qpn_;
  static_cast<SimCq*>(init_.send_cq)->push(wc);
}

Status SimQp::post_send(uint64_t wr_id, const Sge& sge, bool signaled) {
  if (attr_.qp_state != QpState::rts)
    return Error::from_errno("ibv_post_send", EINVAL,
                             std::string("QP is ") + to_string(attr_.qp_state) + ", not RTS")
        .with_qpn(qpn_);
  const bool sig = signaled || init_.sq_sig_all;
  auto r = pd_.regions.find(sge.lkey);
  if (r == pd_.regions.end() || sge.addr < r->second.addr ||
      sge.addr + sge.length > r->second.addr + r->second.len) {
    complete_send(wr_id, true, wc_status::loc_prot_err);
    return Status::ok();
  }
  SimQp* p = peer();
  if (p == nullptr || (p->attr_.qp_state != QpState::rtr && p->attr_.qp_state != QpState::rts) ||
      p->attr_.dest_qp_num != qpn_) {
    // Nobody acknowledges: the transport retries run out.
    complete_send(wr_id, true, wc_status::retry_exc_err);
    to_error();
    return Status::ok();
  }
  // IBA 11.6.3: the first request packet that reaches a QP still in RTR raises the
  // affiliated event Communication Established (the RTU may be lost or late). Once per QP.
  if (p->attr_.qp_state == QpState::rtr && !p->comm_est_) {
    p->comm_est_ = true;
    p->dev_.raise(DeviceEventType::comm_est, p->qpn_);
  }
  p->deliver(Send{wr_id, sge, sig, self_});
  return Status::ok();
}

Status SimQp::post_recv(uint64_t wr_id, const Sge& sge) {
  if (attr_.qp_state == QpState::reset)
    return Error::from_errno("ibv_post_recv", EINVAL, "QP is RESET").with_qpn(qpn_);
  if (recvs_.size() >= init_.caps.max_recv_wr)
    return Error::from_errno("ibv_post_recv", ENOMEM, "receive queue full").with_qpn(qpn_);
  if (attr_.qp_state == QpState::err) {
    WorkCompletion wc{wr_id, wc_status::wr_flush_err, wc_opcode_recv, 0, qpn_, 0};
    static_cast<SimCq*>(init_.recv_cq)->push(wc);
    return Status::ok();
  }
  recvs_.push_back(Recv{wr_id, sge});
  if (!unmatched_.empty()) {
    Send s = unmatched_.front();
    unmatched_.erase(unmatched_.begin());
    deliver(s);
  }
  return Status::ok();
}

bool SimQp::copy_in(const Sge& dst, const Sge& src, uint32_t* len, int* status) const {
  auto r = pd_.regions.find(dst.lkey);
  if (r == pd_.regions.end() || dst.addr < r->second.addr ||
      dst.addr + dst.length > r->second.addr + r->second.len) {
    *status = wc_status::loc_prot_err;
    return false;
  }
  if (src.length > dst.length) {
    *status = wc_status::loc_len_err;
    return false;
  }
  if (src.length > 0)
    std::memcpy(reinterpret_cast<void*>(dst.addr), reinterpret_cast<const void*>(src.addr), src.length);
  *len = src.length;
  *status = wc_status::success;
  return true;
}

void SimQp::deliver(Send s) {
  if (recvs_.empty()) {
    unmatched_.push_back(s);  // RNR: the sender retries until a receive is posted
    return;
  }
  Recv r = recvs_.front();
  recvs_.erase(recvs_.begin());
  SimQp* from = dev_.core.qps.get(s.from);
  uint32_t len = 0;
  int status = wc_status::success;
  copy_in(r.sge, s.sge, &len, &status);
  WorkCompletion wc{r.wr_id, status, wc_opcode_recv, len, qpn_, from ? from->qpn() : 0};
  static_cast<SimCq*>(init_.recv_cq)->push(wc);
  // The sender sees a remote error when the receiver could not take the message.
  constexpr int rem_inv_req_err = 9;
  if (from != nullptr) from->complete_send(s.wr_id, s.signaled, status == 0 ? 0 : rem_inv_req_err);
}

void SimQp::to_error() {
  attr_.qp_state = QpState::err;
  for (const Recv& r : recvs_) {
    WorkCompletion wc{r.wr_id, wc_status::wr_flush_err, wc_opcode_recv, 0, qpn_, 0};
    static_cast<SimCq*>(init_.recv_cq)->push(wc);
  }
  recvs_.clear();
  unmatched_.clear();
}

}  // namespace wireup::prov::sim
