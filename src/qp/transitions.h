// Application-owned QPs: named transitions driven by rdma_init_qp_attr.
//
// The CM knows the path (AV, MTU, PSNs, the remote QPN); the transport may cap or override
// a few knobs. Each transition checks that the attributes the verbs spec requires for it are
// present before calling ibv_modify_qp, so a missing one is named instead of surfacing as a
// bare EINVAL from the driver.
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "provider/provider.h"

namespace wireup::qp {

// Transport overrides; unset fields keep what the CM chose.
struct QpOverrides {
  std::optional<uint32_t> path_mtu;          // enum ibv_mtu 1..5 (256..4096 bytes); caps the CM's
  std::optional<uint8_t> timeout;            // local ACK timeout 0..31: 4.096 us * 2^v (14 = 67.1 ms)
  std::optional<uint8_t> retry_cnt;          // transport retries 0..7
  std::optional<uint8_t> rnr_retry;          // RNR retries 0..7, 7 = infinite
  std::optional<uint8_t> min_rnr_timer;      // RNR NAK timer index 0..31 (12 = 0.64 ms)
  std::optional<uint8_t> max_rd_atomic;      // outstanding RDMA reads/atomics we initiate; caps
  std::optional<uint8_t> max_dest_rd_atomic; // ... the peer may have outstanding at us; caps
  std::optional<uint32_t> access_flags;      // replaces the CM's (IBV_ACCESS_*)
};

// What a QP was given on its way to RTS: the attributes of its transitions as applied (the
// CM's answer with the overrides), so that a connection's result says what its QP runs with.
struct QpGiven {
  uint32_t access_flags = 0;  // IBV_ACCESS_*
  uint8_t path_mtu = 0;       // enum ibv_mtu
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
  uint8_t min_rnr_timer = 0;
  bool operator==(const QpGiven&) const = default;
};
// The READ/atomic depths one connection settled, where the CM's answer does not say them yet:
// the passive side moves its QP to RTR before rdma_accept, when the CM still answers with the
// REQ's numbers (ib_cm_init_qp_attr; librdmacm overrides max_dest_rd_atomic with its accept's
// responder resources for the same reason, ucma_modify_qp_rtr). Caps RTR's max_dest_rd_atomic
// and RTS's max_rd_atomic.
struct DepthCap {
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
};

// Takes the fields `applied` carries (by its mask) into `g`.
void record(QpGiven& g, const prov::QpAttrWithMask& applied);

// Checks the overrides' ranges; the error names the field and the allowed range.
Status validate(const QpOverrides& o);

// Overrides whose ranges were checked, once, by whoever owns them (the engine at create():
// every connection of it shares them), so that the three transitions of every QP do not
// check the same seven fields again. Only check() makes a non-empty one.
class CheckedOverrides {
 public:
  CheckedOverrides() = default;  // none: the CM's attributes as they are
  static Result<CheckedOverrides> check(const QpOverrides& o);
  const QpOverrides& get() const { return o_; }

 private:
  explicit CheckedOverrides(const QpOverrides& o) : o_(o) {}
  QpOverrides o_;
};

// Attribute bits each transition of a connected (RC/UC) QP requires (IBTA 11.2.5.2 table).
uint32_t required_mask(prov::QpState to);

// Applies the overrides to what the CM answered for `to`, in place (a transition edits the
// CM's answer where it lies instead of copying the ~90-byte attributes twice).
void apply_overrides_to(prov::QpAttrWithMask& cm, prov::QpState to, const QpOverrides& o);
// The same, pure (for tests).
inline prov::QpAttrWithMask apply_overrides(prov::QpAttrWithMask cm, prov::QpState to, const QpOverrides& o) {
  apply_overrides_to(cm, to, o);
  return cm;
}

// Checks that `m` carries every bit required for `to`; the error lists the missing ones.
Status check_required(const prov::QpAttrWithMask& m, prov::QpState to, uint32_t qpn);

// Each records what it applied in `given` when there is one (and the modify succeeded).
// to_init also serves INIT -> INIT: the active side redoes INIT once the CM can answer it.
Status to_init(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o = {}, QpGiven* given = nullptr);
Status to_rtr(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o = {}, QpGiven* given = nullptr,
              const DepthCap* cap = nullptr);
Status to_rts(prov::Qp& qp, prov::CmId& id, const CheckedOverrides& o = {}, QpGiven* given = nullptr,
              const DepthCap* cap = nullptr);
// Moves a QP to ERR so outstanding work is flushed (no CM involvement).
Status to_error(prov::Qp& qp);

}  // namespace wireup::qp
