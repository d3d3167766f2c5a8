#include "tests/vm/faults/faults_common.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "wireup/address.h"

namespace wireup::vmfaults {

using namespace std::chrono_literals;

EngineOptions vm_options(uint32_t rank, uint32_t nranks, uint32_t lanes, const prov::SockAddr& listen,
                         Nanos timeout) {
  EngineOptions o = engine_defaults();
  o.rank = rank;
  o.nranks = nranks;
  o.lanes = lanes;
  o.job_key = kJobKey;
  o.listen_addr = listen;
  o.listen_addr.set_port(0);
  // config/examples/soft-roce-vm.toml explains these: TCG makes every kernel path slow.
  o.connect_window = 8;
  o.qp_window = 4;
  o.max_attempts = 5;
  o.backoff_initial = 500ms;
  o.backoff_max = 4s;
  o.resolve_addr_timeout_ms = 10000;
  o.resolve_route_timeout_ms = 10000;
  o.ece.mode = ece::Mode::off;
  o.qp.path_mtu = 3;  // 1024 bytes: the largest RoCE MTU on a 1500-byte netdev
  o.ack_timeout = 20;  // 4.3 s local ACK timeout: 67 ms fires spuriously under TCG
  o.wireup_timeout = timeout;
  return o;
}

Status make_rank(prov::Provider& p, Rank& r, const EngineOptions& o) {
  r.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 256);
  auto e = Engine::create(p, o, r.factory->hook());
  if (!e) return Error(e.error()).with_peer("rank " + std::to_string(o.rank));
  r.engine = std::move(e).value();
  auto* seen = r.steady.get();  // stable when the vector of ranks moves
  r.engine->on_steady_event([seen](const SteadyEvent& ev) { seen->push_back(ev); });
  return Status::ok();
}

namespace {

// One pass over every live engine; waits on all their channels when nobody had work, at most
// until the earliest engine timer (a retry's backoff, a deadline).
Result<int> pass(prov::Provider& p, std::vector<Rank>& ranks, Nanos max_wait) {
  int work = 0;
  Nanos wake = p.clock().now() + max_wait;
  std::vector<prov::EventChannel*> chans;
  for (auto& r : ranks) {
    if (r.frozen || !r.engine) continue;
    auto w = r.engine->progress();
    if (!w) return w.error();
    work += *w;
    wake = std::min(wake, r.engine->next_wakeup());
    for (auto* c : r.engine->channels()) chans.push_back(c);
  }
  if (work == 0) {
    Nanos d = wake - p.clock().now();
    if (d > Nanos{0}) WIREUP_TRY(p.wait(chans, d));
  }
  return work;
}

}  // namespace

Status run(prov::Provider& p, std::vector<Rank>& ranks, Nanos bound) {
  const Nanos until = p.clock().now() + bound;
  for (;;) {
    bool all = true;
    for (auto& r : ranks)
      if (!r.frozen && r.engine && !r.engine->done()) all = false;
    if (all) return Status::ok();
    if (p.clock().now() >= until)
      return Error::make(ErrorCode::timed_out, "vm_faults", "engines not done within the bound");
    auto w = pass(p, ranks, 20ms);
    if (!w) return w.error();
  }
}

void linger(prov::Provider& p, std::vector<Rank>& ranks, Nanos d) {
  const Nanos until = p.clock().now() + d;
  while (p.clock().now() < until)
    if (!pass(p, ranks, until - p.clock().now())) return;
}

void expect_connected(Checks& c, const std::vector<Rank>& ranks, uint32_t lanes, const std::set<uint32_t>& skip) {
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, const ConnResult*> seen;
  const uint32_t n = static_cast<uint32_t>(ranks.size());
  for (uint32_t me = 0; me < n; ++me) {
    if (skip.count(me)) continue;
    for (const ConnResult& x : ranks[me].engine->results()) {
      bool fresh = seen.emplace(std::make_tuple(me, x.peer, x.lane), &x).second;
      c.expect(fresh, "rank " + std::to_string(me) + " connected to " + std::to_string(x.peer) + " lane " +
                          std::to_string(x.lane) + " twice");
    }
    for (const PeerError& e : ranks[me].engine->errors())
      c.expect(skip.count(e.peer) != 0, "rank " + std::to_string(me) + ": " + e.describe());
  }
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = 0; b < n; ++b) {
      if (a == b || skip.count(a) || skip.count(b)) continue;
      for (uint32_t l = 0; l < lanes; ++l) {
        auto x = seen.find({a, b, l}), y = seen.find({b, a, l});
        const std::string pair = std::to_string(a) + "<->" + std::to_string(b) + " lane " + std::to_string(l);
        c.expect(x != seen.end() && y != seen.end(), pair + " not connected on both sides");
        if (x == seen.end() || y == seen.end()) continue;
        c.expect(x->second->remote_qpn == y->second->local_qpn && x->second->local_qpn == y->second->remote_qpn,
                 pair + ": QPNs not crossed");
        c.expect(x->second->role != y->second->role, pair + ": both sides have the same role");
      }
    }
}

std::string spread(std::vector<Nanos> v) {
  if (v.empty()) return "none";
  std::sort(v.begin(), v.end());
  auto ms = [](Nanos t) { return static_cast<double>(t.count()) / 1e6; };
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f / %.1f / %.1f ms (n=%zu)", ms(v.front()), ms(v[v.size() / 2]), ms(v.back()),
                v.size());
  return buf;
}

long cm_counter(const std::string& dev, const std::string& group, const std::string& msg) {
  static const char* msgs[] = {"req", "mra", "rej", "rep", "rtu", "dreq", "drep", "sidr_req", "sidr_rep", "lap", "apr"};
  long sum = 0;
  bool any = false;
  for (const char* m : msgs) {
    if (!msg.empty() && msg != m) continue;
    // Linux >= 5.14 keeps the CM's counters with the port; older kernels under infiniband_cm.
    std::ifstream in("/sys/class/infiniband/" + dev + "/ports/1/" + group + "/" + m);
    if (!in) in.open("/sys/class/infiniband_cm/" + dev + "/1/" + group + "/" + m);
    long v = 0;
    if (in >> v) {
      sum += v;
      any = true;
    }
  }
  return any ? sum : -1;
}

}  // namespace wireup::vmfaults
