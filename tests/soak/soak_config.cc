#include "tests/soak/soak_config.h"

#include <cmath>
#include <cstdio>
#include <random>

namespace wireup::soak {
namespace {

// splitmix64: neighbouring seeds give unrelated generator states.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double ms(Nanos t) { return static_cast<double>(t.count()) / 1e6; }

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%x", v);
  return b;
}

}  // namespace

const char* to_string(Death d) {
  switch (d) {
    case Death::none: return "none";
    case Death::crash: return "crash";
    case Death::kill: return "kill";
  }
  return "?";
}

RunConfig draw(uint64_t seed) {
  std::mt19937_64 g(mix(seed));
  auto uni = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(g); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); };
  auto coin = [&](double p) { return real(0, 1) < p; };
  // Fault times spread over every phase of a wireup: from the first resolve (tens of us) to
  // the CM's retransmissions under loss (seconds).
  auto when = [&] { return Nanos(static_cast<int64_t>(std::exp(real(std::log(1e4), std::log(5e9))))); };

  RunConfig c;
  c.seed = seed;
  c.ranks = uni(3, 24);
  c.lanes = uni(1, 3);
  static const uint32_t cw[] = {1, 2, 4, 8, 16, 64};
  static const uint32_t qw[] = {1, 2, 4, 32};
  c.connect_window = cw[uni(0, 5)];
  c.qp_window = qw[uni(0, 3)];
  // Enough attempts that the random refusals below (at most ~16% per attempt) exhaust a
  // healthy pair with odds below 1e-8: a healthy pair that fails is then an engine bug.
  c.max_attempts = uni(10, 14);
  c.latency = static_cast<int>(uni(0, 2));
  if (coin(0.6)) c.loss = real(0, 0.10);
  if (coin(0.4)) c.duplicate = real(0, 0.05);
  if (coin(0.4)) c.delay = Nanos(uni(0, 5'000'000));
  if (coin(0.4)) c.jitter = Nanos(uni(0, 5'000'000));
  if (coin(0.4)) c.reject28 = real(0, 0.10);
  if (coin(0.3)) {
    c.reject8 = real(0, 0.20);
    c.reject8_node = uni(0, c.ranks - 1);
  }
  if (coin(0.3)) c.addr_error = real(0, 0.03);
  if (coin(0.3)) c.route_error = real(0, 0.03);
  if (coin(0.3)) {
    c.flap = true;
    if (coin(0.5)) {
      c.flap_a = uni(0, c.ranks - 1);
      c.flap_b = (c.flap_a + uni(1, c.ranks - 1)) % c.ranks;
    }
    c.flap_types = coin(0.5) ? 0x7f : uni(1, 0x7f);  // every CM message, or a random subset
    c.flap_drop = real(0.3, 1.0);
    c.flap_from = when();
    c.flap_until = c.flap_from + Nanos(static_cast<int64_t>(std::exp(real(std::log(1e6), std::log(3e11)))));
  }
  if (coin(0.35)) {
    c.death = coin(0.5) ? Death::crash : Death::kill;
    c.victim = uni(0, c.ranks - 1);
    c.death_at = when();
  }
  if (coin(0.2)) {
    c.removal = true;
    c.removal_rank = uni(0, c.ranks - 1);
    c.removal_at = when();
  }
  // Mostly a timeout no healthy pair can reach (a dead peer costs a connect slot up to
  // max_attempts x 98.3 s of UNREACHABLE); sometimes one that cuts the wireup short.
  c.wireup_timeout = coin(0.15) ? Nanos(static_cast<int64_t>(real(1e6, 2e9))) : std::chrono::seconds(3600);
  c.close_drain = coin(0.5) ? Nanos{0} : std::chrono::milliseconds(20);
  return c;
}

std::string RunConfig::describe() const {
  static const char* lat[] = {"hardware", "rxe_vm", "zero"};
  char buf[640];
  int n = std::snprintf(buf, sizeof buf,
                        "%u ranks x %u lanes, windows %u/%u, %u attempts, latency %s, loss %.3f dup %.3f "
                        "delay %.2f ms jitter %.2f ms, rej28 %.3f rej8 %.3f (to %u), addr_err %.3f route_err "
                        "%.3f, timeout %.3f s, drain %.0f ms",
                        ranks, lanes, connect_window, qp_window, max_attempts, lat[latency], loss, duplicate,
                        ms(delay), ms(jitter), reject28, reject8, reject8_node, addr_error, route_error,
                        ms(wireup_timeout) / 1e3, ms(close_drain));
  std::string s(buf, static_cast<size_t>(n));
  if (flap)
    s += ", flap " + std::to_string(flap_a) + "<->" + std::to_string(flap_b) + " types 0x" + hex(flap_types) +
         " drop " + std::to_string(flap_drop) + " from " + std::to_string(ms(flap_from)) + " to " +
         std::to_string(ms(flap_until)) + " ms";
  if (death != Death::none)
    s += ", " + std::string(to_string(death)) + " rank " + std::to_string(victim) + " at " +
         std::to_string(ms(death_at)) + " ms";
  if (removal)
    s += ", device removal on rank " + std::to_string(removal_rank) + " at " + std::to_string(ms(removal_at)) + " ms";
  return s;
}

}  // namespace wireup::soak
