// src/host/netdev on the captured layouts of tests/data/sysfs (see make_layouts.py there):
// device + port -> netdev -> address, with the addresses each layout's ifaddrs file lists.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "host/netdev.h"

namespace wireup::host {
namespace {

const std::string kLayouts = std::string(WIREUP_SOURCE_DIR) + "/tests/data/sysfs/";

struct Decision {
  std::string netdev, ip, why;
};

// The whole decision for (device, port) of a layout, with that layout's addresses.
Result<Decision> decide(const std::string& layout, const std::string& dev, int port) {
  Result<AddrLookup> addrs = file_addresses(kLayouts + layout + "/ifaddrs");
  if (!addrs) return addrs.error();
  Result<ListenChoice> c = device_listen_address(kLayouts + layout, dev, port, *addrs);
  if (!c) return c.error();
  return Decision{c->netdev, c->ip, c->why};
}

std::vector<std::string> names(const PortNetdevs& p) {
  std::vector<std::string> v;
  for (const NetdevCandidate& c : p.netdevs) v.push_back(c.netdev);
  return v;
}

TEST(HostNetdev, DualPortConnectX3OnInfiniBandMapsEachPortToItsIpoib) {
  Result<PortNetdevs> p1 = port_netdevs(kLayouts + "ib-connectx3-dual", "mlx4_0", 1);
  ASSERT_TRUE(p1) << p1.error().message();
  EXPECT_EQ(p1->link_layer, "InfiniBand");
  // The parent first, then its P_Key child; ib1 (dev_port 1) belongs to port 2.
  ASSERT_EQ(names(*p1), (std::vector<std::string>{"ib0", "ib0.8001"}));
  EXPECT_NE(p1->netdevs[1].why.find("IPoIB child of ib0, P_Key 0x8001"), std::string::npos) << p1->netdevs[1].why;
  Result<PortNetdevs> p2 = port_netdevs(kLayouts + "ib-connectx3-dual", "mlx4_0", 2);
  ASSERT_TRUE(p2) << p2.error().message();
  ASSERT_EQ(names(*p2), (std::vector<std::string>{"ib1"}));  // dev_id is 0x0 on both: dev_port decides
  EXPECT_NE(p2->netdevs[0].why.find("dev_port 1 = port 2"), std::string::npos) << p2->netdevs[0].why;
}

TEST(HostNetdev, IpoibAddressIsIpv4FirstThenGlobalIpv6) {
  Result<Decision> d1 = decide("ib-connectx3-dual", "mlx4_0", 1);
  ASSERT_TRUE(d1) << d1.error().message();
  EXPECT_EQ(d1->netdev, "ib0");
  EXPECT_EQ(d1->ip, "10.1.0.11");  // listed after ib0's link-local IPv6: IPv4 still wins
  Result<Decision> d2 = decide("ib-connectx3-dual", "mlx4_0", 2);
  ASSERT_TRUE(d2) << d2.error().message();
  EXPECT_EQ(d2->netdev, "ib1");
  EXPECT_EQ(d2->ip, "fd00:1::11");  // no IPv4 on ib1; its link-local is passed over
  EXPECT_NE(d2->why.find("IPv6, no IPv4"), std::string::npos) << d2->why;
}

TEST(HostNetdev, APkeyChildsAddressServesWhenTheParentHasNone) {
  Result<AddrLookup> addrs = table_addresses({{"ib0", {"fe80::1"}}, {"ib0.8001", {"10.2.0.11"}}});
  ASSERT_TRUE(addrs);
  Result<ListenChoice> c = device_listen_address(kLayouts + "ib-connectx3-dual", "mlx4_0", 1, *addrs);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->netdev, "ib0.8001");
  EXPECT_EQ(c->ip, "10.2.0.11");
  EXPECT_NE(c->why.find("passed over: ib0 (no IPv4)"), std::string::npos) << c->why;
}

TEST(HostNetdev, OldKernelsTellPortsApartByDevId) {
  Result<Decision> d1 = decide("ib-dev-id-only", "mlx4_0", 1);
  Result<Decision> d2 = decide("ib-dev-id-only", "mlx4_0", 2);
  ASSERT_TRUE(d1 && d2);
  EXPECT_EQ(d1->netdev, "ib0");
  EXPECT_EQ(d2->netdev, "ib1");
  EXPECT_EQ(d2->ip, "10.1.1.12");
  EXPECT_NE(d2->why.find("dev_id 0x1"), std::string::npos) << d2->why;
}

TEST(HostNetdev, RoceOnABondUsesTheBond) {
  Result<Decision> d = decide("roce-vlan-bond", "mlx5_bond_0", 1);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->netdev, "bond0");  // not the slaves ens1f0/ens1f1 of the same PCI functions
  EXPECT_EQ(d->ip, "192.168.10.5");
}

TEST(HostNetdev, RoceOnAVlanTakesTheVlansAddress) {
  Result<PortNetdevs> p = port_netdevs(kLayouts + "roce-vlan-bond", "mlx5_2", 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(names(*p), (std::vector<std::string>{"ens2f0", "ens2f0.100"}));  // GID index order, each once
  Result<Decision> d = decide("roce-vlan-bond", "mlx5_2", 1);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->netdev, "ens2f0.100");
  EXPECT_EQ(d->ip, "10.100.0.5");
  EXPECT_NE(d->why.find("passed over: ens2f0"), std::string::npos) << d->why;
}

TEST(HostNetdev, RoceIpv6OnlyTakesTheGlobalIpv6) {
  Result<Decision> d = decide("roce-vlan-bond", "mlx5_3", 1);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->ip, "fd00:3::5");
}

TEST(HostNetdev, LinkLocalOnlyIsAnErrorThatSaysWhy) {
  Result<Decision> d = decide("roce-vlan-bond", "mlx5_4", 1);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.code(), ErrorCode::address_error);
  const std::string m = d.error().message();
  EXPECT_NE(m.find("mlx5_4 port 1"), std::string::npos) << m;
  EXPECT_NE(m.find("fe80::e42:a1ff:fe40:1 (link-local"), std::string::npos) << m;
  EXPECT_NE(m.find("set listen_ip"), std::string::npos) << m;
}

TEST(HostNetdev, RxeMapsThroughItsGidTable) {
  Result<Decision> d = decide("rxe", "rxe0", 1);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->netdev, "dummy0");
  EXPECT_EQ(d->ip, "10.0.0.1");
  EXPECT_NE(d->why.find("rxe0 port 1 -> dummy0 (GID 0 (RoCE v2))"), std::string::npos) << d->why;
}

TEST(HostNetdev, AMissingPortOrDeviceNamesThePath) {
  Result<PortNetdevs> p = port_netdevs(kLayouts + "rxe", "rxe0", 2);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("ports/2 does not exist (check device.port)"), std::string::npos)
      << p.error().message();
  p = port_netdevs(kLayouts + "rxe", "mlx5_0", 1);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("class/infiniband/mlx5_0 does not exist"), std::string::npos);
}

TEST(HostNetdev, AnInterfaceWithoutAddressesIsNamed) {
  // The mapping holds (port 2 -> ib1) but no address is known for ib1.
  Result<AddrLookup> none = table_addresses({});
  ASSERT_TRUE(none);
  Result<ListenChoice> c = device_listen_address(kLayouts + "ib-connectx3-dual", "mlx4_0", 2, *none);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("ib1: no address"), std::string::npos) << c.error().message();
}

// A layout made on the spot, for the cases no captured machine shows: files under a fresh root.
class TmpSysfs {
 public:
  TmpSysfs() : root_(std::filesystem::temp_directory_path() / ("wireup-sysfs-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(root_);
  }
  ~TmpSysfs() { std::filesystem::remove_all(root_); }
  void file(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

TEST(HostNetdev, AnIbPortWithoutIpoibSaysWhatItSawAndWhatToDo) {
  TmpSysfs t;
  t.file("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  t.file("class/infiniband/mlx5_0/device/net/ens1f1/dev_port", "0");
  t.file("class/infiniband/mlx5_0/device/net/ens1f1/type", "1");  // an Ethernet function netdev
  Result<PortNetdevs> p = port_netdevs(t.root(), "mlx5_0", 1);
  ASSERT_FALSE(p);
  const std::string m = p.error().message();
  EXPECT_NE(m.find("mlx5_0 port 1 (InfiniBand) has no IPoIB interface"), std::string::npos) << m;
  EXPECT_NE(m.find("ens1f1: type 1, not IPoIB (32)"), std::string::npos) << m;
  EXPECT_NE(m.find("load ib_ipoib"), std::string::npos) << m;
}

TEST(HostNetdev, RoceWithoutGidAttrsFallsBackToTheDevicesNetdevs) {
  // Kernels before 4.5 have no gid_attrs: the PCI function's netdev with the port's dev_port.
  TmpSysfs t;
  t.file("class/infiniband/mlx4_0/ports/2/link_layer", "Ethernet");
  t.file("class/infiniband/mlx4_0/device/net/eth0/dev_port", "0");
  t.file("class/infiniband/mlx4_0/device/net/eth1/dev_port", "1");
  Result<PortNetdevs> p = port_netdevs(t.root(), "mlx4_0", 2);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_EQ(names(*p), std::vector<std::string>{"eth1"});
  EXPECT_NE(p->netdevs[0].why.find("no GID names a netdev"), std::string::npos) << p->netdevs[0].why;
}

TEST(HostNetdev, SysfsPortsListsEveryDevicePort) {
  auto ports = sysfs_ports(kLayouts + "roce-vlan-bond");
  EXPECT_EQ(ports, (std::vector<std::pair<std::string, int>>{
                       {"mlx5_2", 1}, {"mlx5_3", 1}, {"mlx5_4", 1}, {"mlx5_bond_0", 1}}));
  EXPECT_EQ(sysfs_ports(kLayouts + "ib-connectx3-dual").size(), 2u);
}

TEST(HostNetdev, AddressTablesRefuseWhatIsNotAnAddress) {
  Result<AddrLookup> t = table_addresses({{"ib0", {"10.0.0.300"}}});
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("\"10.0.0.300\" (interface ib0)"), std::string::npos);
  Result<AddrLookup> ok = table_addresses({{"ib0", {"fe80::1", "10.0.0.1"}}});
  ASSERT_TRUE(ok);
  std::vector<IfAddr> a = (*ok)("ib0");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].family, AF_INET6);
  EXPECT_TRUE(a[0].link_local);
  EXPECT_EQ(a[1].family, AF_INET);
  EXPECT_TRUE((*ok)("ib1").empty());
}

}  // namespace
}  // namespace wireup::host
