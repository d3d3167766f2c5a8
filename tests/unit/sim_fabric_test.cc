// The SimFabric driving API: addresses, virtual time, step/run_until, the ready list, the
// lazy eventfd, wait() on an idle fabric, and the stats an engine checks at teardown.
#include <gtest/gtest.h>
#include <poll.h>

#include "provider/sim/fabric.h"

namespace wireup::prov::sim {
namespace {

using namespace std::chrono_literals;

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

TEST(SimFabric, AddressScheme) {
  SimFabric fab;
  SimNodeSpec two;
  two.devices = {SimDeviceSpec::mlx5(), SimDeviceSpec::rxe()};
  EXPECT_EQ(fab.add_node(two), 0u);
  EXPECT_EQ(fab.add_node(), 1u);
  EXPECT_EQ(fab.address(0).to_string(), "10.0.0.1:0");
  EXPECT_EQ(fab.address(0, 1, 7471).to_string(), "10.16.0.1:7471");
  EXPECT_EQ(fab.address(1).to_string(), "10.0.0.2:0");
  EXPECT_EQ(sim_ipv4(4095, 0), 0x0A001000u);  // 10.0.16.0: node 4095
  auto devs = fab.provider(0).devices();
  ASSERT_TRUE(devs);
  ASSERT_EQ(devs->size(), 2u);
  EXPECT_EQ((*devs)[0]->info().name, "mlx5_0");
  EXPECT_EQ((*devs)[1]->info().name, "rxe1");
  EXPECT_EQ((*devs)[1]->info().ports[0].active_mtu, 1024u);
  EXPECT_EQ(fab.provider(0).name(), "sim");
  EXPECT_EQ(&fab.provider(1).clock(), &fab.clock());
}

TEST(SimFabric, NodeWithoutDevices) {
  SimFabric fab;
  SimNodeSpec none;
  none.devices.clear();
  fab.add_node(none);
  auto d = fab.provider(0).devices();
  ASSERT_FALSE(d);
  EXPECT_EQ(d.code(), ErrorCode::no_device);
}

TEST(SimFabric, VirtualTimeStepsAndRunUntil) {
  SimConfig cfg;
  cfg.latency = LatencyModel::zero();
  cfg.latency.resolve_addr = 5ms;
  SimFabric fab(cfg);
  fab.add_node();
  fab.add_node();
  EXPECT_TRUE(fab.idle());
  EXPECT_EQ(fab.next_time(), Nanos::max());
  EXPECT_FALSE(fab.step());
  Provider& p = fab.provider(1);
  auto ch = p.create_channel();
  auto id = p.create_id(**ch, PortSpace::tcp, nullptr);
  ASSERT_TRUE((*id)->resolve_addr(nullptr, fab.address(0, 0, 1), 100));
  EXPECT_FALSE(fab.idle());
  EXPECT_EQ(fab.next_time(), 5ms);
  EXPECT_EQ(fab.run_until(4ms), 0u);
  EXPECT_EQ(fab.now(), 4ms);
  EXPECT_FALSE((*ch)->get_event()) << "nothing before its time";
  EXPECT_TRUE(fab.take_ready().empty());
  EXPECT_EQ(fab.run_until(6ms), 2u);  // resolution done, then its delivery
  EXPECT_EQ(fab.now(), 6ms);
  auto ready = fab.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].node, 1u);
  EXPECT_EQ(ready[0].channel, ch->get());
  EXPECT_TRUE(fab.take_ready().empty()) << "each channel is listed once";
  auto ev = (*ch)->get_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, CmEventType::addr_resolved);
  EXPECT_EQ(fab.stats().cm_events_delivered, 1u);
}

TEST(SimFabric, EventFdIsLazyAndTracksPendingEvents) {
  SimConfig cfg;
  cfg.latency = LatencyModel::zero();
  SimFabric fab(cfg);
  fab.add_node();
  Provider& p = fab.provider(0);
  auto ch = p.create_channel();
  auto id = p.create_id(**ch, PortSpace::tcp, nullptr);
  ASSERT_TRUE((*id)->resolve_addr(nullptr, fab.address(0, 0, 1), 100));
  fab.run_for(1ms);  // the event is pending before anyone asked for the fd
  int fd = (*ch)->fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ((*ch)->fd(), fd) << "created once";
  EXPECT_TRUE(readable(fd));
  auto ev = (*ch)->get_event();
  ASSERT_TRUE(ev);
  EXPECT_FALSE(readable(fd));
}

TEST(SimFabric, WaitNeverSleepsAndRefusesToWaitForever) {
  SimFabric fab;
  fab.add_node();
  Provider& p = fab.provider(0);
  auto ch = p.create_channel();
  EventChannel* chans[] = {ch->get()};
  const auto wall0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.wait(chans, 3600s));
  EXPECT_EQ(fab.now(), 3600s) << "an hour of virtual time";
  EXPECT_LT(std::chrono::steady_clock::now() - wall0, 1s);
  Status s = p.wait(chans, Nanos::max());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::invalid_state);
}

TEST(SimFabric, ObjectsAreCountedWhileAlive) {
  SimConfig cfg;
  cfg.latency = LatencyModel::zero();
  SimFabric fab(cfg);
  fab.add_node();
  {
    Provider& p = fab.provider(0);
    auto ch = p.create_channel();
    auto id = p.create_id(**ch, PortSpace::tcp, nullptr);
    Device* d = (*p.devices())[0];
    auto pd = d->alloc_pd();
    auto cq = d->create_cq(4, true);
    QpInitAttr init;
    init.send_cq = cq->get();
    init.recv_cq = cq->get();
    auto qp = (*pd)->create_qp(init);
    std::vector<uint8_t> buf(64);
    auto mr = (*pd)->reg_mr(buf.data(), buf.size(), 0);
    const SimStats& s = fab.stats();
    EXPECT_EQ(s.channels_alive, 1u);
    EXPECT_EQ(s.ids_alive, 1u);
    EXPECT_EQ(s.pds_alive, 1u);
    EXPECT_EQ(s.cqs_alive, 1u);
    EXPECT_EQ(s.qps_alive, 1u);
    EXPECT_EQ(s.mrs_alive, 1u);
    EXPECT_GE((*cq)->comp_fd(), 0);
  }
  const SimStats& s = fab.stats();
  EXPECT_EQ(s.channels_alive + s.ids_alive + s.pds_alive + s.cqs_alive + s.qps_alive + s.mrs_alive, 0u);
}

TEST(SimFabric, ChannelDestroyedBeforeItsIdsIsCounted) {
  SimFabric fab;
  fab.add_node();
  Provider& p = fab.provider(0);
  auto ch = p.create_channel();
  auto id = p.create_id(**ch, PortSpace::tcp, nullptr);
  ch->reset();
  EXPECT_EQ(fab.stats().channels_destroyed_with_ids, 1u);
  EXPECT_EQ((*id)->channel(), nullptr);
}

TEST(SimFabric, LatencyPresetsCarryTheirSources) {
  LatencyModel hw = LatencyModel::hardware();
  LatencyModel vm = LatencyModel::rxe_vm();
  LatencyModel z = LatencyModel::zero();
  EXPECT_EQ(hw.create_id, 1us);
  EXPECT_EQ(vm.create_qp, 192us);
  EXPECT_EQ(z.cpu_per_event, Nanos{0});
  EXPECT_EQ(z.cm_attempt_timeout(), hw.cm_attempt_timeout()) << "protocol timers survive zero()";
  EXPECT_NE(hw.describe().find("cm_message 20 us"), std::string::npos) << hw.describe();
}

}  // namespace
}  // namespace wireup::prov::sim
