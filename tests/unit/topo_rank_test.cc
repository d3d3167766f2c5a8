// The pure ranking on hand-built placements: each rule of rank.h on its own.
#include <gtest/gtest.h>

#include "topo/rank.h"

namespace wireup::topo {
namespace {

// Two packages of one NUMA node each: package p holds CPUs 8p..8p+7.
Placement on(int package, std::vector<PciBridge> bridges = {}) {
  Placement p;
  p.placed = true;
  p.pci_busid = "0000:" + std::to_string(10 + package) + ":00.0";
  p.bridges = std::move(bridges);
  p.numa_nodes = {static_cast<unsigned>(package)};
  p.numa_cpus = CpuSet::range(8 * package, 8 * package + 7);
  p.package = package;
  p.package_cpus = p.numa_cpus;
  return p;
}

Candidate dev(std::string name, Placement where, PortStatus port = PortStatus::active) {
  Candidate c;
  c.name = std::move(name);
  c.where = std::move(where);
  c.port = port;
  return c;
}

std::vector<std::string> names(const Ranking& r) {
  std::vector<std::string> out;
  for (const Choice& c : r.order) out.push_back(c.device);
  return out;
}

TEST(Rank, BindingPicksTheDeviceOnItsNumaNode) {
  RankInput in;
  in.devices = {dev("mlx5_0", on(0)), dev("mlx5_1", on(1))};
  in.binding = CpuSet::range(8, 11);
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(names(*r), (std::vector<std::string>{"mlx5_1", "mlx5_0"}));
  EXPECT_EQ(r->order[0].nearness, Nearness::same_numa);
  EXPECT_EQ(r->order[0].why, "mlx5_1 is on NUMA node 1, local to every one of the bound CPUs 8-11");
  EXPECT_EQ(r->order[1].nearness, Nearness::machine);
}

TEST(Rank, SamePackageBeatsMachineWhenTheNumaNodeDiffers) {
  Placement pkg_only = on(0);
  pkg_only.numa_nodes = {1};
  pkg_only.numa_cpus = CpuSet::range(4, 7);  // package 0 = NUMA 0 (0-3) + NUMA 1 (4-7)
  RankInput in;
  in.devices = {dev("far", on(1)), dev("near", pkg_only)};
  in.binding = CpuSet::range(0, 3);
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(names(*r), (std::vector<std::string>{"near", "far"}));
  EXPECT_EQ(r->order[0].nearness, Nearness::same_package);
}

TEST(Rank, EquallyNearDevicesAreSpreadByLocalRank) {
  RankInput in;
  in.devices = {dev("a", on(0)), dev("b", on(0)), dev("c", on(0)), dev("d", on(1))};
  in.binding = CpuSet::range(0, 7);
  for (int lr : {0, 1, 2, 3, 7}) {
    in.local_rank = lr;
    Result<Ranking> r = rank_devices(in);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->order[0].device, std::string(1, static_cast<char>('a' + lr % 3))) << "local rank " << lr;
    EXPECT_EQ(r->order.back().device, "d");  // the farther device never enters the rotation
  }
  in.local_rank = -1;
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order[0].device, "a");
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_NE(r->notices[0].find("local rank unknown"), std::string::npos);
}

TEST(Rank, GpuSwitchBeatsCpuNearnessAndCpuBreaksTies) {
  const PciBridge sw{7, "0000:80:03.0"}, other{8, "0000:80:02.0"};
  RankInput in;
  in.devices = {dev("cpu_near", on(0)), dev("gpu_far", on(1, {other})), dev("gpu_near", on(1, {sw}))};
  in.binding = CpuSet::range(0, 7);
  in.gpu = Gpu{"cuda0", on(1, {sw})};
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(names(*r), (std::vector<std::string>{"gpu_near", "gpu_far", "cpu_near"}));
  EXPECT_EQ(r->order[0].nearness, Nearness::same_pci_switch);
  EXPECT_EQ(r->order[0].why, "gpu_near and GPU cuda0 share PCI bridge 0000:80:03.0 (to the CPUs: machine)");
  EXPECT_EQ(r->order[1].nearness, Nearness::same_numa);
  EXPECT_EQ(r->order[2].nearness, Nearness::machine);

  // Two devices equally near the GPU: the one near the CPUs wins, without rotation.
  in.devices = {dev("x", on(1)), dev("y", on(0))};
  in.gpu = Gpu{"cuda9", on(2)};  // on a third package: both are `machine` to it
  in.local_rank = 1;
  r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(names(*r), (std::vector<std::string>{"y", "x"}));
}

TEST(Rank, ExcludeIncludeAndInactivePortsAreSkippedWithReasons) {
  RankInput in;
  in.devices = {dev("mlx5_0", on(0)), dev("mlx5_1", on(0), PortStatus::inactive), dev("mlx5_2", on(1)),
                dev("mlx5_3", on(1))};
  in.devices[1].port_text = "DOWN";
  in.binding = CpuSet::range(0, 7);
  in.exclude = {"mlx5_0"};
  in.include = {"mlx5_0", "mlx5_1", "mlx5_3", "mlx5_9"};
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(names(*r), std::vector<std::string>{"mlx5_3"});  // include overrides the nearer mlx5_0
  ASSERT_EQ(r->skipped.size(), 3u);
  EXPECT_EQ(r->skipped[0].reason, SkipReason::excluded);
  EXPECT_EQ(r->skipped[1].reason, SkipReason::port_inactive);
  EXPECT_EQ(r->skipped[1].why, "mlx5_1 port 1 is DOWN");
  EXPECT_EQ(r->skipped[2].reason, SkipReason::not_included);
  EXPECT_EQ(r->notices, std::vector<std::string>{"device.include names mlx5_9, which is not among the devices here"});
}

TEST(Rank, NothingUsableIsAnErrorThatSaysWhy) {
  RankInput in;
  in.devices = {dev("mlx5_0", on(0), PortStatus::inactive)};
  in.devices[0].port_text = "INIT";
  Result<Ranking> r = rank_devices(in);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::no_device);
  EXPECT_NE(r.error().detail.find("mlx5_0 port 1 is INIT"), std::string::npos);
  EXPECT_FALSE(rank_devices(RankInput{}));
}

TEST(Rank, UnplacedDeviceTiesWithMachineAndSaysSo) {
  Placement rxe;
  rxe.unplaced_why = "hwloc knows no OpenFabrics device named rxe0";
  RankInput in;
  in.devices = {dev("rxe0", rxe), dev("far", on(1))};
  in.binding = CpuSet::range(0, 7);
  in.local_rank = 1;
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r);
  // Equally near: rotated like any tie, local rank 1 takes the second.
  EXPECT_EQ(names(*r), (std::vector<std::string>{"far", "rxe0"}));
  EXPECT_EQ(r->order[1].nearness, Nearness::unplaced);
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_EQ(r->notices[0], "rxe0: hwloc knows no OpenFabrics device named rxe0; counted as equally near every CPU");
  // But a device on the binding's NUMA node is nearer than an unplaced one.
  in.devices.push_back(dev("near", on(0)));
  r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order[0].device, "near");
}

TEST(Rank, UnknownBindingOrPortState) {
  RankInput in;
  in.devices = {dev("a", on(0), PortStatus::unknown), dev("b", on(1))};
  in.local_rank = 0;
  Result<Ranking> r = rank_devices(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order[0].nearness, Nearness::machine);  // no binding: nothing is nearer
  EXPECT_EQ(r->order[1].nearness, Nearness::machine);
  EXPECT_EQ(r->notices, std::vector<std::string>{"a: state of port 1 unknown; ranked as if ACTIVE"});
}

}  // namespace
}  // namespace wireup::topo
