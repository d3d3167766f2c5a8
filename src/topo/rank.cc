// The device ranking (see rank.h for the rules). No hwloc and no I/O here: everything comes
// in through RankInput, so every rule is a unit test away.
#include "topo/rank.h"

#include <algorithm>
#include <tuple>

namespace wireup::topo {

const char* to_string(Nearness n) {
  switch (n) {
    case Nearness::same_pci_switch: return "same_pci_switch";
    case Nearness::same_numa: return "same_numa";
    case Nearness::same_package: return "same_package";
    case Nearness::machine: return "machine";
    case Nearness::unplaced: return "unplaced";
  }
  return "?";
}

const char* to_string(SkipReason r) {
  switch (r) {
    case SkipReason::excluded: return "excluded";
    case SkipReason::not_included: return "not_included";
    case SkipReason::port_inactive: return "port_inactive";
  }
  return "?";
}

std::string numa_text(const Placement& p) {
  if (p.numa_nodes.empty()) return "no known NUMA node";
  std::string s = p.numa_nodes.size() == 1 ? "NUMA node " : "NUMA nodes ";
  for (size_t i = 0; i < p.numa_nodes.size(); ++i) s += (i ? "," : "") + std::to_string(p.numa_nodes[i]);
  return s;
}

namespace {

std::string where_text(const Placement& p) {
  if (p.package < 0 && p.numa_nodes.empty()) return "the whole machine (hwloc knows no NUMA node for it)";
  if (p.package < 0) return numa_text(p) + " (no single package)";
  return "package " + std::to_string(p.package) + ", " + numa_text(p);
}

bool listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string s;
  for (const std::string& x : list) s += (s.empty() ? "" : ", ") + x;
  return s;
}

struct Judged {
  Nearness nearness;
  std::string why;
};

Judged to_binding(const std::string& dev, const Placement& p, const CpuSet& binding) {
  if (!p.placed) return {Nearness::unplaced, dev + ": " + p.unplaced_why + "; counted as equally near every CPU"};
  if (binding.empty())
    return {Nearness::machine, dev + " is on " + where_text(p) + "; no CPU binding is known, so no device is nearer"};
  if (p.package < 0 && p.numa_nodes.empty())
    return {Nearness::machine, dev + " hangs off " + where_text(p) + ", so it is near no CPU in particular"};
  const std::string cpus = "CPUs " + binding.to_list();
  if (!p.numa_nodes.empty() && p.numa_cpus.includes(binding))
    return {Nearness::same_numa, dev + " is on " + numa_text(p) + ", local to every one of the bound " + cpus};
  if (p.package >= 0 && p.package_cpus.includes(binding))
    return {Nearness::same_package, dev + " is on " + where_text(p) + ": the same package as the bound " + cpus +
                                         " but another NUMA node"};
  return {Nearness::machine, dev + " is on " + where_text(p) + "; the bound " + cpus + " are not all on its package"};
}

Judged to_gpu(const std::string& dev, const Placement& p, const Gpu& gpu) {
  if (!p.placed) return {Nearness::unplaced, dev + ": " + p.unplaced_why + "; counted as equally near the GPU as anything"};
  const std::string g = "GPU " + gpu.name;
  for (const PciBridge& b : p.bridges)
    for (const PciBridge& gb : gpu.where.bridges)
      if (b.id == gb.id) return {Nearness::same_pci_switch, dev + " and " + g + " share PCI bridge " + b.busid};
  const bool same_numa = std::any_of(p.numa_nodes.begin(), p.numa_nodes.end(), [&](unsigned n) {
    return std::find(gpu.where.numa_nodes.begin(), gpu.where.numa_nodes.end(), n) != gpu.where.numa_nodes.end();
  });
  if (same_numa) return {Nearness::same_numa, dev + " is on " + numa_text(p) + " like " + g + ", behind another PCI bridge"};
  if (p.package >= 0 && p.package == gpu.where.package)
    return {Nearness::same_package, dev + " is on " + where_text(p) + ": the package of " + g + " (" +
                                         numa_text(gpu.where) + ")"};
  return {Nearness::machine, dev + " is on " + where_text(p) + "; " + g + " is on " + where_text(gpu.where)};
}

// Unplaced ties with machine: it is no nearer and no farther than a device across the machine.
int level(Nearness n) { return static_cast<int>(n == Nearness::unplaced ? Nearness::machine : n); }

struct Scored {
  Choice choice;
  int primary;
  int secondary;
};

}  // namespace

Result<Ranking> order_devices(const RankInput& in) {
  Ranking r;
  for (const std::string& name : in.include)
    if (std::none_of(in.devices.begin(), in.devices.end(), [&](const Candidate& c) { return c.name == name; }))
      r.notices.push_back("device.include names " + name + ", which is not among the devices here");

  std::vector<Scored> scored;
  for (const Candidate& c : in.devices) {
    const std::string port = "port " + std::to_string(in.port);
    if (listed(in.exclude, c.name)) {
      r.skipped.push_back({c.name, SkipReason::excluded, c.name + " is listed in device.exclude"});
    } else if (!in.include.empty() && !listed(in.include, c.name)) {
      r.skipped.push_back({c.name, SkipReason::not_included,
                           c.name + " is not listed in device.include (" + joined(in.include) + ")"});
    } else if (c.port == PortStatus::inactive) {
      r.skipped.push_back({c.name, SkipReason::port_inactive,
                           c.name + " " + port + " is " + (c.port_text.empty() ? "not ACTIVE" : c.port_text)});
    } else {
      if (c.port == PortStatus::unknown)
        r.notices.push_back(c.name + ": state of " + port + " unknown; ranked as if ACTIVE");
      if (!c.where.placed)
        r.notices.push_back(c.name + ": " + c.where.unplaced_why + "; counted as equally near every CPU");
      const std::string busid = !c.pci_busid.empty() ? c.pci_busid : c.where.pci_busid;
      Judged cpu = to_binding(c.name, c.where, in.binding);
      Scored s{{c.name, cpu.nearness, cpu.why, 0, busid}, level(cpu.nearness), 0};
      if (in.gpu) {
        Judged g = to_gpu(c.name, c.where, *in.gpu);
        s = {{c.name, g.nearness, g.why + " (to the CPUs: " + to_string(cpu.nearness) + ")", 0, busid},
             level(g.nearness), level(cpu.nearness)};
      }
      scored.push_back(std::move(s));
    }
  }
  if (scored.empty()) {
    std::string why;
    for (const Skipped& s : r.skipped) why += (why.empty() ? "" : "; ") + s.why;
    return Error::make(ErrorCode::no_device, "rank_devices",
                       in.devices.empty() ? "no RDMA device to choose from"
                                          : "no usable RDMA device: " + why);
  }

  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return std::tie(a.primary, a.secondary) < std::tie(b.primary, b.secondary);
  });
  int tier = 0;
  for (size_t i = 0; i < scored.size(); ++i) {
    if (i > 0 && std::tie(scored[i].primary, scored[i].secondary) !=
                     std::tie(scored[i - 1].primary, scored[i - 1].secondary))
      ++tier;
    scored[i].choice.tier = tier;
    r.order.push_back(std::move(scored[i].choice));
  }
  return r;
}

Result<Ranking> rank_devices(const RankInput& in) {
  Result<Ranking> ordered = order_devices(in);
  if (!ordered) return ordered;
  Ranking& r = *ordered;
  const auto group_end =
      std::find_if(r.order.begin(), r.order.end(), [](const Choice& c) { return c.tier != 0; });
  const size_t n = static_cast<size_t>(group_end - r.order.begin());
  if (n > 1 && in.local_rank >= 0) {
    const size_t pick = static_cast<size_t>(in.local_rank) % n;
    std::rotate(r.order.begin(), r.order.begin() + static_cast<std::ptrdiff_t>(pick), group_end);
    r.order[0].why += "; one of " + std::to_string(n) + " equally near devices, local rank " +
                      std::to_string(in.local_rank) + " takes number " + std::to_string(pick);
  } else if (n > 1) {
    r.notices.push_back("local rank unknown: the " + std::to_string(n) +
                        " equally near devices are not spread over the node's processes");
  }
  return ordered;
}

}  // namespace wireup::topo
