#include "host/choice.h"

#include <algorithm>

#include "common/log.h"
#include "host/port.h"
#include "topo/rank.h"
#include "topo/topology.h"

namespace wireup::host {

topo::RankInput rank_input(const config::Settings& s, const LocalRank& local_rank,
                           std::span<prov::Device* const> devices) {
  topo::RankInput in;
  in.port = s.device.port;
  in.include = s.device.include;
  in.exclude = s.device.exclude;
  in.local_rank = local_rank.value;
  for (prov::Device* d : devices) in.devices.push_back(candidate(d->info(), s.device.port));
  return in;
}

topo::RailCount rail_count(const config::Settings& s) { return topo::RailCount{s.device.rails}; }

Result<DeviceChoice> choose_device(prov::Provider& p, const config::Settings& s, const LocalRank& local_rank) {
  Result<std::vector<prov::Device*>> devs = p.devices();
  if (!devs) return devs.error();
  topo::RankInput in = rank_input(s, local_rank, *devs);

  auto named = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  auto usable = [&](const topo::Candidate& c) {
    return c.port != topo::PortStatus::inactive && !named(in.exclude, c.name) &&
           (in.include.empty() || named(in.include, c.name));
  };
  if (std::count_if(in.devices.begin(), in.devices.end(), usable) > 1) {
    if (Result<topo::Topology> t = topo::Topology::load_live(); t) {
      for (topo::Candidate& c : in.devices) c.where = t->place_device(c.name, c.pci_busid);
      if (Result<topo::CpuSet> b = t->process_binding(); b)
        in.binding = *b;
      else  // only means no device counts as nearer to our CPUs
        WIREUP_LOG(warn, "CPU binding unknown (%s): devices ranked without it", b.error().message().c_str());
    } else {
      WIREUP_LOG(warn, "no topology, devices ranked without locality: %s", t.error().message().c_str());
    }
  }

  Result<topo::Ranking> r = topo::rank_devices(in);
  if (!r) return r.error();
  for (const std::string& n : r->notices) WIREUP_LOG(info, "device choice: %s", n.c_str());
  const topo::Choice& best = r->order.front();
  for (prov::Device* d : *devs)
    if (d->info().name == best.device)
      return DeviceChoice{d, best.device + " (" + to_string(best.nearness) + "): " + best.why};
  return Error::make(ErrorCode::no_device, "choose_device", "ranked device " + best.device + " is not open");
}

}  // namespace wireup::host
