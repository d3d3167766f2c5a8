// Engine lifecycle, the active side, retries and the progress loop.
// The passive side (requests, strangers) is in engine_passive.cc.
#include "wireup/engine.h"

#include <algorithm>

#include "common/log.h"
#include "wireup/address.h"
#include "wireup/plan.h"

namespace wireup {
namespace {

Error bad_option(const std::string& what) {
  return Error::make(ErrorCode::invalid_argument, "Engine::create", what);
}

}  // namespace

std::string PeerError::describe() const {
  std::string s = "rank " + std::to_string(peer) + " lane " + std::to_string(lane) + " (" +
                  (role == cm::Role::active ? "active" : "passive") + ", " + std::to_string(attempts) +
                  " attempt" + (attempts == 1 ? "" : "s") + "): " + failure.describe();
  if (failure.kind == cm::FailKind::rejected) {
    auto h = decode(failure.private_data);
    if (h && h->kind == WireKind::reject) s += " [peer said: " + std::string(to_string(h->reason)) + "]";
  }
  return s;
}

Engine::Engine(prov::Provider& p, EngineOptions o, qp::QpFactory f)
    : prov_(p), opt_(std::move(o)), profile_(make_profile(opt_)), factory_(std::move(f)),
      rng_(opt_.seed != 0 ? opt_.seed : 0x9e3779b97f4a7c15ULL * (opt_.rank + 1)) {}

Engine::~Engine() {
  // Ids go before their channels (members are destroyed in reverse order, but the slots'
  // connections live in a map declared after the channels, so make the order explicit).
  graveyard_.clear();
  notices_.clear();
  slots_.clear();
  listener_.reset();
}

Result<std::unique_ptr<Engine>> Engine::create(prov::Provider& p, EngineOptions o, qp::QpFactory factory) {
  if (o.nranks == 0) return bad_option("nranks is 0");
  if (o.rank >= o.nranks) return bad_option("rank " + std::to_string(o.rank) + " >= nranks " + std::to_string(o.nranks));
  if (o.lanes == 0 || o.lanes > 65535) return bad_option("lanes " + std::to_string(o.lanes) + " outside [1, 65535]");
  if (o.job_key == 0) return bad_option("job_key is 0: every rank of a job must share one non-zero key");
  if (o.connect_window == 0) return bad_option("connect_window is 0");
  if (o.qp_window == 0) return bad_option("qp_window is 0");
  if (o.max_attempts == 0) return bad_option("max_attempts is 0");
  if (o.backoff_jitter < 0 || o.backoff_jitter > 1) return bad_option("backoff_jitter outside [0, 1]");
  if (o.listen_addr.empty()) return bad_option("listen_addr is not set");
  if (o.listen_addr.family() == AF_INET && o.listen_addr.ipv4_addr() == 0)
    return bad_option("listen_addr 0.0.0.0: peers need a specific address to reach (the device's IP)");
  if (!factory) return bad_option("no QP factory");
  WIREUP_TRY(qp::validate(o.qp));
  std::unique_ptr<Engine> e(new Engine(p, std::move(o), std::move(factory)));
  auto steady = p.create_channel();
  if (!steady) return steady.error();
  e->steady_ = std::move(steady).value();
  auto setup = p.create_channel();
  if (!setup) return setup.error();
  e->setup_ = std::move(setup).value();
  WIREUP_TRY(e->listen());
  return e;
}

Status Engine::listen() {
  auto id = prov_.create_id(*setup_, prov::PortSpace::tcp, nullptr);  // null context = listener
  if (!id) return id.error();
  listener_ = std::move(id).value();
  WIREUP_TRY(listener_->bind_addr(opt_.listen_addr));
  return listener_->listen(opt_.backlog);
}

std::vector<uint8_t> Engine::local_address() const {
  return listener_ ? encode_address(listener_->local_addr()) : std::vector<uint8_t>();
}

Status Engine::set_peers(std::span<const Peer> peers) {
  if (started_) return Error::make(ErrorCode::invalid_state, "Engine::set_peers", "wireup already started");
  std::vector<std::pair<uint32_t, prov::SockAddr>> table;  // sorted below
  table.reserve(peers.size());
  std::vector<bool> listed(opt_.nranks, false);  // in `table` already
  std::string problems;
  auto note = [&](size_t i, uint32_t rank, const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + std::string("entry ") + std::to_string(i) + " (rank " +
                std::to_string(rank) + "): " + what;
  };
  for (size_t i = 0; i < peers.size(); ++i) {
    const Peer& pe = peers[i];
    if (pe.rank >= opt_.nranks) { note(i, pe.rank, "rank >= nranks " + std::to_string(opt_.nranks)); continue; }
    if (listed[pe.rank] || (pe.rank == opt_.rank && i > 0 && problems.find("self") != std::string::npos)) {
      note(i, pe.rank, "rank listed twice");
      continue;
    }
    auto a = decode_address(pe.address);
    if (!a) { note(i, pe.rank, a.error().detail); continue; }
    if (pe.rank == opt_.rank) continue;  // our own entry, as an allgather gives it
    table.emplace_back(pe.rank, *a);
    listed[pe.rank] = true;
  }
  if (!problems.empty())
    return Error::make(ErrorCode::invalid_argument, "Engine::set_peers", "bad peer table: " + problems);
  std::sort(table.begin(), table.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  peers_.assign(std::move(table));
  return Status::ok();
}

Status Engine::start() {
  if (started_) return Error::make(ErrorCode::invalid_state, "Engine::start", "already started");
  const std::vector<uint32_t>& ranks = peers_.ranks();
  std::vector<uint32_t> out = plan::outgoing(opt_.rank, opt_.nranks, ranks);
  std::vector<uint32_t> in = plan::incoming(opt_.rank, opt_.nranks, ranks);
  const size_t n_active = out.size() * opt_.lanes, n_passive = in.size() * opt_.lanes;
  std::vector<uint64_t> keys;
  keys.reserve(n_active + n_passive);
  start_order_.reserve(n_active);
  // Lane-major: every peer's lane 0 before anyone's lane 1 spreads the load.
  for (uint32_t lane = 0; lane < opt_.lanes; ++lane) {
    for (uint32_t p : out) {
      keys.push_back(key(p, lane));
      start_order_.push_back(key(p, lane));
    }
    for (uint32_t p : in) keys.push_back(key(p, lane));
  }
  slots_.build(std::move(keys));
  for (auto& [k, s] : slots_) {
    s.peer = static_cast<uint32_t>(k >> 16);
    s.lane = static_cast<uint16_t>(k & 0xffff);
    s.role = cm::Role::passive;
  }
  for (uint64_t k : start_order_) slots_.at(k).role = cm::Role::active;
  // Sized from the plan: no growth (and no spare capacity) on the per-connection path.
  results_.reserve(slots_.size());
  stats_.reserve(n_active, n_passive);
  open_pairs_ = slots_.size();
  started_ = true;
  deadline_ = now() + opt_.wireup_timeout;
  maybe_end_setup();
  return Status::ok();
}

cm::Profile Engine::make_profile(const EngineOptions& o) {
  cm::Profile pr;
  prov::SockAddr src = o.listen_addr;
  src.set_port(0);
  pr.local = src;
  pr.resolve_addr_timeout_ms = o.resolve_addr_timeout_ms;
  pr.resolve_route_timeout_ms = o.resolve_route_timeout_ms;
  pr.tos = o.tos;
  pr.ack_timeout = o.ack_timeout;
  pr.ece = o.ece;
  pr.qp = o.qp;
  pr.param = o.param;
  return pr;
}

cm::Spec Engine::spec_for(const Slot& s) const {
  cm::Spec spec;
  spec.peer = s.peer;
  spec.lane = s.lane;
  spec.profile = &profile_;
  // The passive side needs it too: a rtu_lost notice goes to the active peer's listener.
  if (auto a = peers_.address(s.peer)) spec.remote = *a;
  WireHeader h;
  h.kind = s.role == cm::Role::active ? WireKind::request : WireKind::accept;
  h.job_key = opt_.job_key;
  h.src_rank = opt_.rank;
  h.dst_rank = s.peer;
  h.lane = s.lane;
  h.attempt = s.attempt;
  static_assert(kWireHeaderSize <= cm::PrivateData::kCapacity);
  (void)spec.private_data.assign(encode(h));  // fits: checked above
  // Not a stranger's reject: it carries the pair, so the peer's PeerError names the reason.
  h.kind = WireKind::reject;
  h.reason = RejectCode::local_failure;
  (void)spec.reject_data.assign(encode(h));
  return spec;
}

Nanos Engine::backoff(uint32_t attempt) {
  double base = static_cast<double>(opt_.backoff_initial.count());
  for (uint32_t i = 1; i < attempt && base < static_cast<double>(opt_.backoff_max.count()); ++i) base *= 2;
  base = std::min(base, static_cast<double>(opt_.backoff_max.count()));
  std::uniform_real_distribution<double> u(-opt_.backoff_jitter, opt_.backoff_jitter);
  return Nanos(static_cast<int64_t>(base * (1.0 + u(rng_))));
}

bool Engine::retryable(const cm::Failure& f) const {
  using cm::FailKind;
  switch (f.kind) {
    case FailKind::unreachable:
    case FailKind::address_error:
    case FailKind::route_error:
    case FailKind::connect_error:
      return true;
    case FailKind::rejected: {
      if (f.status == prov::reject_reason::no_listener) return true;  // peer not listening yet
      if (f.status != prov::reject_reason::consumer) return false;    // 35 (ECE) and others
      auto h = decode(f.private_data);
      if (!h || h->kind != WireKind::reject) return true;  // not our reject: a transient refusal
      return h->reason == RejectCode::local_failure || h->reason == RejectCode::stale_attempt;
    }
    default:
      return false;
  }
}

int Engine::start_connects() {
  int work = 0;
  const Nanos t = now();
  while (in_flight_ < opt_.connect_window) {
    uint64_t k;
    if (!retry_at_.empty() && retry_at_.begin()->first <= t) {
      k = retry_at_.begin()->second;
      retry_at_.erase(retry_at_.begin());
    } else if (next_start_ < start_order_.size()) {
      k = start_order_[next_start_++];
    } else {
      break;
    }
    Slot& s = slots_.at(k);
    if (s.state != SlotState::waiting) continue;
    ++s.attempt;
    ++stats_.connects_started;
    if (s.first_start == cm::kUnset) s.first_start = t;
    auto c = cm::Connection::start(prov_, *setup_, spec_for(s));
    ++work;
    s.state = SlotState::in_flight;
    ++in_flight_;
    if (!c) {
      // No connection object: record the failure against a placeholder-free slot.
      --in_flight_;
      s.state = SlotState::waiting;
      cm::Failure f{cm::FailKind::local_error, 0, {}, c.error()};
      fail_slot(s, f);
      continue;
    }
    s.conn = std::move(c).value();
    s.conn->owner = &s;
  }
  return work;
}

int Engine::grant_qps() {
  int work = 0;
  // Passive first: accepting is what lets the peers' connects (and so their windows) finish.
  for (cm::Role role : {cm::Role::passive, cm::Role::active}) {
    auto& q = qp_waiters_[static_cast<int>(role)];
    uint32_t& in_flight = qps_in_flight_[static_cast<int>(role)];
    while (in_flight < opt_.qp_window && !q.empty()) {
      uint64_t k = q.front();
      q.pop_front();
      auto it = slots_.find(k);
      if (it == slots_.end()) continue;
      Slot& s = it->second;
      if (s.state != SlotState::in_flight || !s.conn || s.qp_counted) continue;
      cm::Connection& c = *s.conn;
      if (c.state() != cm::State::route_resolved && c.state() != cm::State::requested) continue;
      ++in_flight;
      s.qp_counted = true;
      Status st = role == cm::Role::active ? c.connect(factory_) : c.accept(factory_);
      if (!st) WIREUP_LOG(debug, "rank %u lane %u: %s", s.peer, s.lane, st.message().c_str());
      after_event(s);
      ++work;
    }
  }
  return work;
}

bool Engine::qp_ready() const {
  for (int r = 0; r < 2; ++r)
    if (!qp_waiters_[r].empty() && qps_in_flight_[r] < opt_.qp_window) return true;
  return false;
}

void Engine::after_event(Slot& s) {
  if (!s.conn) return;
  cm::Connection& c = *s.conn;
  switch (c.state()) {
    case cm::State::route_resolved:
    case cm::State::requested:
      if (!s.qp_counted) qp_waiters_[static_cast<int>(s.role)].push_back(key(s.peer, s.lane));
      return;
    case cm::State::established:
      if (s.state != SlotState::established) finish_slot(s);
      return;
    case cm::State::failed:
      settle_failure(s);
      return;
    default:
      return;
  }
}

void Engine::release_windows(Slot& s) {
  if (s.role == cm::Role::active && s.state == SlotState::in_flight) --in_flight_;
  if (s.qp_counted) {
    --qps_in_flight_[static_cast<int>(s.role)];
    s.qp_counted = false;
  }
}

void Engine::finish_slot(Slot& s) {
  cm::Connection& c = *s.conn;
  release_windows(s);
  // Every event of the id was acked before we got here: the migration cannot block.
  if (Status m = c.migrate(*steady_); !m) {
    cm::Failure f{cm::FailKind::local_error, 0, {}, m.error()};
    graveyard_.push_back(std::move(s.conn));
    s.state = SlotState::waiting;
    fail_slot(s, f);
    return;
  }
  s.state = SlotState::established;
  --open_pairs_;
  if (s.role == cm::Role::active) {
    ++stats_.established_active;
    last_active_established_ = now();
  } else {
    ++stats_.established_passive;
  }
  stats_.record(c, s.first_start);
  ConnResult r;
  r.peer = s.peer;
  r.lane = s.lane;
  r.role = s.role;
  r.qp = c.qp();
  r.local_qpn = c.qp() ? c.qp()->qpn() : 0;
  r.remote_qpn = c.remote_qpn();
  r.ece = c.ece();
  if (c.qp()) r.device = c.qp()->device().info().name.c_str();
  r.timings = c.timings();
  r.attempts = s.attempt;
  s.result = static_cast<uint32_t>(results_.size());
  results_.push_back(std::move(r));
  passive_failures_.erase(key(s.peer, s.lane));
  // Keep only what an established connection needs; the state machine goes.
  s.qp = c.take_qp();
  s.id = c.take_id();
  s.id->user_context = &s;
  graveyard_.push_back(std::move(s.conn));
}

void Engine::settle_failure(Slot& s) {
  cm::Failure f = s.conn->failure();
  release_windows(s);
  graveyard_.push_back(std::move(s.conn));
  s.state = SlotState::waiting;
  fail_slot(s, f);
}

void Engine::fail_slot(Slot& s, const cm::Failure& f) {
  stats_.failures[cm::to_string(f.kind)]++;
  if (f.kind == cm::FailKind::rejected) stats_.rejects_received[f.status]++;
  if (s.role == cm::Role::passive) {
    // The peer drives retries of its own pairs; stay ready for its next attempt and report
    // this failure only if nothing better arrives before the deadline.
    passive_failures_[key(s.peer, s.lane)] = f;
    // UNREACHABLE on the passive side means our REP retries ran out: either every REP was
    // lost (the peer will retry with a newer attempt) or every RTU was (the peer is
    // established and would never retry). Only the peer knows which: ask it.
    if (f.kind == cm::FailKind::unreachable) start_notice(s);
    return;
  }
  if (retryable(f) && s.attempt < opt_.max_attempts) {
    ++stats_.retries;
    retry_at_.emplace(now() + backoff(s.attempt), key(s.peer, s.lane));
    WIREUP_LOG(info, "rank %u lane %u attempt %u: %s; retrying", s.peer, s.lane, s.attempt, f.describe().c_str());
    return;
  }
  give_up(s, f);
}

void Engine::give_up(Slot& s, const cm::Failure& f) {
  s.state = SlotState::failed;
  --open_pairs_;
  ++stats_.failed;
  PeerError e{s.peer, s.lane, s.role, s.attempt, f};
  WIREUP_LOG(warn, "wireup: %s", e.describe().c_str());
  errors_.push_back(std::move(e));
}

void Engine::expire() {
  // A notice still in flight has nobody left to act on its answer.
  for (auto& [k, n] : notices_)
    if (n.conn) graveyard_.push_back(std::move(n.conn));
  notices_.clear();
  for (auto& [k, s] : slots_) {
    if (s.state == SlotState::established || s.state == SlotState::failed) continue;
    cm::Failure f;
    if (auto pf = passive_failures_.find(k); pf != passive_failures_.end()) f = pf->second;
    if (s.conn) {
      release_windows(s);
      graveyard_.push_back(std::move(s.conn));
    }
    if (f.kind == cm::FailKind::none || s.role == cm::Role::active) {
      f = cm::Failure{};
      f.kind = cm::FailKind::timed_out;
      f.error = Error::make(ErrorCode::timed_out, "wireup",
                            s.role == cm::Role::active ? "no connection before the wireup timeout"
                                                       : "the peer never connected before the wireup timeout");
      f.error.peer = "rank " + std::to_string(s.peer);
    }
    stats_.failures[cm::to_string(cm::FailKind::timed_out)]++;
    give_up(s, f);
  }
  retry_at_.clear();
  for (auto& q : qp_waiters_) q.clear();
}

Nanos Engine::linger_until() const {
  if (last_active_established_ == cm::kUnset || opt_.rtu_linger <= Nanos{0}) return Nanos{0};
  return last_active_established_ + opt_.rtu_linger;
}

void Engine::maybe_end_setup() {
  if (!started_ || open_pairs_ != 0 || !setup_) return;
  // Every pair is settled, but a passive peer may still be re-sending the REP of a
  // connection we initiated and will ask about it when its retries run out (rtu_linger).
  if (now() < linger_until()) return;
  // Nobody needs our listener any more; turn away what is still queued, then close.
  listener_.reset();
  drain_setup();
  graveyard_.clear();
  setup_.reset();
  // What only connecting needed: established pairs never look at it again.
  peers_.release_addresses();
  std::vector<uint64_t>().swap(start_order_);
  next_start_ = 0;
  for (auto& q : qp_waiters_) q.release();
  std::vector<std::unique_ptr<cm::Connection>>().swap(graveyard_);
  WIREUP_LOG(info, "rank %u: wireup done, setup channel closed", opt_.rank);
}

Result<int> Engine::progress() {
  if (!started_) return Error::make(ErrorCode::invalid_state, "Engine::progress", "start() not called");
  int work = 0;
  if (open_pairs_ > 0 && now() >= deadline_) {
    expire();
    ++work;
  }
  if (setup_) work += drain_setup();
  work += drain_steady();
  if (setup_) {
    work += start_connects();
    work += grant_qps();
    work += start_notices();
  }
  graveyard_.clear();  // every event of these ids was acked in the drains above
  maybe_end_setup();
  return work;
}

Status Engine::wait(Nanos timeout) {
  Nanos t = now();
  Nanos until = t + timeout;
  if (open_pairs_ > 0) until = std::min(until, deadline_);
  if (!retry_at_.empty() && in_flight_ < opt_.connect_window) until = std::min(until, retry_at_.begin()->first);
  for (auto& [k, n] : notices_)
    if (n.due != cm::kUnset) until = std::min(until, n.due);
  if (open_pairs_ == 0 && setup_) until = std::min(until, linger_until());
  if (qp_ready()) until = t;
  if (until <= t) return Status::ok();
  std::vector<prov::EventChannel*> chans;
  if (setup_) chans.push_back(setup_.get());
  chans.push_back(steady_.get());
  return prov_.wait(chans, until - t);
}

std::vector<int> Engine::fds() const {
  std::vector<int> v;
  if (setup_ && setup_->fd() >= 0) v.push_back(setup_->fd());
  if (steady_->fd() >= 0) v.push_back(steady_->fd());
  return v;
}

Nanos Engine::next_wakeup() const {
  if (!started_) return Nanos::max();
  const Nanos t = now();
  if (open_pairs_ == 0) return setup_ ? std::max(t, linger_until()) : Nanos::max();
  const bool room = in_flight_ < opt_.connect_window;
  if (room && next_start_ < start_order_.size()) return t;
  if (qp_ready()) return t;
  Nanos w = deadline_;
  if (room && !retry_at_.empty()) w = std::min(w, std::max(t, retry_at_.begin()->first));
  for (auto& [k, n] : notices_)
    if (n.due != cm::kUnset) w = std::min(w, std::max(t, n.due));
  return w;
}

std::vector<prov::EventChannel*> Engine::channels() const {
  std::vector<prov::EventChannel*> v;
  if (setup_) v.push_back(setup_.get());
  v.push_back(steady_.get());
  return v;
}

std::unique_ptr<prov::Qp> Engine::take_qp(uint32_t peer, uint32_t lane) {
  auto it = slots_.find(key(peer, lane));
  if (it == slots_.end() || it->second.state != SlotState::established) return nullptr;
  if (it->second.result < results_.size()) results_[it->second.result].qp = nullptr;
  return std::move(it->second.qp);
}

size_t Engine::live_ids() const {
  size_t n = listener_ ? 1 : 0;
  for (auto& [k, s] : slots_)
    if ((s.conn && s.conn->id()) || s.id) ++n;
  for (auto& [k, x] : notices_)
    if (x.conn && x.conn->id()) ++n;
  return n + graveyard_.size();
}

}  // namespace wireup
