// READ/atomic depths: this side's offer against the device, the passive side's answer.
#include <gtest/gtest.h>

#include "cm/depth.h"

namespace wireup::cm {
namespace {

prov::DeviceInfo device(uint32_t rd_atom, uint32_t init_rd_atom) {
  prov::DeviceInfo d;
  d.name = "mlx5_0";
  d.max_qp_rd_atom = rd_atom;
  d.max_qp_init_rd_atom = init_rd_atom;
  return d;
}

TEST(Depths, UnsetMeansTheDevicesBounds) {
  auto d = local_depths(std::nullopt, std::nullopt, device(16, 8));
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->initiator_depth, 8);       // max_qp_init_rd_atom bounds what we issue
  EXPECT_EQ(d->responder_resources, 16);  // max_qp_rd_atom bounds what we take
}

TEST(Depths, BoundsAboveTheCmFieldAreClamped) {
  auto d = local_depths(std::nullopt, std::nullopt, device(1000, 300));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->initiator_depth, 255);
  EXPECT_EQ(d->responder_resources, 255);
}

TEST(Depths, ConfiguredWithinTheBoundIsKept) {
  auto d = local_depths(uint8_t{0}, uint8_t{3}, device(16, 16));
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, (Depths{0, 3}));
}

TEST(Depths, AboveTheDeviceIsRefusedNamingBothNumbers) {
  auto a = local_depths(uint8_t{17}, std::nullopt, device(16, 16));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.code(), ErrorCode::invalid_argument);
  EXPECT_NE(a.error().message().find("qp.max_rd_atomic (initiator depth) 17 is above device mlx5_0's max_qp_init_rd_atom 16"),
            std::string::npos)
      << a.error().message();
  auto b = local_depths(std::nullopt, uint8_t{20}, device(16, 16));
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message().find("qp.max_dest_rd_atomic (responder resources) 20 is above device mlx5_0's max_qp_rd_atom 16"),
            std::string::npos)
      << b.error().message();
}

TEST(Depths, TheAnswerNeverIssuesMoreThanThePeerTakes) {
  // The REQ in the passive side's view: the peer takes 2 as a target, will issue 6.
  const Depths req{2, 6};
  EXPECT_EQ(answer_depths(Depths{16, 16}, req), (Depths{2, 6}));
  EXPECT_EQ(answer_depths(Depths{1, 4}, req), (Depths{1, 4}));
  EXPECT_EQ(answer_depths(Depths{16, 16}, Depths{0, 0}), (Depths{0, 0}));
}

}  // namespace
}  // namespace wireup::cm
