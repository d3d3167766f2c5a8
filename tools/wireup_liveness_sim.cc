// wireup_liveness_sim: the liveness service's decisions (src/wireup/liveness.h, the very code
// a rank runs) for a whole job in one process, in virtual time: every rank's detector, every
// datagram through a lossy, delayed network, one node killed (its ranks go silent at once, as
// in a power cut). Prints how long the survivors took to know, the false deaths and the
// datagrams each rank sent per second. Sim only: no socket, no kernel.
//
//   wireup_liveness_sim [--ranks N] [--per-node P] [--period-ms T] [--deadline-ms D]
//                       [--watchers K] [--loss P] [--delay-ms D] [--run-s S]
//                       [--kill-node I|none] [--kill-at-s S] [--seed X]
// Exit 1 if a rank not killed was declared dead, or a survivor learnt of the killed node after
// the deadline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "wireup/liveness.h"

using namespace wireup;
using namespace wireup::liveness;
using namespace std::chrono_literals;

namespace {

struct Opts {
  uint32_t ranks = 10000, per_node = 16, watchers = 3;
  double period_ms = 500, deadline_ms = 3000, loss = 0, delay_ms = 2, run_s = 30, kill_at_s = -1;
  int64_t kill_node = -2;  // -2: the middle node; -1: none
  uint64_t seed = 1;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "wireup_liveness_sim: %s\n", why);
  std::exit(64);
}

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(("option " + k + " needs a value").c_str());
    const std::string v = argv[i + 1];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool num = end != v.c_str() && *end == '\0';
    if (k == "--kill-node" && v == "none") {
      o.kill_node = -1;
      continue;
    }
    if (!num || x < 0) usage(("option " + k + ": \"" + v + "\" is not a non-negative number").c_str());
    if (k == "--ranks") o.ranks = static_cast<uint32_t>(x);
    else if (k == "--per-node") o.per_node = static_cast<uint32_t>(x);
    else if (k == "--watchers") o.watchers = static_cast<uint32_t>(x);
    else if (k == "--period-ms") o.period_ms = x;
    else if (k == "--deadline-ms") o.deadline_ms = x;
    else if (k == "--loss") o.loss = x;
    else if (k == "--delay-ms") o.delay_ms = x;
    else if (k == "--run-s") o.run_s = x;
    else if (k == "--kill-at-s") o.kill_at_s = x;
    else if (k == "--kill-node") o.kill_node = static_cast<int64_t>(x);
    else if (k == "--seed") o.seed = static_cast<uint64_t>(x);
    else usage(("unknown option " + k).c_str());
  }
  if (o.ranks < 2 || o.per_node < 1) usage("--ranks must be at least 2, --per-node at least 1");
  if (o.loss >= 1) usage("--loss is a probability below 1");
  return o;
}

Nanos ms(double x) { return Nanos(static_cast<int64_t>(x * 1e6)); }

struct Event {
  Nanos at;
  uint64_t seq;      // FIFO among equal times
  uint32_t rank;
  bool tick;         // else: deliver msg
  Msg msg;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  Params p;
  p.period = ms(o.period_ms);
  p.deadline = ms(o.deadline_ms);
  p.watchers = o.watchers;
  if (const char* why = check(p); *why) usage(why);
  const uint32_t nodes = (o.ranks + o.per_node - 1) / o.per_node;
  std::vector<uint64_t> node_of(o.ranks);
  for (uint32_t r = 0; r < o.ranks; ++r) node_of[r] = r / o.per_node;
  auto ring = std::make_shared<const Ring>(node_of);
  const int64_t victim = o.kill_node == -2 ? nodes / 2 : o.kill_node;
  if (victim >= static_cast<int64_t>(nodes)) usage("--kill-node is past the last node");
  const Nanos run = ms(o.run_s * 1000);
  const Nanos kill_at = victim < 0 ? Nanos::max() : ms((o.kill_at_s >= 0 ? o.kill_at_s : o.run_s / 2) * 1000);

  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u01(0, 1);
  std::vector<Detector> det;
  det.reserve(o.ranks);
  for (uint32_t r = 0; r < o.ranks; ++r) det.emplace_back(r, ring, p);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q;
  std::vector<Nanos> scheduled(o.ranks, Nanos::max());
  uint64_t seq = 0;
  auto schedule = [&](uint32_t r) {
    const Nanos t = det[r].next_due();
    if (t >= scheduled[r]) return;
    scheduled[r] = t;
    q.push(Event{t, seq++, r, true, {}});
  };
  // Every rank starts within one period of the others (as ranks leave wireup), phases random.
  for (uint32_t r = 0; r < o.ranks; ++r) {
    det[r].start(ms(u01(rng) * o.period_ms));
    schedule(r);
  }
  std::vector<bool> killed(o.ranks);
  uint64_t lost = 0, delivered = 0;
  std::vector<Out> out;
  auto flush = [&](Nanos now) {
    for (const Out& x : out) {
      if (o.loss > 0 && u01(rng) < o.loss) {
        ++lost;
        continue;
      }
      // The one-way delay, plus up to a quarter of it as jitter.
      q.push(Event{now + ms(o.delay_ms * (1 + 0.25 * u01(rng))), seq++, x.to, false, x.msg});
    }
    out.clear();
  };
  // Per survivor: when it knew each killed rank; per rank: who learnt of it (false deaths).
  const uint32_t first_victim = victim < 0 ? 0 : static_cast<uint32_t>(victim) * o.per_node;
  const uint32_t victims = victim < 0 ? 0 : std::min(o.per_node, o.ranks - first_victim);
  std::vector<Nanos> knew_all(o.ranks, Nanos::max());
  std::vector<uint32_t> known_victims(o.ranks);
  uint64_t false_deaths = 0;
  std::vector<bool> falsely_dead(o.ranks);
  Nanos first_declared = Nanos::max();
  uint64_t sent_before_kill = 0;
  bool kill_done = false;
  while (!q.empty() && q.top().at <= run) {
    Event e = q.top();
    q.pop();
    if (!kill_done && e.at >= kill_at) {
      kill_done = true;
      for (uint32_t r = first_victim; r < first_victim + victims; ++r) killed[r] = true;
      for (const Detector& d : det) sent_before_kill += d.counters().sent;
    }
    if (killed[e.rank]) continue;
    Detector& d = det[e.rank];
    if (e.tick) {
      if (e.at != scheduled[e.rank]) continue;  // superseded by an earlier one
      scheduled[e.rank] = Nanos::max();
      d.tick(e.at, out);
    } else {
      ++delivered;
      d.receive(e.msg, e.at, out);
    }
    for (uint32_t dead : d.take_deaths()) {
      const bool real = dead >= first_victim && dead < first_victim + victims && kill_done;
      if (!real) {
        ++false_deaths;
        if (!falsely_dead[dead]) {
          falsely_dead[dead] = true;
          std::printf("FALSE DEATH: rank %u declared dead by rank %u at %.3f s\n", dead, e.rank, e.at.count() / 1e9);
        }
        continue;
      }
      first_declared = std::min(first_declared, e.at);
      if (++known_victims[e.rank] == victims) knew_all[e.rank] = e.at;
    }
    flush(e.at);
    schedule(e.rank);
  }
  // --- report ---
  uint64_t sent = 0, suspicions = 0, refuted = 0, declared = 0, stale = 0;
  for (const Detector& d : det) {
    sent += d.counters().sent;
    suspicions += d.counters().suspicions;
    refuted += d.counters().refuted;
    declared += d.counters().declared;
    stale += d.counters().stale;
  }
  std::printf("wireup_liveness_sim (simulation only: the detector's code, no sockets)\n");
  std::printf("job:        %u ranks, %u per node (%u nodes), k = %u watchers, period %.0f ms, deadline %.0f ms "
              "(suspect after %.0f ms of silence)\n",
              o.ranks, o.per_node, nodes, o.watchers, o.period_ms, o.deadline_ms,
              std::chrono::duration<double, std::milli>(det[0].suspect_after()).count());
  std::printf("network:    loss %.1f%%, one-way delay %.1f ms (+ up to 25%% jitter), %.0f s run; %llu datagrams "
              "delivered, %llu lost\n",
              o.loss * 100, o.delay_ms, o.run_s, (unsigned long long)delivered, (unsigned long long)lost);
  int rc = 0;
  if (victim >= 0) {
    std::vector<double> t;
    uint32_t missed = 0;
    for (uint32_t r = 0; r < o.ranks; ++r) {
      if (killed[r]) continue;
      if (knew_all[r] == Nanos::max()) {
        ++missed;
        continue;
      }
      t.push_back(std::chrono::duration<double, std::milli>(knew_all[r] - kill_at).count());
    }
    std::sort(t.begin(), t.end());
    if (std::getenv("LIVENESS_SIM_DEBUG")) {
      std::vector<uint32_t> hist(victims + 1);
      for (uint32_t r = 0; r < o.ranks; ++r)
        if (!killed[r]) ++hist[known_victims[r]];
      for (uint32_t i = 0; i <= victims; ++i) std::printf("debug: %u survivors knew %u\n", hist[i], i);
    }
    std::printf("killed:     node %lld (ranks %u-%u) at %.1f s, silent from then on\n", (long long)victim,
                first_victim, first_victim + victims - 1, kill_at.count() / 1e9);
    if (!t.empty()) {
      std::printf("detection:  first declaration after %.0f ms; every survivor knew all %u ranks dead after "
                  "%.0f / %.0f / %.0f ms (first / median / last) vs the %.0f ms deadline%s\n",
                  std::chrono::duration<double, std::milli>(first_declared - kill_at).count(), victims, t.front(),
                  t[t.size() / 2], t.back(), o.deadline_ms, t.back() <= o.deadline_ms ? "" : "  LATE");
      if (t.back() > o.deadline_ms) rc = 1;
    }
    if (missed > 0) {
      std::printf("detection:  %u survivors never learnt all of it within the run\n", missed);
      rc = 1;
    }
  }
  std::printf("false:      %llu false deaths (ranks not killed, declared dead), %llu suspicions, %llu refuted by a "
              "heartbeat, %llu declarations\n",
              (unsigned long long)false_deaths, (unsigned long long)suspicions, (unsigned long long)refuted,
              (unsigned long long)declared);
  if (false_deaths > 0) rc = 1;
  const double steady_s = std::min(o.run_s, victim >= 0 ? kill_at.count() / 1e9 : o.run_s);
  const uint64_t steady_sent = victim >= 0 && kill_done ? sent_before_kill : sent;
  std::printf("cost:       %.2f datagrams per rank per second before the kill (k / period = %.2f); %.2f over the "
              "whole run, the notices included; %llu stale datagrams dropped\n",
              steady_sent / (double)o.ranks / steady_s, o.watchers / (o.period_ms / 1000),
              sent / (double)o.ranks / o.run_s, (unsigned long long)stale);
  // UCX's keepalive (UCX_KEEPALIVE_INTERVAL 20 s, UCX_KEEPALIVE_NUM_EPS 128 per round) walks
  // the endpoints in turn: one peer is probed once every ceil((N-1)/128) rounds.
  const double rounds = std::ceil((o.ranks - 1) / 128.0);
  std::printf("vs UCX:     keepalive probes 128 endpoints per 20 s round: with %u peers each is probed every "
              "%.0f s (%.1f min), against a %.1f s deadline here\n",
              o.ranks - 1, rounds * 20, rounds * 20 / 60, o.deadline_ms / 1000);
  return rc;
}
