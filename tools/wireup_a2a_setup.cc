// One rank's setup: configuration, the device and the address to listen on, and the engine
// with a default QP factory (the runner owns its QPs as a transport would).
#include <arpa/inet.h>
#include <ifaddrs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/log.h"
#include "topo/topology.h"
#include "wireup/options.h"
#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

bool active(prov::PortState s) { return s == prov::PortState::active || s == prov::PortState::active_defer; }

int launcher_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

// The first IPv4 address of `ifname`: what peers reach this device's RoCE GID through.
Result<prov::SockAddr> ipv4_of(const std::string& ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error::from_errno("getifaddrs", errno);
  std::optional<prov::SockAddr> found;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && ifname == i->ifa_name) found = prov::SockAddr::from(i->ifa_addr);
  freeifaddrs(list);
  if (!found)
    return Error::make(ErrorCode::no_device, "getifaddrs",
                       "netdev " + ifname + " has no IPv4 address (give one with --addr)");
  found->set_port(0);
  return *found;
}

}  // namespace

Result<config::Config> load_config(const Options& o) {
  config::LoadOptions lo;
  lo.file = o.config_file;
  lo.env = config::process_environment();
  lo.overrides = o.overrides;
  auto c = config::load(lo);
  if (!c) return c.error();
  log::set_level(c->settings().log.level);
  return c;
}

Result<Endpoint> choose_endpoint(prov::Provider& p, const config::Settings& s, const Options& o) {
  auto devs = p.devices();
  if (!devs) return devs.error();
  topo::RankInput in;
  in.port = s.device.port;
  in.include = s.device.include;
  in.exclude = s.device.exclude;
  in.local_rank = s.device.local_rank >= 0 ? s.device.local_rank : launcher_local_rank();
  for (prov::Device* d : *devs) {
    topo::Candidate c;
    c.name = d->info().name;
    c.pci_busid = d->info().pci_bus_id;
    c.port = topo::PortStatus::inactive;
    c.port_text = "absent";
    for (const prov::PortInfo& port : d->info().ports) {
      if (port.port_num != s.device.port) continue;
      c.port_text = prov::to_string(port.state);
      c.port = active(port.state) ? topo::PortStatus::active : topo::PortStatus::inactive;
    }
    in.devices.push_back(std::move(c));
  }
  // Locality only orders several usable devices; with one, skip hwloc (seconds per process
  // in the TCG VM). Without hwloc every device is "unplaced": a preference, not a requirement.
  auto usable = [&](const topo::Candidate& c) {
    auto named = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), c.name) != v.end(); };
    return c.port == topo::PortStatus::active && !named(in.exclude) && (in.include.empty() || named(in.include));
  };
  if (std::count_if(in.devices.begin(), in.devices.end(), usable) > 1) {
    if (auto t = topo::Topology::load_live(); t) {
      for (topo::Candidate& c : in.devices) c.where = t->place_device(c.name, c.pci_busid);
      if (auto b = t->process_binding(); b) in.binding = *b;
    } else {
      WIREUP_LOG(warn, "wireup_a2a: no topology, devices ranked without locality: %s", t.error().message().c_str());
    }
  }
  auto ranking = topo::rank_devices(in);
  if (!ranking) return ranking.error();
  Endpoint ep;
  const std::string& name = ranking->order[0].device;
  for (prov::Device* d : *devs)
    if (d->info().name == name) ep.device = d;
  if (ep.device == nullptr)
    return Error::make(ErrorCode::no_device, "choose_endpoint", "ranked device " + name + " vanished");
  if (!o.addr.empty()) {
    auto a = prov::SockAddr::parse(o.addr);
    if (!a) return Error(a.error()).with_peer("--addr " + o.addr);
    ep.listen = *a;
    ep.how = name + ", --addr " + o.addr;
    return ep;
  }
  const std::string& netdev = ep.device->info().netdev;
  if (netdev.empty())
    return Error::make(ErrorCode::no_device, "choose_endpoint",
                       "device " + name + " has no netdev (InfiniBand without IPoIB?): give --addr");
  auto a = ipv4_of(netdev);
  if (!a) return a.error();
  ep.listen = *a;
  ep.how = name + " (netdev " + netdev + "), " + a->to_string();
  return ep;
}

Result<RankEngine> make_engine(prov::Provider& p, const config::Settings& s, uint32_t rank, uint32_t nranks,
                               const prov::SockAddr& listen, uint64_t job_key) {
  EngineOptions eo = engine_options(s, rank, nranks, listen, job_key);
  prov::QpCaps caps;
  caps.max_send_wr = static_cast<uint32_t>(s.qp.max_send_wr);
  caps.max_recv_wr = static_cast<uint32_t>(s.qp.max_recv_wr);
  caps.max_send_sge = static_cast<uint32_t>(s.qp.max_send_sge);
  caps.max_recv_sge = static_cast<uint32_t>(s.qp.max_recv_sge);
  caps.max_inline_data = static_cast<uint32_t>(s.qp.max_inline_data);
  // One shared CQ: a SEND and a RECV completion per connection during the check, plus slack.
  const uint64_t conns = uint64_t(nranks - 1) * eo.lanes;
  RankEngine r;
  r.factory = std::make_unique<qp::DefaultQpFactory>(caps, static_cast<int>(std::max<uint64_t>(256, 2 * conns + 64)));
  auto e = Engine::create(p, std::move(eo), r.factory->hook());
  if (!e) return Error(e.error()).with_peer("rank " + std::to_string(rank));
  r.engine = std::move(e).value();
  r.engine->on_steady_event([set = r.disconnected](const SteadyEvent& ev) {
    if (ev.type == prov::CmEventType::disconnected) set->insert({ev.peer, ev.lane});
  });
  return r;
}

}  // namespace wireup::a2a
