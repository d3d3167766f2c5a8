#include "tests/soak/soak_run.h"

#include <cstdarg>
#include <cstdio>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "provider/sim/fabric.h"
#include "qp/factory.h"
#include "wireup/engine.h"
#include "testsupport/sim_drive.h"
#include "wireup/options.h"

namespace wireup::soak {
namespace {

using namespace std::chrono_literals;
using prov::sim::SimFabric;

constexpr uint64_t kJobKey = 0x50a450a4c0ffee11ULL;
constexpr Nanos kLongTimeout = 3600s;

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Digest {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over 64-bit words
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
  }
};

prov::sim::SimConfig fabric_config(const RunConfig& c) {
  using prov::sim::LatencyModel;
  prov::sim::SimConfig cfg;
  cfg.seed = mix(c.seed ^ 0xfab1c0de);
  cfg.latency = c.latency == 0   ? LatencyModel::hardware()
                : c.latency == 1 ? LatencyModel::rxe_vm()
                                 : LatencyModel::zero();
  auto& f = cfg.faults;
  f.loss = c.loss;
  f.duplicate = c.duplicate;
  f.delay = c.delay;
  f.jitter = c.jitter;
  // First match wins: REQs to reject8_node may get 8, every other REQ may get 28.
  if (c.reject8 > 0) f.rejects.push_back({-1, c.reject8_node, 8, c.reject8, -1});
  if (c.reject28 > 0) f.rejects.push_back({-1, -1, 28, c.reject28, -1});
  if (c.flap) {
    prov::sim::MessageRule r;
    r.types = c.flap_types;
    r.from = c.flap_from;
    r.until = c.flap_until;
    r.drop = c.flap_drop;
    r.src_node = c.flap_a;
    r.dst_node = c.flap_b;
    f.rules.push_back(r);
    std::swap(r.src_node, r.dst_node);
    if (c.flap_a >= 0) f.rules.push_back(r);
  }
  f.addr_error = c.addr_error;
  f.route_error = c.route_error;
  return cfg;
}

struct Member {
  std::unique_ptr<qp::DefaultQpFactory> factory;
  std::unique_ptr<Engine> engine;
  std::set<std::pair<uint32_t, uint32_t>> rtu_lost;  // (peer, lane) its transport was told of
  bool stopped = false;  // died during the wireup: never progressed again
  void destroy() {       // the QPs before the PD and CQ they live on
    engine.reset();
    factory.reset();
  }
};

class Runner {
 public:
  Runner(const RunConfig& c, bool verbose) : c_(c), verbose_(verbose), fab_(fabric_config(c)) {}
  RunReport go();

 private:
  Status build();
  Status drive();
  void check_pairs();
  void check_accounting();
  void teardown();
  bool live(uint32_t r) const { return m_[r].engine && !m_[r].stopped; }
  bool removed(uint32_t r) const { return rep_.removal_applied && c_.removal_rank == r; }
  void bad(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  const RunConfig& c_;
  bool verbose_;
  SimFabric fab_;
  std::vector<Member> m_;
  RunReport rep_;
};

void Runner::bad(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  // A broken invariant tends to break for many pairs at once: keep the report readable.
  if (rep_.violations.size() < 20) rep_.violations.emplace_back(buf);
  else if (rep_.violations.size() == 20) rep_.violations.emplace_back("... (more)");
}

Status Runner::build() {
  for (uint32_t i = 0; i < c_.ranks; ++i) fab_.add_node();
  if (c_.death == Death::crash) fab_.kill_node(c_.victim, c_.death_at);
  if (c_.removal) fab_.remove_device(c_.removal_rank, 0, c_.removal_at);
  std::vector<Peer> table;
  m_.resize(c_.ranks);
  for (uint32_t i = 0; i < c_.ranks; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = c_.ranks;
    o.lanes = c_.lanes;
    o.job_key = kJobKey;
    o.listen_addr = fab_.address(i);
    o.connect_window = c_.connect_window;
    o.qp_window = c_.qp_window;
    o.max_attempts = c_.max_attempts;
    o.wireup_timeout = c_.wireup_timeout;
    o.seed = mix(c_.seed * 1000003 + i) | 1;
    m_[i].factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    auto e = Engine::create(fab_.provider(i), o, m_[i].factory->hook());
    if (!e) return Error(e.error()).with_peer("rank " + std::to_string(i));
    m_[i].engine = std::move(e).value();
    m_[i].engine->on_steady_event([this, i](const SteadyEvent& ev) {
      if (ev.rtu_lost) m_[i].rtu_lost.insert({ev.peer, ev.lane});
    });
    table.push_back(Peer{i, m_[i].engine->local_address()});
  }
  for (auto& mb : m_) {
    WIREUP_TRY(mb.engine->set_peers(table));
    WIREUP_TRY(mb.engine->start());
  }
  return Status::ok();
}

// The engines' shared sim drive loop (testsupport/sim_drive.h), with the victim stopped (or
// killed) at its death time; every live engine is driven until its RTU linger is over.
Status Runner::drive() {
  std::vector<Engine*> engines;
  for (Member& mb : m_) engines.push_back(mb.engine.get());
  SimDriveOptions o;
  o.bound = c_.wireup_timeout + 600s;
  o.until_setup_closed = true;
  if (c_.death != Death::none) {
    o.at = c_.death_at;
    o.intervene = [this](std::vector<Engine*>& table) {
      // A crashed node is silenced by the fabric; a killed process loses its objects, which
      // makes its kernel reject or disconnect everything it had in flight.
      rep_.death_applied = true;
      Member& v = m_[c_.victim];
      v.stopped = true;
      table[c_.victim] = nullptr;
      if (c_.death == Death::kill) v.destroy();
    };
  }
  auto r = sim_drive(fab_, engines, o);
  if (!r) return Error(r.error()).with_peer("soak");
  rep_.fabric_events = r->fabric_steps + r->clock_advances;
  rep_.virtual_s = static_cast<double>(fab_.now().count()) / 1e9;
  rep_.removal_applied = c_.removal && fab_.now() >= c_.removal_at;
  return Status::ok();
}

void Runner::check_pairs() {
  const uint32_t n = c_.ranks;
  const bool short_timeout = c_.wireup_timeout < kLongTimeout;
  struct Side {
    const ConnResult* res = nullptr;
    prov::Qp* qp = nullptr;  // res's QP in its engine (Engine::qp)
    const PeerError* err = nullptr;
    bool removed = false;  // connected, then its device went away (DEVICE_REMOVAL reported)
  };
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Side> sides;
  for (uint32_t r = 0; r < n; ++r) {
    if (!live(r)) continue;
    const Engine& e = *m_[r].engine;
    for (const ConnResult& x : e.results()) {
      // Taken back by an RTU repair (never a connection), or by a device removal.
      if (x.withdrawn) {
        if (removed(r) && x.peer < n && x.lane < c_.lanes) sides[{r, x.peer, x.lane}].removed = true;
        continue;
      }
      if (x.peer >= n || x.peer == r || x.lane >= c_.lanes) {
        bad("rank %u: result for peer %u lane %u outside the plan", r, x.peer, x.lane);
        continue;
      }
      Side& s = sides[{r, x.peer, x.lane}];
      if (s.res) bad("rank %u: peer %u lane %u connected twice", r, x.peer, x.lane);
      s.res = &x;
      s.qp = e.qp(static_cast<uint32_t>(&x - e.results().data()));
      ++rep_.connections;
    }
    for (const PeerError& x : e.errors()) {
      if (x.peer >= n || x.peer == r || x.lane >= c_.lanes) {
        bad("rank %u: error for peer %u lane %u outside the plan", r, x.peer, x.lane);
        continue;
      }
      Side& s = sides[{r, x.peer, x.lane}];
      if (s.err) bad("rank %u: peer %u lane %u reported twice", r, x.peer, x.lane);
      s.err = &x;
      if (x.failure.kind == cm::FailKind::none) bad("rank %u: error without a reason: %s", r, x.describe().c_str());
      ++rep_.failed;
    }
    rep_.retries += e.stats()[Counter::retries];
    rep_.repairs += e.stats()[Counter::repairs];
    rep_.rtu_notices += e.stats()[Counter::rtu_lost_sent];
  }
  // The IB CM's own gap: the active side is established once it has the REP and sent the RTU;
  // if every RTU (or the REPs that would make the active CM resend it) is lost until the
  // passive side's REP retries run out, the passive gets UNREACHABLE and its CM tells the
  // active side nothing. The engine closes it (engine_repair.cc): the passive side asks, and
  // the active side reconnects, or both report the loss. What may remain is a pair connected
  // on the active side only where both sides said so (`reported`), or where the active
  // side's listener was gone for every try of the notice (`unheard`: its wireup and linger
  // had ended, so nothing could reach it; the passive side says that in its PeerError).
  auto unconfirmed = [&](const Side& active, const Side& passive) {
    return active.res && active.res->role == cm::Role::active && passive.err &&
           passive.err->role == cm::Role::passive &&
           (passive.err->failure.kind == cm::FailKind::unreachable ||
            passive.err->failure.kind == cm::FailKind::rtu_lost);
  };
  enum class Gap { none, open, reported, unheard };
  // `a` is rank ar's side of (ar, pr, lane), `p` is pr's side.
  auto gap_of = [&](uint32_t ar, const Side& a, const Side& p, uint32_t lane) {
    if (!unconfirmed(a, p)) return Gap::none;
    if (p.err->failure.kind != cm::FailKind::rtu_lost) return Gap::open;
    if (m_[ar].rtu_lost.count({a.res->peer, lane})) return Gap::reported;
    if (p.err->failure.status == prov::reject_reason::no_listener) return Gap::unheard;
    return Gap::open;
  };
  for (uint32_t r = 0; r < n; ++r) {
    if (!live(r)) continue;
    for (uint32_t p = 0; p < n; ++p) {
      if (p == r) continue;
      // A pair may fail, or connect on one side only, where the run gives a reason to.
      const bool explained = !live(p) || short_timeout || removed(r) || removed(p);
      for (uint32_t l = 0; l < c_.lanes; ++l) {
        const Side& s = sides[{r, p, l}];
        if (s.res && s.err) bad("rank %u: peer %u lane %u both connected and failed", r, p, l);
        if (!s.res && !s.err && !s.removed) bad("rank %u: peer %u lane %u neither connected nor reported", r, p, l);
        const Side& o = sides[{p, r, l}];
        const Gap g = !live(p) ? Gap::none : s.res ? gap_of(r, s, o, l) : gap_of(p, o, s, l);
        const bool gap = g == Gap::reported || g == Gap::unheard;
        if (g != Gap::none && s.res) {
          ++rep_.unconfirmed;
          rep_.rtu_reported += g == Gap::reported;
          rep_.rtu_unheard += g == Gap::unheard;
          if (g == Gap::open && !explained)
            bad("ranks %u/%u lane %u: RTU gap left open: connected on the active side, the passive side says %s", r,
                p, l, o.err->describe().c_str());
        }
        if (s.err && !explained && !gap && g != Gap::open)
          bad("rank %u: healthy pair failed: %s", r, s.err->describe().c_str());
        if (!s.res) continue;
        const ConnResult& a = *s.res;
        if (!s.qp) {
          bad("rank %u: peer %u lane %u: result without a QP", r, p, l);
        } else {
          if (s.qp->qpn() != a.local_qpn)
            bad("rank %u: peer %u lane %u: local_qpn %u is not the QP's %u", r, p, l, a.local_qpn, s.qp->qpn());
          auto q = s.qp->query(prov::qp_mask::state);
          const prov::QpState st = q ? q->qp_state : prov::QpState::unknown;
          const bool ok = st == prov::QpState::rts || (removed(r) && st == prov::QpState::err);
          if (!ok) bad("rank %u: peer %u lane %u: QP %u in %s, not RTS", r, p, l, a.local_qpn, prov::to_string(st));
        }
        if (!live(p)) continue;
        const Side& t = sides[{p, r, l}];
        if (!t.res) {
          if (!explained && !gap && g != Gap::open)
            bad("rank %u: peer %u lane %u connected here only; the peer says %s", r, p, l,
                t.err ? t.err->describe().c_str() : "nothing");
          continue;
        }
        if (a.remote_qpn != t.res->local_qpn || a.local_qpn != t.res->remote_qpn)
          bad("ranks %u/%u lane %u: QPNs not crossed (%u->%u vs %u->%u)", r, p, l, a.local_qpn, a.remote_qpn,
              t.res->local_qpn, t.res->remote_qpn);
        if (a.role == t.res->role)
          bad("ranks %u/%u lane %u: both sides %s", r, p, l, a.role == cm::Role::active ? "active" : "passive");
      }
    }
  }
}

// Before teardown: the fabric holds what the results hold and nothing else.
void Runner::check_accounting() {
  uint64_t qps = 0, ids = 0, results = 0, engines = 0;
  for (auto& mb : m_) {
    if (!mb.engine) continue;
    ++engines;
    ids += mb.engine->live_ids();
    results += mb.engine->connected();
    for (uint32_t i = 0; i < mb.engine->results().size(); ++i) qps += mb.engine->qp(i) != nullptr;
    if (mb.engine->setup_channel_open()) bad("an engine that is done still has its setup channel");
  }
  const auto& s = fab_.stats();
  using ull = unsigned long long;
  if (s.qps_alive != qps) bad("after wireup: %llu QPs alive, the results hold %llu", ull(s.qps_alive), ull(qps));
  if (ids != results) bad("after wireup: engines hold %llu ids for %llu results", ull(ids), ull(results));
  if (s.ids_alive != ids) bad("after wireup: %llu ids alive, the engines hold %llu", ull(s.ids_alive), ull(ids));
  if (s.channels_alive != engines)
    bad("after wireup: %llu channels alive for %llu engines (steady only)", ull(s.channels_alive), ull(engines));
  if (s.events_unacked != 0) bad("after wireup: %llu events un-acked", ull(s.events_unacked));
  if (s.mrs_alive != 0) bad("after wireup: %llu MRs alive", ull(s.mrs_alive));
}

void Runner::teardown() {
  for (uint32_t r = 0; r < m_.size(); ++r)
    if (live(r))
      if (Status st = m_[r].engine->close(c_.close_drain); !st) bad("rank %u: close: %s", r, st.message().c_str());
  for (auto& mb : m_) mb.destroy();
  // What the closes sent is delivered to ids that no longer exist: nothing may come back.
  for (int i = 0; i < 1'000'000 && fab_.step(); ++i) {
  }
  const auto& s = fab_.stats();
  auto zero = [&](const char* what, uint64_t v) {
    if (v != 0) bad("after teardown: %s = %llu", what, (unsigned long long)v);
  };
  zero("ids_alive", s.ids_alive);
  zero("qps_alive", s.qps_alive);
  zero("cqs_alive", s.cqs_alive);
  zero("pds_alive", s.pds_alive);
  zero("mrs_alive", s.mrs_alive);
  zero("channels_alive", s.channels_alive);
  zero("events_unacked", s.events_unacked);
  zero("events_pending", s.events_pending);
  zero("destroyed_with_unacked", s.destroyed_with_unacked);
  zero("channels_destroyed_with_ids", s.channels_destroyed_with_ids);
}

RunReport Runner::go() {
  if (Status st = build(); !st) {
    bad("setup: %s", st.message().c_str());
    return rep_;
  }
  if (Status st = drive(); !st) {
    bad("wireup did not end: %s", st.message().c_str());
    return rep_;
  }
  // A crashed rank's process is gone too: its objects with it.
  for (auto& mb : m_)
    if (mb.stopped) mb.destroy();
  // Let what is already in flight land before counting: an engine that gave up at its
  // deadline closed its listener while a peer's CONNECT_REQUEST was on its way, and that
  // request's new id lives until the fabric drops the event (nobody can take it any more).
  const Nanos settle_until = fab_.now() + 5s;
  while (fab_.next_time() <= settle_until) fab_.step();
  rep_.removal_applied = c_.removal && fab_.now() >= c_.removal_at;
  check_pairs();
  check_accounting();
  Digest d;
  for (uint32_t r = 0; r < m_.size(); ++r) {
    if (!m_[r].engine) continue;
    for (const ConnResult& x : m_[r].engine->results()) {
      d.add(x.withdrawn);
      d.add((uint64_t(r) << 40) | (uint64_t(x.peer) << 16) | x.lane);
      d.add((uint64_t(x.local_qpn) << 32) | x.remote_qpn);
      d.add(x.attempts);
    }
    for (const PeerError& x : m_[r].engine->errors())
      d.add((uint64_t(r) << 40) | (uint64_t(x.peer) << 16) | (uint64_t(x.failure.kind) << 8) | x.lane);
  }
  d.add(static_cast<uint64_t>(fab_.now().count()));
  d.add(fab_.stats().messages_sent);
  rep_.digest = d.h;
  if (verbose_) {
    const auto& s = fab_.stats();
    std::printf("  wireup ended at %.6f s virtual: %llu endpoints, %llu errors, %llu retries; fabric: %llu messages "
                "(%llu lost, %llu duplicated, %llu unroutable), %llu REQ retransmits, %llu forced rejects\n",
                rep_.virtual_s, (unsigned long long)rep_.connections, (unsigned long long)rep_.failed,
                (unsigned long long)rep_.retries, (unsigned long long)s.messages_sent,
                (unsigned long long)s.messages_lost, (unsigned long long)s.messages_duplicated,
                (unsigned long long)s.messages_unroutable, (unsigned long long)s.req_retransmits,
                (unsigned long long)s.forced_rejects);
    for (uint32_t r = 0; r < m_.size(); ++r)
      if (m_[r].engine)
        for (const PeerError& x : m_[r].engine->errors()) std::printf("  rank %u: %s\n", r, x.describe().c_str());
  }
  teardown();
  return rep_;
}

}  // namespace

RunReport run(const RunConfig& c, bool verbose) { return Runner(c, verbose).go(); }

}  // namespace wireup::soak
