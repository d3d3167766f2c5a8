// The engine's event loops: the setup channel (requests, strangers, connection events) and
// the steady channel (what happens to established connections), and teardown.
#include "common/log.h"
#include "wireup/engine.h"
#include "wireup/plan.h"

namespace wireup {

using prov::CmEventType;

int Engine::drain_setup() {
  int work = 0;
  // Bounded per call so a connection storm cannot starve the steady channel or the caller.
  for (int i = 0; i < 256 && setup_; ++i) {
    auto ev = setup_->get_event();
    if (!ev) {
      if (ev.code() != ErrorCode::would_block)
        WIREUP_LOG(error, "rank %u: setup channel: %s", opt_.rank, ev.error().message().c_str());
      break;
    }
    ++work;
    ++stats_.events;
    if (ev->type == CmEventType::connect_request) {
      handle_request(*ev);
      continue;  // acked (and a refused id destroyed) when ev goes out of scope
    }
    auto* conn = static_cast<cm::Connection*>(ev->id ? ev->id->user_context : nullptr);
    if (conn == nullptr) {
      WIREUP_LOG(warn, "rank %u: listener event %s", opt_.rank, ev->describe().c_str());
      continue;
    }
    conn->on_event(*ev);
    ev->ack();  // before after_event: it may migrate or destroy the id
    auto* slot = static_cast<Slot*>(conn->owner);
    if (slot == nullptr) continue;
    if (slot->conn.get() == conn) {
      after_event(*slot);
    } else if (auto n = notices_.find(key(slot->peer, slot->lane)); n != notices_.end() && n->second.conn.get() == conn) {
      after_notice(*slot);
    }
  }
  return work;
}

void Engine::reject_stranger(prov::CmEvent& ev, RejectCode code, const std::string& why,
                             const std::string& source) {
  const bool identity = code != RejectCode::stale_attempt && code != RejectCode::duplicate &&
                        code != RejectCode::shutting_down;
  if (identity) ++stats_.strangers;
  stats_.rejects_sent[to_string(code)]++;
  // Once per source address (not per port: every request comes from a new id and port), so
  // that a flood from one host cannot flood the log too; the counters keep the full tally.
  if (stranger_sources_logged_.insert(source.substr(0, source.rfind(':'))).second)
    WIREUP_LOG(warn, "rank %u: rejected request from %s: %s (%s)", opt_.rank, source.c_str(), to_string(code),
               why.c_str());
  WireHeader h;
  h.kind = WireKind::reject;
  h.reason = code;
  h.src_rank = opt_.rank;
  auto bytes = encode(h);  // no job key in it: a stranger learns nothing
  if (Status s = ev.id->reject(bytes); !s)
    WIREUP_LOG(warn, "rank %u: %s", opt_.rank, s.message().c_str());
}

void Engine::handle_request(prov::CmEvent& ev) {
  // Everything below decides from the private data alone: no QP, no memory, no state is
  // allocated for a request until it is known to come from a planned peer of this job.
  const std::string source = ev.id->peer_addr().to_string();  // reject_stranger drops the port
  auto h = decode(ev.private_data);
  if (!h) {
    bool version = ev.private_data.size() > 4 && h.error().detail.rfind("version", 0) == 0;
    return reject_stranger(ev, version ? RejectCode::bad_version : RejectCode::bad_magic, h.error().detail, source);
  }
  if (h->kind != WireKind::request && h->kind != WireKind::rtu_lost)
    return reject_stranger(ev, RejectCode::bad_magic, "not a request", source);
  if (h->job_key != opt_.job_key) return reject_stranger(ev, RejectCode::wrong_job_key, "job key mismatch", source);
  if (h->dst_rank != opt_.rank)
    return reject_stranger(ev, RejectCode::wrong_destination, "for rank " + std::to_string(h->dst_rank), source);
  if (h->src_rank >= opt_.nranks || !peers_.count(h->src_rank))
    return reject_stranger(ev, RejectCode::unknown_rank, "rank " + std::to_string(h->src_rank), source);
  if (h->lane >= opt_.lanes)
    return reject_stranger(ev, RejectCode::bad_lane, "lane " + std::to_string(h->lane), source);
  // A rtu_lost notice comes from the passive side of a pair we initiate: the rule reverses.
  const bool notice = h->kind == WireKind::rtu_lost;
  if (notice ? !plan::initiates(opt_.rank, h->src_rank, opt_.nranks)
             : !plan::initiates(h->src_rank, opt_.rank, opt_.nranks))
    return reject_stranger(ev, RejectCode::wrong_role,
                           (notice ? "rank " + std::to_string(h->src_rank) + " initiates to us"
                                   : "we initiate to rank " + std::to_string(h->src_rank)),
                           source);
  if (!started_ || !setup_)
    return reject_stranger(ev, RejectCode::shutting_down, "not wiring up", source);
  if (notice) return handle_rtu_lost(ev, *h);

  Slot& s = slots_.at(key(h->src_rank, h->lane));
  if (h->attempt == 0 || h->attempt <= s.attempt)
    return reject_stranger(ev, RejectCode::stale_attempt,
                           "attempt " + std::to_string(h->attempt) + " after " + std::to_string(s.attempt), source);
  if (s.state == SlotState::established)
    return reject_stranger(ev, RejectCode::duplicate, "lane already connected", source);
  if (s.state == SlotState::failed) return reject_stranger(ev, RejectCode::shutting_down, "pair given up", source);
  drop_notice(key(h->src_rank, h->lane));  // the peer is retrying: our question is answered
  if (s.conn) {
    // A newer attempt supersedes our half-open one: the peer has given up on it.
    ++stats_.superseded;
    release_windows(s);
    graveyard_.push_back(std::move(s.conn));
    s.state = SlotState::waiting;
  }
  s.attempt = h->attempt;
  if (s.first_start == cm::kUnset) s.first_start = now();
  s.conn = cm::Connection::from_request(prov_, ev, spec_for(s));
  s.conn->owner = &s;
  s.state = SlotState::in_flight;
  after_event(s);  // queues it for a QP; grant_qps() accepts within the QP window
}

void Engine::answer_steady(prov::CmEvent& ev) {
  // Only established ids live on the steady channel; their context is their slot.
  auto* s = static_cast<Slot*>(ev.id ? ev.id->user_context : nullptr);
  if (s == nullptr) return;
  if (ev.type == CmEventType::disconnected && !s->disconnected) {
    s->disconnected = true;
    ++stats_.disconnects;
    // Answer the DREQ so the peer's DISCONNECTED does not wait for its DREQ timeout.
    (void)s->id->disconnect();
  }
  if (steady_cb_) steady_cb_(SteadyEvent{s->peer, s->lane, ev.type, ev.status});
}

int Engine::drain_steady() {
  int work = 0;
  for (int i = 0; i < 256; ++i) {
    auto ev = steady_->get_event();
    if (!ev) break;
    ++work;
    ++stats_.events;
    answer_steady(*ev);
  }
  return work;
}

Status Engine::close(Nanos drain) {
  size_t waiting = 0;
  for (auto& [k, s] : slots_) {
    if (s.state != SlotState::established || !s.id || s.disconnected) continue;
    if (Status st = s.id->disconnect(); st) ++waiting;
  }
  const Nanos until = now() + drain;
  size_t seen = 0;
  SteadyCallback user = std::move(steady_cb_);
  steady_cb_ = [&](const SteadyEvent& e) {
    if (e.type == CmEventType::disconnected) ++seen;
    if (user) user(e);
  };
  while (seen < waiting && now() < until) {
    drain_steady();
    if (seen >= waiting) break;
    prov::EventChannel* ch[] = {steady_.get()};
    WIREUP_TRY(prov_.wait(ch, until - now()));
  }
  steady_cb_ = std::move(user);
  if (seen < waiting)
    WIREUP_LOG(info, "rank %u: %zu of %zu disconnects unanswered after the drain", opt_.rank, waiting - seen,
               waiting);
  // Destroy in dependency order: connections (QP, then id), then the listener, then channels.
  graveyard_.clear();
  notices_.clear();
  for (auto& [k, s] : slots_) {
    s.conn.reset();
    s.qp.reset();  // a QP the transport did not take goes before its id
    s.id.reset();
  }
  listener_.reset();
  if (setup_) {
    while (setup_->get_event()) {
    }
    setup_.reset();
  }
  return Status::ok();
}

}  // namespace wireup
