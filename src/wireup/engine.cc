// Engine lifecycle: creation, the peer table, start, the progress loop and its timers, event
// dispatch, the end of the setup channel, teardown.
// The active side is in engine_active.cc, the passive side and the steady channel in
// engine_passive.cc, the notices in engine_notices.cc (both kinds), engine_abandon.cc and
// engine_repair.cc (the RTU repair), the checks of the options and the connection profile in
// engine_checks.cc, the listeners and the published address beside the rails in
// engine_rails.cc.
#include "wireup/engine.h"

#include <algorithm>

#include "common/log.h"
#include "wireup/address.h"
#include "wireup/rail_address.h"
#include "wireup/engine_checks.h"
#include "wireup/plan.h"

namespace wireup {

Engine::Engine(prov::Provider& p, Fixed f)
    : prov_(p), fixed_(std::move(f)),
      admission_(fixed_.opt.connect_window, fixed_.opt.qp_window, static_cast<uint32_t>(fixed_.profiles.size())),
      retries_(RetryPolicy{fixed_.opt.max_attempts, fixed_.opt.backoff_initial, fixed_.opt.backoff_max,
                           fixed_.opt.backoff_jitter},
               fixed_.opt.seed != 0 ? fixed_.opt.seed : 0x9e3779b97f4a7c15ULL * (fixed_.opt.rank + 1)),
      od_(fixed_.opt.wireup_timeout) {
  stats_.attach(&records_.results());  // the phase samples are cut from the results
  stats_.attach(&admission_);          // the windows' peaks, per rail
}

Engine::~Engine() { teardown(); }

void Engine::teardown() {
  // Ids before their channels: connections (QP, then id) and established ids first, then
  // the listener, then the setup channel (anything still queued on it is dropped unread).
  removed_.clear();
  if (channels_.setup) channels_.setup->graveyard.clear();
  notices_.clear();
  pairs_.clear();
  if (channels_.setup) {
    channels_.setup->listeners.clear();
    while (channels_.setup->channel->get_event()) {
    }
    channels_.setup.reset();
  }
}

Result<std::unique_ptr<Engine>> Engine::create(prov::Provider& p, EngineOptions o, qp::QpFactory factory) {
  WIREUP_TRY(check_options(o, factory));
  auto profile = make_profile(o);
  if (!profile) return profile.error();
  // One profile per rail: the same but for the source address the rail's connects resolve from.
  std::vector<cm::Profile> profiles{*profile};
  for (size_t r = 1; r < o.rails.size(); ++r) {
    prov::SockAddr src = o.rails[r].addr;
    src.set_port(0);
    profiles.push_back(*profile);
    profiles.back().local = src;
  }
  std::vector<LocalRail> rails;
  for (const RailAddress& r : o.rails) rails.push_back(LocalRail{r, RailState::up});
  if (rails.empty()) rails.push_back(LocalRail{RailAddress{o.listen_addr, 0}, RailState::up});
  RailRoutes routes(std::move(rails), o.route_check);
  auto wire = Wire::create(o.job_key, o.rank, random_nonce_base());
  if (!wire) return wire.error();
  // Pacing follows the bulk plan's incoming load; on demand nobody knows it ahead.
  const incast::Pacing pacing = o.on_demand ? incast::Pacing{} : incast::effective(o.incast, o.backlog);
  std::unique_ptr<Engine> e(
      new Engine(p, Fixed{std::move(o), std::move(profiles), *wire, std::move(factory), pacing}));
  e->rails_ = std::move(routes);
  auto steady = p.create_channel();
  if (!steady) return steady.error();
  e->channels_.steady = std::move(steady).value();
  auto setup = p.create_channel();
  if (!setup) return setup.error();
  e->channels_.setup = std::make_unique<Setup>();
  e->channels_.setup->channel = std::move(setup).value();
  WIREUP_TRY(e->listen());
  return e;
}

Status Engine::set_job_key(uint64_t job_key) {
  if (life_.started) return Error::make(ErrorCode::invalid_state, "Engine::set_job_key", "wireup already started");
  if (job_key == 0) return Error::make(ErrorCode::invalid_argument, "Engine::set_job_key", "job_key is 0");
  auto wire = Wire::create(job_key, opt().rank, random_nonce_base());
  if (!wire) return wire.error();
  fixed_.wire = *wire;
  fixed_.opt.job_key = job_key;
  return Status::ok();
}

Status Engine::set_peers(std::span<const Peer> peers) {
  if (life_.started) return Error::make(ErrorCode::invalid_state, "Engine::set_peers", "wireup already started");
  const uint32_t nranks = opt().nranks;
  std::vector<std::pair<uint32_t, prov::SockAddr>> table;  // sorted below
  table.reserve(peers.size());
  std::vector<bool> listed(nranks, false);  // in `table`, or our own entry, already
  std::vector<std::pair<uint32_t, std::vector<RailAddress>>> decoded;  // every rail of each peer
  std::string problems;
  auto note = [&](size_t i, uint32_t rank, const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + std::string("entry ") + std::to_string(i) + " (rank " +
                std::to_string(rank) + "): " + what;
  };
  for (size_t i = 0; i < peers.size(); ++i) {
    const Peer& pe = peers[i];
    if (pe.rank >= nranks) {
      note(i, pe.rank, "rank >= nranks " + std::to_string(nranks));
      continue;
    }
    if (listed[pe.rank]) {
      note(i, pe.rank, "rank listed twice");
      continue;
    }
    auto a = decode_rails(pe.address);
    if (!a) {
      note(i, pe.rank, a.error().detail);
      continue;
    }
    listed[pe.rank] = true;
    if (pe.rank == opt().rank) continue;  // our own entry, as an allgather gives it
    table.emplace_back(pe.rank, a->front().addr);
    decoded.emplace_back(pe.rank, std::move(a).value());
  }
  if (!problems.empty())
    return Error::make(ErrorCode::invalid_argument, "Engine::set_peers", "bad peer table: " + problems);
  rails_.release();
  for (const auto& [rank, rails] : decoded) pair_rails(rank, rails);
  std::sort(table.begin(), table.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  peers_.assign(std::move(table));
  return Status::ok();
}

Status Engine::start() {
  if (life_.started) return Error::make(ErrorCode::invalid_state, "Engine::start", "already started");
  const EngineOptions& o = opt();
  if (o.on_demand) {
    life_.started = true;
    life_.started_at = life_.progressed_at = now();
    life_.deadline = Nanos::max();  // each ask has its own (engine_on_demand.cc)
    return start_on_demand();
  }
  const std::vector<uint32_t>& ranks = peers_.ranks();
  std::vector<uint32_t> out = plan::outgoing(o.rank, o.nranks, ranks);
  std::vector<uint32_t> in = plan::incoming(o.rank, o.nranks, ranks);
  std::vector<uint64_t> active, passive;
  active.reserve(out.size() * o.lanes);
  passive.reserve(in.size() * o.lanes);
  // Lane-major: every peer's lane 0 before anyone's lane 1 spreads the load.
  for (uint32_t lane = 0; lane < o.lanes; ++lane) {
    for (uint32_t p : out) active.push_back(pair_key(p, lane));
    for (uint32_t p : in) passive.push_back(pair_key(p, lane));
  }
  pairs_.build(active, passive);
  // Each rail starts its own lanes, in the same order (one rail: one queue, as built).
  if (admission_.rails() > 1) pairs_.split_start_order(admission_.rails(), [&](const Pair& p) { return rail_for(p); });
  give_up_unpaired();
  // Sized from the plan: no growth (and no spare capacity) on the per-connection path.
  records_.reserve(pairs_.size());
  life_.started = true;
  life_.started_at = life_.progressed_at = now();
  life_.deadline = life_.started_at + o.wireup_timeout;
  maybe_end_setup();
  return Status::ok();
}

// --- dispatch --------------------------------------------------------------------------------

void Engine::on_cm_event(prov::CmEvent& ev) {
  if (ev.type == prov::CmEventType::connect_request) return handle_request(ev);
  if (is_listener_tag(ev.id->route().tag)) return on_listener_event(ev);
  answer_steady(ev);
}

void Engine::on_connection_changed(cm::Connection& c) {
  // Only a connection the engine still holds reports here (retire() detaches the others),
  // and a pair holds at most one: either its connect or its notice (rtu_lost or abandon).
  Pair* p = pairs_.at(c.tag());
  if (p == nullptr) return;
  if (auto* cs = p->as<Connecting>(); cs && cs->conn.get() == &c) return after_event(*p);
  if (notices_.holds(c.tag(), c)) return notice_changed(*p);
  WIREUP_LOG(error, "rank %u: event of a connection to rank %u lane %u that the pair (%s) does not hold", opt().rank,
             c.peer(), c.lane(), to_string(p->state()));
}

Status Engine::check_reply(const cm::Connection& c, std::span<const uint8_t> private_data) {
  const Pair* p = pairs_.at(c.tag());
  if (p == nullptr) return Error::make(ErrorCode::invalid_state, "check_reply", "a connection of no pair");
  return wireup::check_reply(gate(), private_data, p->peer, p->lane, p->attempt, nonce_of(c.sent()));
}

cm::PrivateData Engine::reject_data(const cm::Connection& c) {
  // Not a stranger's reject: it carries the pair, so the peer's PeerError names the reason,
  // sealed as the answer to (or about) the request this connection carries.
  cm::PrivateData pd;
  const Pair* p = pairs_.at(c.tag());
  if (p != nullptr)
    (void)pd.assign(fixed_.wire.reject(RejectCode::local_failure, p->peer, p->lane, p->attempt, nonce_of(c.sent())));
  return pd;
}

GateContext Engine::gate() const {
  const EngineOptions& o = opt();
  return GateContext{&fixed_.wire, o.rank, o.nranks, o.lanes, &peers_, life_.started, accepting(), o.on_demand};
}

cm::Failure Engine::failure_of(const cm::Connection& c) const {
  cm::Failure f = c.failure();
  if (f.kind != cm::FailKind::rejected) return f;
  const auto claimed = decode(f.private_data);
  if (!claimed) return f;  // not wireup's private data at all: no reason to take or drop
  if (auto h = fixed_.wire.open_answer(f.private_data, nonce_of(c.sent())); !h) {
    f.error.detail +=
        std::string(" (its reason \"") + to_string(claimed->reason) + "\" not taken: " + h.error().detail + ")";
    f.private_data.clear();
  }
  return f;
}

void Engine::retire(std::unique_ptr<cm::Connection> c) {
  if (!c) return;
  c->detach();
  if (channels_.setup) channels_.setup->graveyard.push_back(std::move(c));
  // (without a setup channel no connection can exist: its id lived there)
}

// --- progress and timers ---------------------------------------------------------------------

Result<int> Engine::progress() {
  if (!life_.started) return Error::make(ErrorCode::invalid_state, "Engine::progress", "start() not called");
  int work = 0;
  // The one clock reading of this call for what is decided by time (deadlines, retries due,
  // pacing, the device's poll interval, next_wakeup() of the C API's poller): the connections'
  // phase stamps still read the clock where each step happens.
  const Nanos t = now();
  life_.progressed_at = t;
  if (opt().on_demand) {
    work += expire_due(t);
  } else if (pairs_.open() > 0 && t >= life_.deadline) {
    expire();
    ++work;
  }
  // First: a COMM_EST answered now lets this very call see the ESTABLISHED it brings.
  work += watch_.dispatch(t);
  if (channels_.setup) {
    // Bounded per call so a connection storm cannot starve the steady channel or the caller.
    const int n = prov::dispatch(*channels_.setup->channel, 256);
    stats_[Counter::events] += static_cast<uint64_t>(n);
    work += n;
    // Its DEVICE_REMOVAL was acked by the loop above: the listener can go now.
    for (uint32_t r : channels_.setup->listeners_removed) channels_.setup->listeners[r].reset();
    channels_.setup->listeners_removed.clear();
  }
  // The steady channel only gets an event when an established lane goes (DISCONNECTED,
  // DEVICE_REMOVAL, ADDR_CHANGE): while wiring up it is read when worth it (a wait saw it
  // readable, or every EventChannel::kPollInterval), not at every call; after, always.
  if (!channels_.setup || (channels_.steady && channels_.steady->worth_reading(t))) work += drain_steady();
  bury_removed();
  if (channels_.setup) {
    work += start_connects(t);
    if (admission_.qp_grant_ready()) work += grant_qps();
    work += start_due_notices();
    // Last: what the loops above answered or retired frees the line for the next notice.
    work += send_queued_notices();
    channels_.setup->graveyard.clear();  // every event of these ids was acked in the loops above
  }
  maybe_end_setup();
  work += deliver_downs();
  // Last: the transport's lane callback may call connect() or disconnect().
  work += records_.deliver_lanes();
  return work;
}

Nanos Engine::next_wakeup(const Nanos t) const {
  if (!life_.started) return Nanos::max();
  if (!downs_due_.empty()) return t;  // a peer-down declared outside progress() awaits delivery
  const Nanos abandon_due = notices_.next_due(Notices::Kind::abandon);
  if (pairs_.open() == 0) {
    if (!channels_.setup) return Nanos::max();
    if (opt().on_demand) return abandon_due == Nanos::max() ? abandon_due : std::max(t, abandon_due);
    return std::max(t, std::min(std::max(linger_until(), notices_.abandon_until()), abandon_due));
  }
  if (admission_.qp_grant_ready() || admission_.connect_ready()) return t;
  Nanos w = opt().on_demand ? od_.next_deadline() : life_.deadline;
  bool room = false;  // on some rail: a retry due may be for it
  for (uint32_t rail = 0; rail < admission_.rails(); ++rail) {
    if (!admission_.connect_room(rail)) continue;
    room = true;
    if (!pairs_.all_started(rail)) w = std::min(w, first_connect_due(rail));
  }
  if (room) w = std::min(w, retries_.next_due());
  w = std::min(w, notices_.next_due(Notices::Kind::rtu_lost));
  w = std::min(w, abandon_due);
  return std::max(t, w);
}

Status Engine::wait(Nanos timeout) {
  const Nanos t = now();
  const Nanos until = std::min(t + timeout, next_wakeup(t));
  if (until <= t) return Status::ok();
  auto ch = channels();
  auto dev = devices();
  return prov_.wait(ch, dev, until - t);
}

Nanos Engine::linger_until() const {
  if (life_.last_active_established == cm::kUnset || opt().rtu_linger <= Nanos{0}) return Nanos{0};
  return life_.last_active_established + opt().rtu_linger;
}

void Engine::maybe_end_setup() {
  // On demand the listener is there for whoever asks next, until close().
  if (!life_.started || pairs_.open() != 0 || !channels_.setup || opt().on_demand) return;
  // Every pair is settled, so no pair waits for a QP place and every one was started: give
  // back the queues' storage now rather than at the end of the linger (a repair meanwhile
  // grows the waiters again; the start order is bulk's, consumed once).
  admission_.drop_waiters();
  pairs_.release_start_order();
  // Every pair is settled, but a passive peer may still be re-sending the REP of a
  // connection we initiated and will ask about it when its retries run out (rtu_linger).
  // An abandon notice still on its way tells a passive peer not to wait for us: give it time.
  // Neither can happen without a device.
  if (!watch_.lost()) {
    const Nanos t = now();
    if (t < linger_until() || notices_.abandoning(t)) return;
  }
  // Nobody needs our listener any more: turn away what is still queued, then close.
  Setup& s = *channels_.setup;
  s.closing = true;
  stats_[Counter::events] += static_cast<uint64_t>(prov::dispatch(*s.channel, 1 << 20));
  s.graveyard.clear();
  channels_.setup.reset();
  // What only connecting needed: established pairs never look at it again.
  peers_.release_addresses();
  rails_.release();
  pairs_.release_start_order();
  admission_.drop_waiters();
  notices_.close_lines();
  WIREUP_LOG(info, "rank %u: wireup done, setup channel closed", opt().rank);
}

std::vector<int> Engine::fds() const {
  std::vector<int> v;
  for (prov::EventChannel* c : channels())
    if (c->fd() >= 0) v.push_back(c->fd());
  for (prov::Device* d : devices())
    if (d->async_fd() >= 0) v.push_back(d->async_fd());
  return v;
}

std::vector<prov::Device*> Engine::devices() const { return watch_.devices(); }

std::vector<prov::EventChannel*> Engine::channels() const {
  std::vector<prov::EventChannel*> v;
  if (channels_.setup) v.push_back(channels_.setup->channel.get());
  if (channels_.steady) v.push_back(channels_.steady.get());
  return v;
}

std::unique_ptr<prov::Qp> Engine::take_qp(uint32_t peer, uint32_t lane) {
  Pair* p = pairs_.find(peer, lane);
  auto* e = p ? p->as<Established>() : nullptr;
  if (e == nullptr || !e->qp) return nullptr;
  return std::move(e->qp);
}

prov::Qp* Engine::qp(uint32_t result) const {
  const std::vector<ConnResult>& rs = records_.results();
  if (result >= rs.size() || rs[result].withdrawn) return nullptr;
  const Pair* p = pairs_.find(rs[result].peer, rs[result].lane);
  const Established* e = p ? p->as<Established>() : nullptr;
  return e != nullptr && e->result == result ? e->qp.get() : nullptr;
}

size_t Engine::live_ids() const {
  size_t n = 0;
  if (const Setup* s = channels_.setup.get()) {
    n += s->graveyard.size();
    for (const auto& l : s->listeners) n += l ? 1 : 0;
  }
  for (const Pair& p : pairs_) {
    if (auto* c = p.as<Connecting>(); c && c->conn && c->conn->id()) ++n;
    if (auto* e = p.as<Established>(); e && e->id) ++n;
  }
  return n + notices_.live_ids();
}

}  // namespace wireup
