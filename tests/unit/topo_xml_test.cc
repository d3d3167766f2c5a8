// Device choice on real machines (shared/topologies, from hwloc's test suite) and on the
// hand-made multi-NIC, multi-GPU nodes of tests/data/topologies (see make_topologies.py there).
// Every expectation was checked against `lstopo-no-graphics --input FILE`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "topo/topology.h"

namespace wireup::topo {
namespace {

struct Ask {
  std::string cpus = {};  // empty = the whole machine (an unbound process)
  std::string gpu = {};
  int local_rank = 0;
  int port = 1;
  std::vector<std::string> include = {};
  std::vector<std::string> exclude = {};
  std::vector<std::string> extra = {};  // devices the provider would list but hwloc may not know
};

// What wireup_info --topology does, minus the printing.
Result<Ranking> ask(const Topology& t, const Ask& a) {
  RankInput in;
  in.devices = t.candidates(a.port);
  for (const std::string& name : a.extra) {
    Candidate c;
    c.name = name;
    c.port = PortStatus::active;
    c.where = t.place_device(name);
    in.devices.push_back(std::move(c));
  }
  in.binding = a.cpus.empty() ? t.machine_cpus() : CpuSet::parse(a.cpus).value();
  if (!a.gpu.empty()) {
    Result<Placement> g = t.place_gpu(a.gpu);
    if (!g) return g.error();
    in.gpu = Gpu{a.gpu, *g};
  }
  in.local_rank = a.local_rank;
  in.port = a.port;
  in.include = a.include;
  in.exclude = a.exclude;
  return rank_devices(in);
}

// Expect the first choice to be `device` for `nearness`.
void expect_choice(const Topology& t, const Ask& a, const std::string& device, Nearness nearness) {
  Result<Ranking> r = ask(t, a);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->order[0].device, device) << "cpus '" << a.cpus << "' gpu '" << a.gpu << "': " << r->order[0].why;
  EXPECT_EQ(r->order[0].nearness, nearness) << r->order[0].why;
}

std::string shared_file(const char* name) {
  return std::string(WIREUP_SHARED_DIR) + "/topologies/" + name;
}

// In CI (CI=true, as CI services set it) a missing shared file fails the test: a skip there
// would pass a run that tested nothing.
bool ci_run() {
  const char* ci = std::getenv("CI");
  return ci && (std::string(ci) == "true" || std::string(ci) == "1" || std::string(ci) == "yes");
}

#define LOAD(var, path)                                                                            \
  if (!std::filesystem::exists(path)) {                                                            \
    if (ci_run())                                                                                  \
      FAIL() << "CI=" << std::getenv("CI") << ": " << (path) << " does not exist. The shared "     \
             << "topologies live in " << WIREUP_SHARED_DIR << "; configure with -DWIREUP_SHARED_DIR=<folder>"; \
    GTEST_SKIP() << "\n*** SKIPPED: " << (path) << " does not exist. The shared topologies live in " \
                 << WIREUP_SHARED_DIR << "; configure with -DWIREUP_SHARED_DIR=<folder> ***";      \
  }                                                                                                \
  Result<Topology> var##_r = Topology::load_xml(path);                                             \
  ASSERT_TRUE(var##_r) << var##_r.error().message();                                               \
  const Topology& var = *var##_r

const std::string kOwn = std::string(WIREUP_SOURCE_DIR) + "/tests/data/topologies/";

TEST(SharedTopology, Mlx4FollowsTheBindingsPackage) {
  LOAD(t, shared_file("2socket-mlx4.xml"));
  // mlx4_0 hangs off package 0 (NUMA node 0: the even CPUs 0,2,..,22).
  expect_choice(t, {.cpus = "0,2,4"}, "mlx4_0", Nearness::same_numa);
  expect_choice(t, {.cpus = "1,3"}, "mlx4_0", Nearness::machine);
  expect_choice(t, {.cpus = "0-1"}, "mlx4_0", Nearness::machine);  // spans both packages
  // This export carries no port state: ranked as active, with a notice.
  Result<Ranking> r = ask(t, {.cpus = "0"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->notices, std::vector<std::string>{"mlx4_0: state of port 1 unknown; ranked as if ACTIVE"});
}

TEST(SharedTopology, Mlx5SharesARootPortWithTheCudaGpu) {
  LOAD(t, shared_file("2socket-mlx5-cuda.xml"));
  // Package 1 = NUMA node 1 = CPUs 8-15,24-31; mlx5_0 and cuda0 both sit behind root port
  // 0000:80:03.0 of package 1's host bridge.
  expect_choice(t, {.cpus = "8-15"}, "mlx5_0", Nearness::same_numa);
  expect_choice(t, {.cpus = "0-7"}, "mlx5_0", Nearness::machine);
  for (const char* gpu : {"cuda0", "card0", "0000:84:00.0", "84:00.0"})
    expect_choice(t, {.cpus = "0-7", .gpu = gpu}, "mlx5_0", Nearness::same_pci_switch);
  Result<Ranking> r = ask(t, {.gpu = "cuda0"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order[0].why.substr(0, 54), "mlx5_0 and GPU cuda0 share PCI bridge 0000:80:03.0 (to");
  // The Tesla at 83:00.0 has its own root port on the same NUMA node; the one at 03:00.0 is on
  // package 0.
  expect_choice(t, {.gpu = "0000:83:00.0"}, "mlx5_0", Nearness::same_numa);
  expect_choice(t, {.gpu = "0000:03:00.0"}, "mlx5_0", Nearness::machine);
  // Port 1 is ACTIVE in the export; the port we are not configured for is unknown, not skipped.
  EXPECT_TRUE(ask(t, {}).value().notices.empty());
}

TEST(SharedTopology, DevicesAreFoundByNameNotByAmbiguousBusId) {
  LOAD(t, shared_file("2socket-mlx5-cuda.xml"));
  // This export has two PCI functions at 0000:04:00.0 (a SATA controller on package 0 and the
  // ConnectX-4 on package 1); the name decides.
  Placement p = t.place_device("mlx5_0", "0000:04:00.0");
  ASSERT_TRUE(p.placed);
  EXPECT_EQ(p.package, 1);
  EXPECT_EQ(p.numa_nodes, std::vector<unsigned>{1});
  ASSERT_FALSE(p.bridges.empty());
  EXPECT_EQ(p.bridges[0].busid, "0000:80:03.0");
  Result<Placement> bad = t.place_gpu("cuda7");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().detail.find("GPU devices there: cuda0, card0, opencl0d1"), std::string::npos)
      << bad.error().detail;
}

TEST(SharedTopology, UsnicSpreadsOverThePackagesTwoDevices) {
  LOAD(t, shared_file("2socket-3usnic.xml"));
  // usnic_0 and usnic_1 under package 0 (CPUs 0-7), usnic_2 under package 1 (CPUs 8-15).
  expect_choice(t, {.cpus = "0-7", .local_rank = 0}, "usnic_0", Nearness::same_numa);
  expect_choice(t, {.cpus = "0-7", .local_rank = 1}, "usnic_1", Nearness::same_numa);
  expect_choice(t, {.cpus = "0-7", .local_rank = 2}, "usnic_0", Nearness::same_numa);
  expect_choice(t, {.cpus = "8-15", .local_rank = 1}, "usnic_2", Nearness::same_numa);
  expect_choice(t, {.cpus = "8-15", .exclude = {"usnic_2"}}, "usnic_0", Nearness::machine);
}

TEST(OwnTopology, EachGpuGetsTheNicBehindItsSwitch) {
  LOAD(t, kOwn + "2pkg-4nic-4gpu.xml");
  for (int n = 0; n < 4; ++n) {
    const std::string nic = "mlx5_" + std::to_string(n);
    for (const std::string& gpu : {"cuda" + std::to_string(n), "nvml" + std::to_string(n)})
      for (int lr = 0; lr < 4; ++lr)  // a switch-local NIC is never rotated away
        expect_choice(t, {.gpu = gpu, .local_rank = lr}, nic, Nearness::same_pci_switch);
  }
  // GPU 0's own NIC excluded: the next best is the other NUMA node of package 0.
  expect_choice(t, {.gpu = "cuda0", .exclude = {"mlx5_0"}}, "mlx5_1", Nearness::same_package);
  // Bus id of GPU 3 works as well as its name.
  expect_choice(t, {.gpu = "0000:c3:00.0"}, "mlx5_3", Nearness::same_pci_switch);
}

TEST(OwnTopology, BindingPicksTheSameNumaNic) {
  LOAD(t, kOwn + "2pkg-4nic-4gpu.xml");
  // NUMA node n = CPUs 16n..16n+15; package p = NUMA nodes 2p, 2p+1.
  expect_choice(t, {.cpus = "0-15"}, "mlx5_0", Nearness::same_numa);
  expect_choice(t, {.cpus = "20-23"}, "mlx5_1", Nearness::same_numa);
  expect_choice(t, {.cpus = "33"}, "mlx5_2", Nearness::same_numa);
  expect_choice(t, {.cpus = "48-63", .local_rank = 3}, "mlx5_3", Nearness::same_numa);
  // A binding over package 0's two NUMA nodes: its two NICs tie and are spread.
  expect_choice(t, {.cpus = "0-31", .local_rank = 0}, "mlx5_0", Nearness::same_package);
  expect_choice(t, {.cpus = "0-31", .local_rank = 1}, "mlx5_1", Nearness::same_package);
  expect_choice(t, {.cpus = "0-31", .local_rank = 2}, "mlx5_0", Nearness::same_package);
}

TEST(OwnTopology, UnboundProcessesSpreadOverAllFourNics) {
  LOAD(t, kOwn + "2pkg-4nic-4gpu.xml");
  for (int lr = 0; lr < 8; ++lr)
    expect_choice(t, {.local_rank = lr}, "mlx5_" + std::to_string(lr % 4), Nearness::machine);
}

TEST(OwnTopology, IncludeAndExcludeOverrideTheRanking) {
  LOAD(t, kOwn + "2pkg-4nic-4gpu.xml");
  expect_choice(t, {.cpus = "0-15", .local_rank = 1, .include = {"mlx5_2", "mlx5_3"}}, "mlx5_3", Nearness::machine);
  expect_choice(t, {.cpus = "0-15", .exclude = {"mlx5_0"}}, "mlx5_1", Nearness::same_package);
  Result<Ranking> r = ask(t, {.cpus = "0-15", .exclude = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::no_device);
}

TEST(OwnTopology, InactivePortIsSkippedAndTheOtherPortUsed) {
  LOAD(t, kOwn + "2pkg-odd-nics.xml");
  // mlx5_0 (package 0) has port 1 DOWN and port 2 ACTIVE; mlx5_1 hangs off the machine root.
  Result<Ranking> r = ask(t, {.cpus = "0-7", .port = 1});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->order[0].device, "mlx5_1");
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].why, "mlx5_0 port 1 is DOWN");
  expect_choice(t, {.cpus = "0-7", .port = 2, .exclude = {"mlx5_1"}}, "mlx5_0", Nearness::same_numa);
}

TEST(OwnTopology, DeviceAtTheMachineRootHasNoLocality) {
  LOAD(t, kOwn + "2pkg-odd-nics.xml");
  Placement p = t.place_device("mlx5_1");
  ASSERT_TRUE(p.placed);
  EXPECT_TRUE(p.numa_nodes.empty());  // "unknown", not "near both nodes"
  EXPECT_EQ(p.package, -1);
  expect_choice(t, {.cpus = "8-15", .port = 1}, "mlx5_1", Nearness::machine);
}

TEST(OwnTopology, SoftwareDeviceIsUnplacedAndEquallyNear) {
  LOAD(t, kOwn + "2pkg-4nic-4gpu.xml");
  Placement p = t.place_device("rxe0");
  EXPECT_FALSE(p.placed);
  EXPECT_NE(p.unplaced_why.find("no PCI bus id was given"), std::string::npos) << p.unplaced_why;
  // Unbound: rxe0 ties with the four NICs and takes its turn in the rotation.
  expect_choice(t, {.local_rank = 4, .extra = {"rxe0"}}, "rxe0", Nearness::unplaced);
  // Bound to NUMA node 2: the NIC there wins; rxe0 is no nearer than anything.
  Result<Ranking> r = ask(t, {.cpus = "32-47", .extra = {"rxe0"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order[0].device, "mlx5_2");
  EXPECT_EQ(r->notices.size(), 1u);
  EXPECT_NE(r->notices[0].find("rxe0: "), std::string::npos);
}

TEST(Topology, LoadErrorsSayWhatIsWrong) {
  Result<Topology> missing = Topology::load_xml("/nonexistent/topo.xml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("/nonexistent/topo.xml: cannot read the file"), std::string::npos)
      << missing.error().message();
  Result<Topology> live = Topology::load_live();
  ASSERT_TRUE(live) << live.error().message();
  EXPECT_TRUE(live->is_live());
  EXPECT_FALSE(live->machine_cpus().empty());
  Result<CpuSet> bound = live->process_binding();
  ASSERT_TRUE(bound) << bound.error().message();
  EXPECT_TRUE(live->machine_cpus().includes(*bound));
}

}  // namespace
}  // namespace wireup::topo
