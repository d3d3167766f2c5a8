// The rail set (topo/rails.h): each rule on hand-built placements, then on the multi-NIC
// topologies of tests/data/topologies (checked with `lstopo-no-graphics --input FILE`).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "topo/rails.h"
#include "topo/topology.h"

namespace wireup::topo {
namespace {

// Package p (one NUMA node) holds CPUs 8p..8p+7; a device sits on PCI bus `bus`, function `fn`.
Candidate dev(std::string name, int package, int bus, int fn = 0, PortStatus port = PortStatus::active) {
  Candidate c;
  c.name = std::move(name);
  c.port = port;
  c.port_text = port == PortStatus::inactive ? "DOWN" : "ACTIVE";
  c.where.placed = true;
  char busid[32];
  std::snprintf(busid, sizeof busid, "0000:%02x:00.%d", bus, fn);
  c.where.pci_busid = busid;
  c.where.numa_nodes = {static_cast<unsigned>(package)};
  c.where.numa_cpus = CpuSet::range(8 * package, 8 * package + 7);
  c.where.package = package;
  c.where.package_cpus = c.where.numa_cpus;
  return c;
}

std::vector<std::string> names(const RailSet& s) {
  std::vector<std::string> out;
  for (const Rail& r : s.rails) out.push_back(r.device);
  return out;
}

using Names = std::vector<std::string>;

RailSet rails(RankInput in, int count, int local_rank) {
  in.local_rank = local_rank;
  Result<RailSet> r = choose_rails(in, RailCount{count});
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : RailSet{};
}

TEST(Rails, CardIsTheSlotWithoutTheFunction) {
  EXPECT_EQ(card_of("mlx5_1", "0000:21:00.1"), "0000:21:00");
  EXPECT_EQ(card_of("rxe0", ""), "rxe0");
  EXPECT_EQ(card_of("odd", "nodot"), "odd");
}

TEST(Rails, OneRailIsTheSingleDeviceRotation) {
  RankInput in;
  in.devices = {dev("a", 0, 0x21), dev("b", 0, 0x22), dev("c", 0, 0x23)};
  in.binding = CpuSet::range(0, 7);
  for (int lr = 0; lr < 6; ++lr) {
    RankInput single = in;
    single.local_rank = lr;
    EXPECT_EQ(names(rails(in, 1, lr)), Names{rank_devices(single)->order[0].device}) << "local rank " << lr;
  }
}

TEST(Rails, EqualProcessesSplitTheNearDevices) {
  RankInput in;
  in.devices = {dev("a", 0, 0x21), dev("b", 0, 0x22), dev("c", 0, 0x23), dev("d", 0, 0x24)};
  in.binding = CpuSet::range(0, 7);
  EXPECT_EQ(names(rails(in, 2, 0)), (Names{"a", "b"}));
  EXPECT_EQ(names(rails(in, 2, 1)), (Names{"c", "d"}));
  EXPECT_EQ(names(rails(in, 2, 2)), (Names{"a", "b"}));
  EXPECT_EQ(names(rails(in, 2, 3)), (Names{"c", "d"}));
}

TEST(Rails, TwoPortsOfOneCardOnlyWhenNoOtherNearCardIsLeft) {
  RankInput in;  // card 0x21 has two ports (two PCI functions), card 0x22 one
  in.devices = {dev("a0", 0, 0x21, 0), dev("a1", 0, 0x21, 1), dev("b0", 0, 0x22, 0), dev("far", 1, 0x81)};
  in.binding = CpuSet::range(0, 7);
  RailSet r0 = rails(in, 2, 0);
  EXPECT_EQ(names(r0), (Names{"a0", "b0"}));
  EXPECT_EQ(r0.rails[0].card, "0000:21:00");
  EXPECT_TRUE(r0.notices.empty());
  // The next local rank starts on the other port of card a: both cards again, other port.
  EXPECT_EQ(names(rails(in, 2, 1)), (Names{"a1", "b0"}));
  // Three rails: the near group has two cards and three devices; the third rail is card a's
  // other port (equally near), not the far device, and says so.
  RailSet r3 = rails(in, 3, 0);
  EXPECT_EQ(names(r3), (Names{"a0", "b0", "a1"}));
  EXPECT_NE(r3.rails[2].why.find("shares card 0000:21:00"), std::string::npos) << r3.rails[2].why;
  ASSERT_EQ(r3.notices.size(), 1u);
  EXPECT_EQ(r3.notices[0], "a1 shares card 0000:21:00 with another rail of this process");
  // Four: then the next group.
  EXPECT_EQ(names(rails(in, 4, 0)), (Names{"a0", "b0", "a1", "far"}));
  EXPECT_EQ(rails(in, 4, 0).rails[3].nearness, Nearness::machine);
}

TEST(Rails, AllEquallyNearTakesTheBestGroup) {
  RankInput in;
  in.devices = {dev("far0", 1, 0x81), dev("a", 0, 0x21), dev("b", 0, 0x22), dev("far1", 1, 0x82)};
  in.binding = CpuSet::range(0, 3);
  EXPECT_EQ(names(rails(in, RailCount::kAllEquallyNear, 0)), (Names{"a", "b"}));
  EXPECT_EQ(names(rails(in, RailCount::kAllEquallyNear, 1)), (Names{"a", "b"}));  // all of them: no rotation to do
  in.binding = {};  // no binding known: every device is equally near
  EXPECT_EQ(rails(in, RailCount::kAllEquallyNear, 0).rails.size(), 4u);
}

TEST(Rails, DownPortsAndFilteredDevicesAreSkippedWithTheirReason) {
  RankInput in;
  in.devices = {dev("a", 0, 0x21), dev("down", 0, 0x22, 0, PortStatus::inactive), dev("x", 0, 0x23),
                dev("b", 0, 0x24)};
  in.binding = CpuSet::range(0, 7);
  in.exclude = {"x"};
  RailSet s = rails(in, 2, 0);
  EXPECT_EQ(names(s), (Names{"a", "b"}));
  ASSERT_EQ(s.skipped.size(), 2u);
  EXPECT_EQ(s.skipped[0].device, "down");
  EXPECT_EQ(s.skipped[0].reason, SkipReason::port_inactive);
  EXPECT_EQ(s.skipped[0].why, "down port 1 is DOWN");
  EXPECT_EQ(s.skipped[1].reason, SkipReason::excluded);
}

TEST(Rails, MoreRailsThanDevicesUsesAllAndSaysSo) {
  RankInput in;
  in.devices = {dev("a", 0, 0x21), dev("b", 1, 0x81)};
  in.binding = CpuSet::range(0, 7);
  RailSet s = rails(in, 4, 0);
  EXPECT_EQ(names(s), (Names{"a", "b"}));
  ASSERT_FALSE(s.notices.empty());
  EXPECT_EQ(s.notices[0], "4 rails asked, 2 usable devices: using all of them");
}

TEST(Rails, UnknownLocalRankStartsAtTheFirstAndSaysSo) {
  RankInput in;
  in.devices = {dev("a", 0, 0x21), dev("b", 0, 0x22)};
  in.binding = CpuSet::range(0, 7);
  RailSet s = rails(in, 1, -1);
  EXPECT_EQ(names(s), Names{"a"});
  ASSERT_EQ(s.notices.size(), 1u);
  EXPECT_EQ(s.notices[0], "local rank unknown: the 2 equally near devices are not spread over the node's processes");
}

TEST(Rails, NothingUsableIsNoDevice) {
  RankInput in;
  in.devices = {dev("down", 0, 0x22, 0, PortStatus::inactive)};
  Result<RailSet> r = choose_rails(in, RailCount{2});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), ErrorCode::no_device);
  EXPECT_FALSE(choose_rails(in, RailCount{-1}));
}

// On the hwloc exports. In CI a missing file fails (see topo_xml_test.cc for why).
Result<RailSet> on_xml(const std::string& file, const std::string& cpus, const std::string& gpu, int count,
                       int local_rank) {
  Result<Topology> t = Topology::load_xml(std::string(WIREUP_SOURCE_DIR) + "/tests/data/topologies/" + file);
  if (!t) return t.error();
  RankInput in;
  in.devices = t->candidates(1);
  in.binding = cpus.empty() ? t->machine_cpus() : CpuSet::parse(cpus).value();
  if (!gpu.empty()) in.gpu = Gpu{gpu, t->place_gpu(gpu).value()};
  in.local_rank = local_rank;
  return choose_rails(in, RailCount{count});
}

Names xml_rails(const std::string& file, const std::string& cpus, const std::string& gpu, int count, int lr) {
  Result<RailSet> r = on_xml(file, cpus, gpu, count, lr);
  EXPECT_TRUE(r) << r.error().message();
  return r ? names(*r) : Names{};
}

TEST(RailsTopology, DualPortCardsPerPackage) {
  // Package 0 = CPUs 0-15: cards 0000:21:00 (mlx5_0, mlx5_1) and 0000:22:00 (mlx5_2, and
  // mlx5_3 whose port is down); package 1 = CPUs 16-31: mlx5_4..7 on 0000:81:00, 0000:82:00.
  const std::string f = "2pkg-2x2port.xml";
  EXPECT_EQ(xml_rails(f, "0-15", "", 2, 0), (Names{"mlx5_0", "mlx5_2"}));
  EXPECT_EQ(xml_rails(f, "0-15", "", 2, 1), (Names{"mlx5_1", "mlx5_2"}));
  EXPECT_EQ(xml_rails(f, "0-15", "", 2, 2), (Names{"mlx5_2", "mlx5_1"}));
  EXPECT_EQ(xml_rails(f, "16-31", "", 2, 0), (Names{"mlx5_4", "mlx5_6"}));
  EXPECT_EQ(xml_rails(f, "16-31", "", 2, 1), (Names{"mlx5_5", "mlx5_7"}));
  EXPECT_EQ(xml_rails(f, "16-31", "", RailCount::kAllEquallyNear, 0),
            (Names{"mlx5_4", "mlx5_6", "mlx5_5", "mlx5_7"}));
  // Four rails from package 0: its three live devices (one card twice), then package 1's first.
  EXPECT_EQ(xml_rails(f, "0-15", "", 4, 0), (Names{"mlx5_0", "mlx5_2", "mlx5_1", "mlx5_4"}));
  Result<RailSet> r = on_xml(f, "0-15", "", 2, 0);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].device, "mlx5_3");
  EXPECT_EQ(r->skipped[0].reason, SkipReason::port_inactive);
}

TEST(RailsTopology, SharedUsnicMachine) {
  // hwloc's 16intel64-manyVFs export: usnic_0 (0000:0b:00) and usnic_1 (0000:0c:00) under
  // package 0 (CPUs 0-7), usnic_2 under package 1. In CI a missing shared file fails.
  const std::string f = std::string(WIREUP_SHARED_DIR) + "/topologies/2socket-3usnic.xml";
  if (!std::filesystem::exists(f)) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << f << " does not exist (configure -DWIREUP_SHARED_DIR)";
    GTEST_SKIP() << "\n*** SKIPPED: " << f << " does not exist ***";
  }
  Result<Topology> t = Topology::load_xml(f);
  ASSERT_TRUE(t) << t.error().message();
  auto rails_for = [&](const std::string& cpus, int count, int lr) {
    RankInput in;
    in.devices = t->candidates(1);
    in.binding = CpuSet::parse(cpus).value();
    in.local_rank = lr;
    Result<RailSet> r = choose_rails(in, RailCount{count});
    EXPECT_TRUE(r) << r.error().message();
    return r ? names(*r) : Names{};
  };
  for (int lr = 0; lr < 4; ++lr) EXPECT_EQ(rails_for("0-7", 2, lr), (Names{"usnic_0", "usnic_1"})) << lr;
  EXPECT_EQ(rails_for("0-7", 1, 1), Names{"usnic_1"});
  EXPECT_EQ(rails_for("0-7", 3, 0), (Names{"usnic_0", "usnic_1", "usnic_2"}));
  EXPECT_EQ(rails_for("8-15", 2, 0), (Names{"usnic_2", "usnic_0"}));
  EXPECT_EQ(rails_for("8-15", 2, 1), (Names{"usnic_2", "usnic_1"}));
}

TEST(RailsTopology, GpuNodeTakesItsSwitchNicFirst) {
  // GPU n and mlx5_n share PCIe switch n; NUMA node n; package n / 2.
  EXPECT_EQ(xml_rails("2pkg-4nic-4gpu.xml", "", "cuda1", 1, 0), Names{"mlx5_1"});
  EXPECT_EQ(xml_rails("2pkg-4nic-4gpu.xml", "", "cuda1", 2, 0), (Names{"mlx5_1", "mlx5_0"}));
  EXPECT_EQ(xml_rails("2pkg-4nic-4gpu.xml", "", "cuda2", 2, 3), (Names{"mlx5_2", "mlx5_3"}));
  EXPECT_EQ(xml_rails("2pkg-4nic-4gpu.xml", "", "cuda1", RailCount::kAllEquallyNear, 0), Names{"mlx5_1"});
}

}  // namespace
}  // namespace wireup::topo
