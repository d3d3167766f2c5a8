// soak: seeded engine runs on the simulated fabric with random faults, invariants checked
// after each (tests/soak/soak_run.h lists them). Every run is a function of its seed alone.
//
//   soak --seeds 1..10000        the long soak (README in this folder: timing)
//   soak --seed 4711 --verbose   reproduce one run, with its configuration and every error
//   soak --seeds 1..300 --twice  each seed twice: the two runs must be identical
// Exit status: 0 all runs clean, 1 some run broke an invariant, 2 usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "tests/soak/soak_run.h"

namespace {

using namespace wireup;

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s (--seeds A..B | --seed N) [--twice] [--verbose] [--max-failures K]\n"
               "  --seeds A..B      run seeds A to B (inclusive)\n"
               "  --seed N          run seed N alone, printing its configuration and outcome\n"
               "  --twice           run every seed twice and require identical outcomes\n"
               "  --verbose         the configuration and the errors of every run, engine logs at info\n"
               "  --max-failures K  stop after K failing seeds (default 10)\n",
               argv0);
  return 2;
}

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 0, last = 0, max_failures = 10;
  bool have = false, twice = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--seeds") {
      std::string v = value();
      auto dots = v.find("..");
      if (dots == std::string::npos || !parse_u64(v.substr(0, dots), first) || !parse_u64(v.substr(dots + 2), last) ||
          last < first)
        return usage(argv[0]);
      have = true;
    } else if (a == "--seed") {
      if (!parse_u64(value(), first)) return usage(argv[0]);
      last = first;
      have = true;
      verbose = true;
    } else if (a == "--twice") {
      twice = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--max-failures") {
      if (!parse_u64(value(), max_failures)) return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  if (!have) return usage(argv[0]);
  // Give-ups are expected here (dead peers): warnings would drown the report.
  log::set_level(verbose ? log::Level::info : log::Level::error);

  const auto t0 = std::chrono::steady_clock::now();
  uint64_t runs = 0, failures = 0, endpoints = 0, errors = 0, retries = 0, deaths = 0, removals = 0;
  uint64_t unconfirmed = 0, unconfirmed_runs = 0, rtu_reported = 0, rtu_unheard = 0, repairs = 0, notices = 0;
  uint64_t repair_runs = 0, first_repair = 0;
  uint64_t first_unconfirmed = 0;
  double virtual_s = 0, slowest_s = 0;
  uint64_t slowest_seed = first;
  for (uint64_t seed = first; seed <= last && failures < max_failures; ++seed) {
    const soak::RunConfig c = soak::draw(seed);
    if (verbose) std::printf("seed %llu: %s\n", (unsigned long long)seed, c.describe().c_str());
    const auto r0 = std::chrono::steady_clock::now();
    soak::RunReport r = soak::run(c, verbose);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    if (twice && r.violations.empty()) {
      soak::RunReport again = soak::run(c, false);
      if (again.digest != r.digest) r.violations.push_back("the same seed ran differently the second time");
    }
    ++runs;
    endpoints += r.connections;
    errors += r.failed;
    retries += r.retries;
    if (r.unconfirmed > 0 && unconfirmed_runs++ == 0) first_unconfirmed = seed;
    unconfirmed += r.unconfirmed;
    rtu_reported += r.rtu_reported;
    rtu_unheard += r.rtu_unheard;
    if (r.repairs > 0 && repair_runs++ == 0) first_repair = seed;
    repairs += r.repairs;
    notices += r.rtu_notices;
    deaths += r.death_applied;
    removals += r.removal_applied;
    virtual_s += r.virtual_s;
    if (wall > slowest_s) {
      slowest_s = wall;
      slowest_seed = seed;
    }
    if (!r.violations.empty()) {
      ++failures;
      std::printf("soak: seed %llu FAILED: %s\n", (unsigned long long)seed, c.describe().c_str());
      for (const std::string& v : r.violations) std::printf("    %s\n", v.c_str());
      std::printf("  reproduce: %s --seed %llu\n", argv[0], (unsigned long long)seed);
    } else if (verbose) {
      std::printf("seed %llu: ok (digest %016llx, %.3f s wall)\n", (unsigned long long)seed,
                  (unsigned long long)r.digest, wall);
    }
    std::fflush(stdout);
    if (!verbose && runs % 1000 == 0)
      std::fprintf(stderr, "soak: %llu runs, %llu failed, %.0f s\n", (unsigned long long)runs,
                   (unsigned long long)failures,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("soak: %llu runs (seeds %llu..%llu%s): %llu failed; %llu endpoints, %llu pair errors, %llu retries, "
              "%llu deaths and %llu device removals during wireup; %.0f s virtual; %.1f s wall (%.1f ms per run, "
              "slowest seed %llu: %.2f s)\n",
              (unsigned long long)runs, (unsigned long long)first, (unsigned long long)(first + runs - 1),
              twice ? ", each twice" : "", (unsigned long long)failures, (unsigned long long)endpoints,
              (unsigned long long)errors, (unsigned long long)retries, (unsigned long long)deaths,
              (unsigned long long)removals, virtual_s, wall, runs ? 1e3 * wall / double(runs) : 0.0,
              (unsigned long long)slowest_seed, slowest_s);
  if (notices > 0)
    std::printf("soak: RTU gap: %llu rtu_lost notices sent; %llu lanes repaired (reconnected) in %llu runs (first: "
                "seed %llu)\n",
                (unsigned long long)notices, (unsigned long long)repairs, (unsigned long long)repair_runs,
                (unsigned long long)first_repair);
  if (unconfirmed > 0)
    std::printf("soak: %llu pairs in %llu runs connected on the active side only after the passive side's REP "
                "retries ran out (first: seed %llu): %llu reported by both sides, %llu with the active side's "
                "listener gone, %llu left open (violations unless a death, removal or short timeout explains them)\n",
                (unsigned long long)unconfirmed, (unsigned long long)unconfirmed_runs,
                (unsigned long long)first_unconfirmed, (unsigned long long)rtu_reported,
                (unsigned long long)rtu_unheard, (unsigned long long)(unconfirmed - rtu_reported - rtu_unheard));
  return failures == 0 ? 0 : 1;
}
