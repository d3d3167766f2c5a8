// `wireup_info` without --config/--check: which device this process gets and why, on this
// machine or on one described by an hwloc XML file.
#include <cstdio>
#include <cstdlib>

#include "host/local_rank.h"

#include "topo/rails.h"
#include "topo/topology.h"
#include "wireup_info.h"

namespace wireup::info {
namespace {

Result<std::vector<topo::Candidate>> candidates(const ChoiceOptions& opts, const topo::Topology& t,
                                                const config::Settings& s) {
  // Port states come from the provider on this machine, from the XML export otherwise.
  Result<std::vector<topo::Candidate>> present =
      t.is_live() ? live_candidates(s) : Result<std::vector<topo::Candidate>>(t.candidates(s.device.port));
  if (!present || opts.devices.empty()) return present;
  // Named devices that are not present are kept (unplaced, port unknown), so the output says so.
  std::vector<topo::Candidate> out;
  for (const std::string& name : opts.devices) {
    topo::Candidate c;
    c.name = name;
    for (const topo::Candidate& x : *present)
      if (x.name == name) c = x;
    out.push_back(std::move(c));
  }
  return out;
}

void print_placement(const char* what, const std::string& name, const topo::Placement& p) {
  std::printf("%-11s %s: %s", what, name.c_str(), p.placed ? ("PCI " + p.pci_busid).c_str() : "unplaced");
  if (p.placed) std::printf(", package %d, %s", p.package, topo::numa_text(p).c_str());
  for (const topo::PciBridge& b : p.bridges) std::printf(", bridge %s", b.busid.c_str());
  std::printf("\n");
}

}  // namespace

void print_rails(const topo::RankInput& in, int count, const char* from) {
  const topo::RailCount want{count};
  std::printf("rails:      %s (%s)\n", want.all_equally_near() ? "all equally near" : std::to_string(count).c_str(),
              from);
  Result<topo::RailSet> set = topo::choose_rails(in, want);
  if (!set) return (void)std::printf("  none:     %s\n", set.error().message().c_str());
  for (size_t i = 0; i < set->rails.size(); ++i) {
    const topo::Rail& r = set->rails[i];
    std::printf("  rail %zu:   %-10s %-16s card %s\n            %s\n", i, r.device.c_str(), to_string(r.nearness),
                r.card.c_str(), r.why.c_str());
  }
  for (const std::string& n : set->notices) std::printf("  notice:   %s\n", n.c_str());
}

int explain_choice(const ChoiceOptions& opts, const config::Settings& s) {
  Result<topo::Topology> t = opts.topology.empty() ? topo::Topology::load_live()
                                                   : topo::Topology::load_xml(opts.topology);
  if (!t) return std::fprintf(stderr, "wireup_info: %s\n", t.error().message().c_str()), 1;
  std::printf("topology:   %s\n", t->origin().c_str());

  topo::RankInput in;
  in.port = s.device.port;
  in.include = s.device.include;
  in.exclude = s.device.exclude;
  Result<std::vector<topo::Candidate>> cands = candidates(opts, *t, s);
  if (!cands) return std::fprintf(stderr, "wireup_info: %s\n", cands.error().message().c_str()), 1;
  in.devices = std::move(*cands);
  for (topo::Candidate& c : in.devices)
    if (!c.where.placed) c.where = t->place_device(c.name, c.pci_busid);

  std::string binding_from = "--cpus";
  if (!opts.cpus.empty()) {
    Result<topo::CpuSet> cpus = topo::CpuSet::parse(opts.cpus);
    if (!cpus) return std::fprintf(stderr, "wireup_info: --cpus: %s\n", cpus.error().message().c_str()), 1;
    in.binding = *cpus;
  } else if (t->is_live()) {
    Result<topo::CpuSet> cpus = t->process_binding();
    if (!cpus) return std::fprintf(stderr, "wireup_info: %s\n", cpus.error().message().c_str()), 1;
    in.binding = *cpus, binding_from = "this process";
  } else {
    in.binding = t->machine_cpus(), binding_from = "no --cpus: as for an unbound process";
  }
  std::printf("binding:    CPUs %s (%s)\n", in.binding.to_list().c_str(), binding_from.c_str());

  if (!opts.gpu.empty()) {
    Result<topo::Placement> g = t->place_gpu(opts.gpu);
    if (!g) return std::fprintf(stderr, "wireup_info: --gpu: %s\n", g.error().message().c_str()), 1;
    in.gpu = topo::Gpu{opts.gpu, *g};
    print_placement("gpu:", opts.gpu, *g);
  }
  Result<host::LocalRank> lr = host::resolve_local_rank(opts.local_rank.value_or(-1), "--local-rank",
                                                        s.device.local_rank, host::process_getenv());
  if (!lr) return std::fprintf(stderr, "wireup_info: %s\n", lr.error().message().c_str()), 1;
  in.local_rank = lr->value;
  if (in.local_rank >= 0)
    std::printf("local rank: %d (%s)\n", in.local_rank, lr->source.c_str());
  else
    std::printf("local rank: unknown (%s)\n", lr->source.c_str());
  for (const topo::Candidate& c : in.devices) print_placement("device:", c.name, c.where);

  Result<topo::Ranking> r = topo::rank_devices(in);
  if (!r) return std::printf("chosen:     none: %s\n", r.error().message().c_str()), 1;
  std::printf("chosen:     %s (%s)\n  because   %s\n", r->order[0].device.c_str(), to_string(r->order[0].nearness),
              r->order[0].why.c_str());
  std::printf("order:\n");
  for (size_t i = 0; i < r->order.size(); ++i)
    std::printf("  %zu. %-10s %-16s %s\n", i + 1, r->order[i].device.c_str(), to_string(r->order[i].nearness),
                r->order[i].why.c_str());
  for (const topo::Skipped& k : r->skipped)
    std::printf("skipped:    %-10s %-14s %s\n", k.device.c_str(), to_string(k.reason), k.why.c_str());
  for (const std::string& n : r->notices) std::printf("notice:     %s\n", n.c_str());
  const int rails = opts.rails.value_or(s.device.rails);
  if (rails != 1) print_rails(in, rails, opts.rails ? "--rails" : "device.rails");
  return 0;
}

}  // namespace wireup::info
