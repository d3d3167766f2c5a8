// QP transition checks: required attributes per state, override ranges, caps.
#include <gtest/gtest.h>

#include "qp/transitions.h"

namespace wireup::qp {
namespace {

using prov::QpState;
namespace m = prov::qp_mask;

prov::QpAttrWithMask rtr_from_cm() {
  prov::QpAttrWithMask a;
  a.attr.qp_state = QpState::rtr;
  a.attr.path_mtu = 5;  // 4096
  a.attr.dest_qp_num = 0x42;
  a.attr.max_dest_rd_atomic = 8;
  a.mask = m::state | m::av | m::path_mtu | m::dest_qpn | m::rq_psn | m::max_dest_rd_atomic | m::min_rnr_timer;
  return a;
}

TEST(QpTransitions, RequiredMaskIsCheckedAndNamed) {
  auto a = rtr_from_cm();
  EXPECT_TRUE(check_required(a, QpState::rtr, 7));
  a.mask &= ~(m::dest_qpn | m::path_mtu);
  Status s = check_required(a, QpState::rtr, 7);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_NE(s.message().find("PATH_MTU|DEST_QPN"), std::string::npos) << s.message();
  EXPECT_EQ(s.error().qpn, 7u);
}

TEST(QpTransitions, WrongTargetStateIsRefused) {
  auto a = rtr_from_cm();
  Status s = check_required(a, QpState::rts, 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("attributes are for RTR, not RTS"), std::string::npos) << s.message();
}

TEST(QpTransitions, OverridesCapAndReplace) {
  QpOverrides o;
  o.path_mtu = 3;  // 1024
  o.max_dest_rd_atomic = 2;
  o.min_rnr_timer = 14;
  auto r = apply_overrides(rtr_from_cm(), QpState::rtr, o);
  EXPECT_EQ(r.attr.path_mtu, 3u);
  EXPECT_EQ(r.attr.max_dest_rd_atomic, 2);
  EXPECT_EQ(r.attr.min_rnr_timer, 14);
  // A cap never raises what the CM chose.
  o.path_mtu = 5;
  auto low = rtr_from_cm();
  low.attr.path_mtu = 2;
  EXPECT_EQ(apply_overrides(low, QpState::rtr, o).attr.path_mtu, 2u);
}

TEST(QpTransitions, RtsOverridesSetTheirBits) {
  prov::QpAttrWithMask a;
  a.attr.qp_state = QpState::rts;
  a.mask = m::state | m::sq_psn | m::max_qp_rd_atomic;
  QpOverrides o;
  o.timeout = 14;  // 67.1 ms
  o.retry_cnt = 7;
  o.rnr_retry = 7;
  auto r = apply_overrides(a, QpState::rts, o);
  EXPECT_TRUE(check_required(r, QpState::rts, 1));
  EXPECT_EQ(r.attr.timeout, 14);
}

TEST(QpTransitions, OverrideRangesAreNamed) {
  QpOverrides o;
  o.path_mtu = 9;
  Status s = validate(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("path_mtu = 9 is outside [1, 5]"), std::string::npos) << s.message();
  o = {};
  o.retry_cnt = 8;
  EXPECT_NE(validate(o).message().find("retry_cnt"), std::string::npos);
  o = {};
  o.timeout = 32;
  EXPECT_NE(validate(o).message().find("timeout"), std::string::npos);
  EXPECT_TRUE(validate(QpOverrides{}));
}

TEST(QpTransitions, InitRequiresPkeyPortAccess) {
  EXPECT_EQ(required_mask(QpState::init), m::state | m::pkey_index | m::port | m::access_flags);
}

}  // namespace
}  // namespace wireup::qp
