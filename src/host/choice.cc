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

namespace {

// The ranking's input with locality, loaded only when more than one device is usable.
Result<topo::RankInput> placed_input(prov::Provider& p, const config::Settings& s, const LocalRank& local_rank,
                                     std::vector<prov::Device*>& devs) {
  Result<std::vector<prov::Device*>> got = p.devices();
  if (!got) return got.error();
  devs = std::move(got).value();
  topo::RankInput in = rank_input(s, local_rank, devs);

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
  return in;
}

prov::Device* open_device(const std::vector<prov::Device*>& devs, const std::string& name) {
  for (prov::Device* d : devs)
    if (d->info().name == name) return d;
  return nullptr;
}

}  // namespace

Result<DeviceChoice> choose_device(prov::Provider& p, const config::Settings& s, const LocalRank& local_rank) {
  std::vector<prov::Device*> devs;
  Result<topo::RankInput> in = placed_input(p, s, local_rank, devs);
  if (!in) return in.error();
  Result<topo::Ranking> r = topo::rank_devices(*in);
  if (!r) return r.error();
  for (const std::string& n : r->notices) WIREUP_LOG(info, "device choice: %s", n.c_str());
  const topo::Choice& best = r->order.front();
  if (prov::Device* d = open_device(devs, best.device))
    return DeviceChoice{d, best.device + " (" + to_string(best.nearness) + "): " + best.why};
  return Error::make(ErrorCode::no_device, "choose_device", "ranked device " + best.device + " is not open");
}

Result<std::vector<DeviceChoice>> choose_rail_devices(prov::Provider& p, const config::Settings& s,
                                                      const LocalRank& local_rank) {
  std::vector<prov::Device*> devs;
  Result<topo::RankInput> in = placed_input(p, s, local_rank, devs);
  if (!in) return in.error();
  Result<topo::RailSet> r = topo::choose_rails(*in, rail_count(s));
  if (!r) return r.error();
  for (const std::string& n : r->notices) WIREUP_LOG(info, "rail choice: %s", n.c_str());
  // Fewer rails than asked (a port down, a device excluded): the job runs on the others, and
  // says why at the level a job's log keeps.
  const topo::RailCount want = rail_count(s);
  if (!want.all_equally_near() && r->rails.size() < static_cast<size_t>(want.value)) {
    std::string why;
    for (const topo::Skipped& k : r->skipped) why += (why.empty() ? "" : "; ") + k.device + ": " + k.why;
    WIREUP_LOG(warn, "device.rails = %d: %zu rail%s (%s)", want.value, r->rails.size(),
               r->rails.size() == 1 ? "" : "s", why.empty() ? "no other device" : why.c_str());
  }
  std::vector<DeviceChoice> out;
  for (const topo::Rail& rail : r->rails) {
    prov::Device* d = open_device(devs, rail.device);
    if (d == nullptr)
      return Error::make(ErrorCode::no_device, "choose_rail_devices", "rail device " + rail.device + " is not open");
    out.push_back(DeviceChoice{d, rail.device + " (" + to_string(rail.nearness) + "): " + rail.why});
  }
  return out;
}

}  // namespace wireup::host
