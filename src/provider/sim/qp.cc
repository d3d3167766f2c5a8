// The simulated QP: the verbs state machine with the attribute masks each transition requires,
// and ECE as devices with and without it answer. The data path is in qp_data.cc.
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
    : dev_(dev), pd_(pd), srq_(static_cast<SimSrq*>(attr.srq)), qpn_(qpn), init_(attr) {
  self_ = dev_.core.qps.add(this);
  if (srq_ != nullptr) srq_->qps.push_back(self_);
  dev_.qp_by_num[qpn_] = self_;
  ++dev_.qps;
  ++dev_.core.stats.qps_alive;
}

SimQp::~SimQp() {
  dev_.core.charge(dev_.node, dev_.core.latency.destroy_qp);
  dev_.qp_by_num.erase(qpn_);
  // The CQ's and the SRQ's lists keep the handle; they skip it once it is dead.
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
  if (a.srq != nullptr) {
    auto* srq = dynamic_cast<SimSrq*>(a.srq);
    if (srq == nullptr)
      return Error::make(ErrorCode::invalid_argument, call, "SRQ belongs to another provider");
    if (&srq->pd() != this) return Error::from_errno(call, EINVAL, "the SRQ is on another PD");
  }
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
  if (to == QpState::err) {
    to_error();
  } else if (to == QpState::reset) {
    recvs_.clear();
    waiting_.clear();
    sq_.clear();
    in_flight_.clear();
    rd_atomic_in_flight_ = 0;
    attr_ = QpAttr{};
  }
  attr_.qp_state = to;
  return Status::ok();
}

Result<QpAttr> SimQp::query(uint32_t) { return attr_; }

Result<Ece> SimQp::query_ece() {
  if (!dev_.spec().ece_supported)
    return Error::from_errno("ibv_query_ece", EOPNOTSUPP, "device " + dev_.info().name).with_qpn(qpn_);
  if (ece_.vendor_id == 0) return Ece{dev_.spec().vendor_id, dev_.spec().ece_options};
  return ece_;
}

Result<Ece> SimQp::set_ece(const Ece& e) {
  const char* call = "ibv_set_ece";
  const SimDeviceSpec& s = dev_.spec();
  if (!s.ece_supported)
    return Error::from_errno(call, EOPNOTSUPP, "device " + dev_.info().name).with_qpn(qpn_);
  std::string why;
  if (e.vendor_id == 0) why = "vendor_id 0";
  else if (e.vendor_id != s.vendor_id) why = "vendor_id is not the device's";
  else if ((e.options & ~s.ece_options) != 0) why = "options the device does not support";
  else if ((e.options & s.ece_required) != s.ece_required) why = "options the device requires are cleared";
  if (!why.empty()) return Error::from_errno(call, EINVAL, why).with_qpn(qpn_);
  // IN/OUT: a provider may accept fewer options than asked for, and writes back what it took.
  ece_ = Ece{e.vendor_id, e.options & s.ece_keeps};
  return ece_;
}

}  // namespace wireup::prov::sim
