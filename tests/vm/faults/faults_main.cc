// vm_faults: the engine under faults of the real kernel stack (run inside the soft-RoCE VM).
//
//   vm_faults path  --a 10.1.0.1 --b 10.1.0.2 [--ranks 8 --lanes 2 --delay-ms D --expect-cm-retries]
//       half of the ranks listen on A, half on B; tests/vm/faults/path.sh puts the two on rxe
//       devices at the ends of a veth pair, with netem on it. Every pair must connect, the
//       pairs that cross the link must show the delay in their CM phases, and under loss the
//       IB CM's retransmission counters must have moved.
//   vm_faults stall --addr 10.0.0.1 [--ranks 5 --lanes 2 --stalled 2 --timeout-s 8]
//       one engine is created and started but never progressed: a listener that never accepts.
//   vm_faults kill  --addr 10.0.0.1 [--ranks 6 --lanes 2 --victim 2 --after 3 --timeout-s 10]
//       one process per rank; the victim is SIGKILLed once `after` of its pairs are connected.
//   vm_faults listen --addr A --port P --seconds S
//       a bare rdma_cm listener that never reads an event (for experiments).
// Exit status: 0 all checks passed, 1 a check failed, 2 the scenario could not run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "tests/vm/faults/faults_common.h"
#include "tests/vm/faults/kill_scenario.h"
#include "wireup/address.h"

namespace wireup::vmfaults {
namespace {

using namespace std::chrono_literals;

struct Args {
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  uint32_t num(const std::string& k, uint32_t def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : static_cast<uint32_t>(std::strtoul(it->second.c_str(), nullptr, 10));
  }
  bool flag(const std::string& k) const { return kv.count(k) != 0; }
};

Result<prov::SockAddr> address(const Args& a, const std::string& key) {
  std::string v = a.get(key);
  // The VM harness exports the address of rxe0's netdev.
  if (v.empty() && key == "addr" && std::getenv("WIREUP_VM_ADDR")) v = std::getenv("WIREUP_VM_ADDR");
  if (v.empty()) return Error::make(ErrorCode::invalid_argument, "vm_faults", "--" + key + " is required");
  return prov::SockAddr::parse(v);
}

Status exchange_and_start(std::vector<Rank>& ranks) {
  std::vector<Peer> table;
  for (uint32_t i = 0; i < ranks.size(); ++i) table.push_back(Peer{i, ranks[i].engine->local_address()});
  for (auto& r : ranks) WIREUP_TRY(r.engine->set_peers(table));
  for (auto& r : ranks) WIREUP_TRY(r.engine->start());
  return Status::ok();
}

double seconds(Nanos d) { return static_cast<double>(d.count()) / 1e9; }

int path(const Args& a) {
  auto A = address(a, "a"), B = address(a, "b");
  if (!A || !B) return std::printf("%s\n", (!A ? A : B).error().message().c_str()), 2;
  const uint32_t n = a.num("ranks", 8), lanes = a.num("lanes", 2);
  const Nanos delay = std::chrono::milliseconds(a.num("delay-ms", 0));
  auto p = prov::create_rdma_provider();
  if (!p) return std::printf("%s\n", p.error().message().c_str()), 2;
  auto side = [n](uint32_t r) { return r < n / 2 ? 0 : 1; };
  std::vector<Rank> ranks(n);
  for (uint32_t i = 0; i < n; ++i)
    if (Status s = make_rank(**p, ranks[i], vm_options(i, n, lanes, side(i) ? *B : *A, 150s)); !s)
      return std::printf("%s\n", s.message().c_str()), 2;
  const std::string dev_a = a.get("dev-a", "rxea"), dev_b = a.get("dev-b", "rxeb");
  const long ra = cm_counter(dev_a, "cm_tx_retries"), rb = cm_counter(dev_b, "cm_tx_retries");
  const long da = cm_counter(dev_a, "cm_rx_duplicates"), db = cm_counter(dev_b, "cm_rx_duplicates");
  const long retries0 = ra < 0 || rb < 0 ? -1 : ra + rb, dups0 = da < 0 || db < 0 ? -1 : da + db;
  const Nanos t0 = (*p)->clock().now();
  if (Status s = exchange_and_start(ranks); !s) return std::printf("%s\n", s.message().c_str()), 2;
  Status done = run(**p, ranks, 180s);
  const Nanos took = (*p)->clock().now() - t0;
  Checks c;
  c.expect(static_cast<bool>(done), "wireup: " + done.message());
  expect_connected(c, ranks, lanes, {});
  // Crossing pairs pay the link's delay once each way per CM exchange: the active side's REQ
  // out and REP back, the passive side's REP out and RTU back.
  std::vector<Nanos> req_rep[2], rep_rtu[2], total[2];
  uint64_t engine_retries = 0;
  for (uint32_t i = 0; i < n; ++i) {
    engine_retries += ranks[i].engine->stats()[Counter::retries];
    for (const ConnResult& x : ranks[i].engine->results()) {
      const int cross = side(i) != side(x.peer);
      const cm::Timings t = x.timings.get();
      if (x.role == cm::Role::active) req_rep[cross].push_back(t.response - t.request);
      else rep_rtu[cross].push_back(t.established - t.rts);
      total[cross].push_back(t.established - t.start);
    }
  }
  const long retries = cm_counter(dev_a, "cm_tx_retries") + cm_counter(dev_b, "cm_tx_retries") - retries0;
  const long dups = cm_counter(dev_a, "cm_rx_duplicates") + cm_counter(dev_b, "cm_rx_duplicates") - dups0;
  std::printf("[faults] path: %u ranks x %u lanes over %s/%s wired in %.2f s; engine retries %llu; IB CM "
              "retransmissions %ld, duplicates received %ld\n",
              n, lanes, A->to_string().c_str(), B->to_string().c_str(), seconds(took),
              (unsigned long long)engine_retries, retries, dups);
  for (int cross : {0, 1})
    std::printf("[faults]   %s pairs: REQ->REP %s; REP->RTU %s; total %s\n", cross ? "crossing" : "same-device",
                spread(req_rep[cross]).c_str(), spread(rep_rtu[cross]).c_str(), spread(total[cross]).c_str());
  if (delay > Nanos{0}) {
    for (auto* v : {&req_rep[1], &rep_rtu[1]})
      for (Nanos d : *v)
        c.expect(d >= 2 * delay, "a crossing CM round trip took " + spread({d}) + ", less than twice the link's delay");
    c.expect(!req_rep[1].empty() && !rep_rtu[1].empty(), "no crossing pairs measured");
  }
  if (a.flag("expect-cm-retries")) {
    c.expect(retries0 >= 0 && dups0 >= 0, "cannot read the IB CM counters of " + dev_a + " and " + dev_b);
    c.expect(retries > 0, "the link lost CM messages but the IB CM retransmitted none (cm_tx_retries)");
  }
  for (auto& r : ranks) (void)r.engine->close(0s);
  return c.failed ? 1 : 0;
}

int stall(const Args& a) {
  auto addr = address(a, "addr");
  if (!addr) return std::printf("%s\n", addr.error().message().c_str()), 2;
  const uint32_t n = a.num("ranks", 5), lanes = a.num("lanes", 2), k = a.num("stalled", 2);
  const Nanos timeout = std::chrono::seconds(a.num("timeout-s", 8));
  const std::string dev = a.get("dev", "rxe0");
  auto p = prov::create_rdma_provider();
  if (!p) return std::printf("%s\n", p.error().message().c_str()), 2;
  std::vector<Rank> ranks(n);
  for (uint32_t i = 0; i < n; ++i)
    if (Status s = make_rank(**p, ranks[i], vm_options(i, n, lanes, *addr, timeout)); !s)
      return std::printf("%s\n", s.message().c_str()), 2;
  ranks[k].frozen = true;  // listening, started, never progressed: requests to it wait forever
  const long req_retx0 = cm_counter(dev, "cm_tx_retries", "req"), mra0 = cm_counter(dev, "cm_tx_msgs", "mra");
  const Nanos t0 = (*p)->clock().now();
  if (Status s = exchange_and_start(ranks); !s) return std::printf("%s\n", s.message().c_str()), 2;
  Status done = run(**p, ranks, timeout + 60s);
  const Nanos took = (*p)->clock().now() - t0;
  Checks c;
  c.expect(static_cast<bool>(done), "wireup: " + done.message());
  expect_connected(c, ranks, lanes, {k});
  std::map<std::string, int> kinds;
  for (uint32_t i = 0; i < n; ++i) {
    if (i == k) continue;
    uint32_t mine = 0;
    for (const ConnResult& x : ranks[i].engine->results())
      c.expect(x.peer != k, "rank " + std::to_string(i) + " connected to the stalled rank");
    for (const PeerError& e : ranks[i].engine->errors()) {
      if (e.peer != k) continue;
      ++mine;
      kinds[std::string(e.role == cm::Role::active ? "active: " : "passive: ") + e.failure.describe()]++;
      c.expect(e.failure.kind == cm::FailKind::timed_out, "rank " + std::to_string(i) + ": " + e.describe());
    }
    c.expect(mine == lanes, "rank " + std::to_string(i) + " reported " + std::to_string(mine) + " of " +
                                std::to_string(lanes) + " lanes to the stalled rank");
  }
  c.expect(took >= timeout, "done before the wireup timeout: the stalled pairs cannot have settled");
  std::printf("[faults] stall: rank %u never progressed; the other %u done after %.2f s (timeout %.0f s); IB CM: "
              "%ld REQ retransmissions, %ld MRAs sent\n",
              k, n - 1, seconds(took), seconds(timeout), cm_counter(dev, "cm_tx_retries", "req") - req_retx0,
              cm_counter(dev, "cm_tx_msgs", "mra") - mra0);
  for (auto& [why, count] : kinds) std::printf("[faults]   %d x %s\n", count, why.c_str());
  for (auto& r : ranks) (void)r.engine->close(0s);
  return c.failed ? 1 : 0;
}

int listen_only(const Args& a) {
  auto addr = address(a, "addr");
  if (!addr) return std::printf("%s\n", addr.error().message().c_str()), 2;
  addr->set_port(static_cast<uint16_t>(a.num("port", 7471)));
  auto p = prov::create_rdma_provider();
  if (!p) return std::printf("%s\n", p.error().message().c_str()), 2;
  auto ch = (*p)->create_channel();
  if (!ch) return 2;
  auto id = (*p)->create_id(**ch, prov::PortSpace::tcp, nullptr);
  if (!id || !(*id)->bind_addr(*addr) || !(*id)->listen(16)) return std::printf("listen failed\n"), 2;
  std::printf("[faults] listening on %s, never answering, for %u s\n", addr->to_string().c_str(), a.num("seconds", 30));
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(a.num("seconds", 30)));
  return 0;
}

}  // namespace
}  // namespace wireup::vmfaults

int main(int argc, char** argv) {
  using namespace wireup::vmfaults;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s path|stall|kill|listen [--key value | --flag]...\n", argv[0]);
    return 2;
  }
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return std::fprintf(stderr, "unexpected '%s'\n", argv[i]), 2;
    k = k.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) a.kv[k] = argv[++i];
    else a.kv[k] = "1";
  }
  const std::string what = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (what == "path") return path(a);
  if (what == "stall") return stall(a);
  if (what == "kill") {
    const char* vm = std::getenv("WIREUP_VM_ADDR");
    const uint32_t n = a.num("ranks", 6), lanes = a.num("lanes", 2);
    return kill_scenario(a.get("addr", vm ? vm : ""), n, lanes, a.num("victim", 2), a.num("after", n * lanes / 4),
                         std::chrono::seconds(a.num("timeout-s", 10)));
  }
  if (what == "listen") return listen_only(a);
  std::fprintf(stderr, "unknown scenario '%s'\n", what.c_str());
  return 2;
}
