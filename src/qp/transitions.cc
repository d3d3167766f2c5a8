#include "qp/transitions.h"

#include <algorithm>

namespace wireup::qp {
namespace {

using prov::QpState;
namespace m = prov::qp_mask;

Status range_error(const char* field, unsigned v, unsigned lo, unsigned hi) {
  return Error::make(ErrorCode::invalid_argument, "qp override",
                     std::string(field) + " = " + std::to_string(v) + " is outside [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

Status transition(prov::Qp& qp, prov::CmId& id, QpState to, const CheckedOverrides& o, QpGiven* given,
                  const DepthCap* cap) {
  auto cm = id.init_qp_attr(to);
  if (!cm) return Error(cm.error()).with_qpn(qp.qpn());
  prov::QpAttrWithMask& want = *cm;
  apply_overrides_to(want, to, o.get());
  if (cap != nullptr) {
    prov::QpAttr& a = want.attr;
    if (to == QpState::rtr && (want.mask & m::max_dest_rd_atomic))
      a.max_dest_rd_atomic = std::min(a.max_dest_rd_atomic, cap->max_dest_rd_atomic);
    if (to == QpState::rts && (want.mask & m::max_qp_rd_atomic))
      a.max_rd_atomic = std::min(a.max_rd_atomic, cap->max_rd_atomic);
  }
  WIREUP_TRY(check_required(want, to, qp.qpn()));
  WIREUP_TRY(qp.modify(want.attr, want.mask));
  if (given != nullptr) record(*given, want);
  return Status::ok();
}

}  // namespace

void record(QpGiven& g, const prov::QpAttrWithMask& applied) {
  const prov::QpAttr& a = applied.attr;
  const uint32_t k = applied.mask;
  if (k & m::access_flags) g.access_flags = a.qp_access_flags;
  if (k & m::path_mtu) g.path_mtu = static_cast<uint8_t>(a.path_mtu);
  if (k & m::max_qp_rd_atomic) g.max_rd_atomic = a.max_rd_atomic;
  if (k & m::max_dest_rd_atomic) g.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (k & m::timeout) g.timeout = a.timeout;
  if (k & m::retry_cnt) g.retry_cnt = a.retry_cnt;
  if (k & m::rnr_retry) g.rnr_retry = a.rnr_retry;
  if (k & m::min_rnr_timer) g.min_rnr_timer = a.min_rnr_timer;
}

Status validate(const QpOverrides& o) {
  if (o.path_mtu && (*o.path_mtu < 1 || *o.path_mtu > 5)) return range_error("path_mtu", *o.path_mtu, 1, 5);
  if (o.timeout && *o.timeout > 31) return range_error("timeout", *o.timeout, 0, 31);
  if (o.retry_cnt && *o.retry_cnt > 7) return range_error("retry_cnt", *o.retry_cnt, 0, 7);
  if (o.rnr_retry && *o.rnr_retry > 7) return range_error("rnr_retry", *o.rnr_retry, 0, 7);
  if (o.min_rnr_timer && *o.min_rnr_timer > 31) return range_error("min_rnr_timer", *o.min_rnr_timer, 0, 31);
  // max_rd_atomic / max_dest_rd_atomic: bounded by the device, checked where it is known (cm/depth.h).
  return Status::ok();
}

Result<CheckedOverrides> CheckedOverrides::check(const QpOverrides& o) {
  WIREUP_TRY(validate(o));
  return CheckedOverrides(o);
}

uint32_t required_mask(QpState to) {
  switch (to) {
    case QpState::init: return m::state | m::pkey_index | m::port | m::access_flags;
    case QpState::rtr:
      return m::state | m::av | m::path_mtu | m::dest_qpn | m::rq_psn | m::max_dest_rd_atomic |
             m::min_rnr_timer;
    case QpState::rts:
      return m::state | m::timeout | m::retry_cnt | m::rnr_retry | m::sq_psn | m::max_qp_rd_atomic;
    case QpState::err:
    case QpState::reset: return m::state;
    default: return m::state;
  }
}

void apply_overrides_to(prov::QpAttrWithMask& cm, QpState to, const QpOverrides& o) {
  prov::QpAttr& a = cm.attr;
  if (to == QpState::init && o.access_flags) {
    a.qp_access_flags = *o.access_flags;
    cm.mask |= m::access_flags;
  }
  if (to == QpState::rtr) {
    if (o.path_mtu && (cm.mask & m::path_mtu)) a.path_mtu = std::min(a.path_mtu, *o.path_mtu);
    if (o.max_dest_rd_atomic && (cm.mask & m::max_dest_rd_atomic))
      a.max_dest_rd_atomic = std::min(a.max_dest_rd_atomic, *o.max_dest_rd_atomic);
    if (o.min_rnr_timer) {
      a.min_rnr_timer = *o.min_rnr_timer;
      cm.mask |= m::min_rnr_timer;
    }
  }
  if (to == QpState::rts) {
    if (o.timeout) { a.timeout = *o.timeout; cm.mask |= m::timeout; }
    if (o.retry_cnt) { a.retry_cnt = *o.retry_cnt; cm.mask |= m::retry_cnt; }
    if (o.rnr_retry) { a.rnr_retry = *o.rnr_retry; cm.mask |= m::rnr_retry; }
    if (o.max_rd_atomic && (cm.mask & m::max_qp_rd_atomic))
      a.max_rd_atomic = std::min(a.max_rd_atomic, *o.max_rd_atomic);
  }
}

Status check_required(const prov::QpAttrWithMask& want, QpState to, uint32_t qpn) {
  if (want.attr.qp_state != to)
    return Error::make(ErrorCode::invalid_argument, "ibv_modify_qp",
                       std::string("attributes are for ") + prov::to_string(want.attr.qp_state) +
                           ", not " + prov::to_string(to))
        .with_qpn(qpn);
  uint32_t missing = required_mask(to) & ~want.mask;
  if (missing != 0)
    return Error::make(ErrorCode::invalid_argument, "ibv_modify_qp",
                       std::string("to ") + prov::to_string(to) + " lacks required attribute(s) " +
                           m::names(missing))
        .with_qpn(qpn);
  if (to == QpState::rtr && want.attr.dest_qp_num == 0)
    return Error::make(ErrorCode::invalid_argument, "ibv_modify_qp", "to RTR with dest_qp_num 0")
        .with_qpn(qpn);
  return Status::ok();
}

Status to_init(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o, QpGiven* given) {
  return transition(qp, id, QpState::init, o, given, nullptr);
}
Status to_rtr(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o, QpGiven* given, const DepthCap* cap) {
  return transition(qp, id, QpState::rtr, o, given, cap);
}
Status to_rts(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o, QpGiven* given, const DepthCap* cap) {
  return transition(qp, id, QpState::rts, o, given, cap);
}

Status to_error(prov::Qp& qp) {
  prov::QpAttr a;
  a.qp_state = QpState::err;
  return qp.modify(a, m::state);
}

}  // namespace wireup::qp
