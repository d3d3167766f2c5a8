// The rdma drivers' shared helpers (wireup_a2a_driver.h).
#include "wireup_a2a_driver.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <random>

namespace wireup::a2a {

double realtime_s() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::pair<double, double> cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return {s(u.ru_utime), s(u.ru_stime)};
}

uint64_t pick_job_key(const Options& o, wireup::Context& ctx) {
  if (o.job_key != 0) return o.job_key;
  if (ctx.config_value("engine.job_key") != "\"0x0\"") return 0;
  std::random_device rd;
  uint64_t k = 0;
  while (k == 0) k = (uint64_t(rd()) << 32) ^ rd();
  return k;
}

Problem job_shape(const Options& o, RdmaRank& rr, uint32_t nranks, bool& on_demand, std::optional<PatternPlan>& plan) {
  auto od = engine_mode(o, rr.context().config_value("engine.mode"));
  if (!od) return od.error();
  on_demand = *od;
  if (!on_demand) return {};
  auto pattern = parse_pattern(o.pattern);  // checked by parse_options: cannot fail here
  if (!pattern) return pattern.error();
  auto p = PatternPlan::make(*pattern, nranks, o.sim_seed);
  if (!p) return p.error();
  plan = std::move(*p);
  return {};
}

void run_victim(const Options& o, wireup::Wireup& e, int rank) {
  const auto t0 = Clock::now();
  for (;;) {
    int work = 0;
    const Problem failed = attempt([&] { work = e.progress(); });
    const double ms = since(t0) * 1e3;
    const uint64_t up = e.result_count();
    const bool trigger = (o.kill_after_ms >= 0 && ms >= double(o.kill_after_ms)) ||
                         (o.kill_after_conns > 0 && up >= uint64_t(o.kill_after_conns));
    if (trigger || e.done() || !failed.empty()) {
      std::fprintf(stderr,
                   "[a2a] rank %d: _exit() %s after %.0f ms, %llu connections established (--kill-rank), at %.6f\n",
                   rank, trigger ? "mid-wireup" : "at the end of wireup (the trigger never fired)", ms,
                   (unsigned long long)up, realtime_s());
      std::fflush(nullptr);
      _exit(137);
    }
    if (work == 0) (void)attempt([&] { e.wait(std::chrono::milliseconds(1)); });
  }
}

}  // namespace wireup::a2a
