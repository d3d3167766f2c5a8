// The ECE negotiation matrix as pure functions: every mode x device support x vendor x
// required bits, both sides.
#include <gtest/gtest.h>

#include "ece/policy.h"

namespace wireup::ece {
namespace {

constexpr uint32_t kV = 0x15b3;
constexpr uint32_t kOther = 0x8086;
const std::optional<prov::Ece> kNoEce;  // ibv_query_ece answered EOPNOTSUPP

Policy pol(Mode m, uint32_t wanted = 0, uint32_t required = 0) { return Policy{m, wanted, required, 0}; }

TEST(EcePolicy, OfferFollowsModeAndDevice) {
  EXPECT_FALSE(offer(pol(Mode::off), prov::Ece{kV, 7}));
  EXPECT_FALSE(offer(pol(Mode::auto_), kNoEce));
  EXPECT_EQ(offer(pol(Mode::auto_), prov::Ece{kV, 7}), (prov::Ece{kV, 7}));
  EXPECT_EQ(offer(pol(Mode::on, 0x5), prov::Ece{kV, 7}), (prov::Ece{kV, 5}));
  EXPECT_FALSE(offer(pol(Mode::auto_), prov::Ece{kV, 0})) << "an mlx5 without ECE: nothing to offer";
  EXPECT_FALSE(offer(pol(Mode::auto_, 0x8), prov::Ece{kV, 7})) << "masked to nothing";
  Policy p = pol(Mode::on);
  p.vendor_id = kOther;
  EXPECT_EQ(offer(p, prov::Ece{kV, 3}), (prov::Ece{kOther, 3}));
}

// The passive side asks its firmware for the offer (masked by the policy), whatever query
// said before: mlx5's firmware decides at RTR, and what it took is checked then (on_taken).
TEST(EcePolicy, PassiveAsksForTheOfferMaskedByThePolicy) {
  auto d = on_request(pol(Mode::auto_), prov::Ece{kV, 0x6}, prov::Ece{kV, 0x3});
  EXPECT_FALSE(d.reject);
  EXPECT_EQ(d.outcome, Outcome::negotiated);
  EXPECT_EQ(d.accepted, 0x3u);
  // An mlx5 without ECE answers query {0x15b3, 0}: still asked (set says EOPNOTSUPP).
  EXPECT_EQ(on_request(pol(Mode::auto_), prov::Ece{kV, 0}, prov::Ece{kV, 0x3}).accepted, 0x3u);
  // Nothing to ask for: nothing to set.
  auto none = on_request(pol(Mode::auto_, 0x4), prov::Ece{kV, 0x7}, prov::Ece{kV, 0x3});
  EXPECT_FALSE(none.reject);
  EXPECT_EQ(none.outcome, Outcome::unsupported);
  EXPECT_EQ(none.accepted, 0u);
  EXPECT_TRUE(on_request(pol(Mode::required), prov::Ece{kV, 0x7}, prov::Ece{kV, 0}).reject);
}

TEST(EcePolicy, WhatTheFirmwareTookIsWhatCounts) {
  auto d = on_taken(pol(Mode::auto_), 0x7, 0x5);
  EXPECT_FALSE(d.reject);
  EXPECT_EQ(d.outcome, Outcome::negotiated);
  EXPECT_EQ(d.accepted, 0x5u);
  auto miss = on_taken(pol(Mode::on, 0, 0x2), 0x7, 0x5);
  EXPECT_TRUE(miss.reject);
  EXPECT_EQ(miss.outcome, Outcome::rejected);
  EXPECT_NE(miss.why.find("took options 0x5 of 0x7"), std::string::npos) << miss.why;
  auto nothing = on_taken(pol(Mode::auto_), 0x7, 0);
  EXPECT_FALSE(nothing.reject);
  EXPECT_EQ(nothing.outcome, Outcome::unsupported);
  EXPECT_TRUE(on_taken(pol(Mode::required), 0x7, 0).reject);
  EXPECT_FALSE(on_taken(pol(Mode::required), 0x7, 0x1).reject);
  EXPECT_EQ(on_taken(pol(Mode::off), 0x7, 0x7).outcome, Outcome::disabled);
}

TEST(EcePolicy, PassiveMasksByWanted) {
  auto d = on_request(pol(Mode::on, 0x4), prov::Ece{kV, 0x7}, prov::Ece{kV, 0x7});
  EXPECT_EQ(d.accepted, 0x4u);
}

TEST(EcePolicy, VendorMismatchGivesZeroOptions) {
  auto d = on_request(pol(Mode::auto_), prov::Ece{kV, 0x7}, prov::Ece{kOther, 0x7});
  EXPECT_FALSE(d.reject);
  EXPECT_EQ(d.outcome, Outcome::vendor_mismatch);
  EXPECT_EQ(d.accepted, 0u);
}

TEST(EcePolicy, DeviceWithoutEceGoesOnInAuto) {
  auto d = on_request(pol(Mode::auto_), kNoEce, prov::Ece{kV, 0x7});
  EXPECT_FALSE(d.reject);
  EXPECT_EQ(d.outcome, Outcome::unsupported);
  auto a = on_reply(pol(Mode::auto_), std::nullopt, prov::Ece{0, 0});
  EXPECT_FALSE(a.reject);
  EXPECT_EQ(a.outcome, Outcome::unsupported);
}

TEST(EcePolicy, RequiredBitMissingRejectsWith35) {
  auto d = on_request(pol(Mode::required, 0, 0x8), prov::Ece{kV, 0xf}, prov::Ece{kV, 0x7});
  EXPECT_TRUE(d.reject);
  EXPECT_EQ(d.outcome, Outcome::rejected);
  EXPECT_NE(d.why.find("0x8"), std::string::npos) << d.why;
}

TEST(EcePolicy, RequiredModeWithoutEceRejects) {
  EXPECT_TRUE(on_request(pol(Mode::required), kNoEce, prov::Ece{kV, 1}).reject);
  EXPECT_TRUE(on_request(pol(Mode::required), prov::Ece{kV, 1}, prov::Ece{0, 0}).reject);
  EXPECT_TRUE(on_request(pol(Mode::required), prov::Ece{kV, 1}, prov::Ece{kOther, 1}).reject);
  EXPECT_FALSE(on_request(pol(Mode::required), prov::Ece{kV, 1}, prov::Ece{kV, 1}).reject);
}

TEST(EcePolicy, ActiveChecksTheReply) {
  prov::Ece offered{kV, 0x7};
  auto ok = on_reply(pol(Mode::auto_), offered, prov::Ece{kV, 0x5});
  EXPECT_EQ(ok.outcome, Outcome::negotiated);
  EXPECT_EQ(ok.accepted, 0x5u);
  // A reply cannot widen the offer.
  EXPECT_EQ(on_reply(pol(Mode::auto_), prov::Ece{kV, 0x1}, prov::Ece{kV, 0x3}).accepted, 0x1u);
  // Required bit dropped by the passive side: the active side refuses.
  EXPECT_TRUE(on_reply(pol(Mode::on, 0, 0x2), offered, prov::Ece{kV, 0x1}).reject);
  EXPECT_EQ(on_reply(pol(Mode::auto_), offered, prov::Ece{kOther, 1}).outcome, Outcome::vendor_mismatch);
  // The REP echoes our vendor id with options 0 when the passive side negotiated nothing.
  auto none = on_reply(pol(Mode::auto_), offered, prov::Ece{kV, 0});
  EXPECT_FALSE(none.reject);
  EXPECT_EQ(none.outcome, Outcome::unsupported);
  EXPECT_TRUE(on_reply(pol(Mode::required), offered, prov::Ece{kV, 0}).reject);
}

TEST(EcePolicy, OffIsDisabledEverywhere) {
  EXPECT_EQ(on_request(pol(Mode::off), prov::Ece{kV, 1}, prov::Ece{kV, 1}).outcome, Outcome::disabled);
  EXPECT_EQ(on_reply(pol(Mode::off), prov::Ece{kV, 1}, prov::Ece{kV, 1}).outcome, Outcome::disabled);
}

TEST(EcePolicy, ModeNamesRoundTrip) {
  for (Mode m : {Mode::off, Mode::auto_, Mode::on, Mode::required})
    EXPECT_EQ(mode_from_string(to_string(m)), m);
  EXPECT_FALSE(mode_from_string("maybe"));
}

}  // namespace
}  // namespace wireup::ece
