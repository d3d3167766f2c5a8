// QP-less requests (rtu_lost and abandon notices), carried out: their state is Notices'
// (notices.h); here are the calls it needs. Each notice carries QPN 0; the peer node's CM
// refuses a REQ from a (CA, QPN) one of its ids still holds with REJ 10 (cm_match_req), so a
// notice reaching a node while our previous one waits there for its answer would never reach
// that node's engine. Routes resolve in parallel; only the REQ waits its turn in its host's
// line.
#include "wireup/engine.h"

namespace wireup {

void Engine::queue_notice(Pair& p) {
  prov::SockAddr host;
  if (auto a = peers_.address(p.peer)) host = *a;
  host.set_port(0);
  // Sent at the end of this progress() call, in line order (send_queued_notices).
  notices_.route_resolved(pairs_.index(p), host.to_string());
}

int Engine::send_queued_notices() {
  // Nearly always: no line at all (notices are a repair path), and then nothing is built.
  if (!notices_.lines_busy()) return 0;
  return notices_.send_queued(now(), [this](uint64_t key) {
    cm::Connection* c = notices_.find(key)->conn.get();
    if (c == nullptr || c->state() != cm::State::route_resolved) return false;  // moved on meanwhile
    (void)c->send_notice();
    if (c->state() == cm::State::connecting) return true;
    // rdma_connect refused it at once: settled like any other answer.
    notice_changed(*pairs_.at(key));
    return false;
  });
}

void Engine::notice_changed(Pair& p) {
  const uint64_t key = pairs_.index(p);
  const Notices::Notice* n = notices_.find(key);
  if (n == nullptr || !n->conn) return;
  const cm::Connection& c = *n->conn;
  // No QP, so no QP window; but one QP-less request per host on the wire (the lines).
  if (c.state() == cm::State::route_resolved) return queue_notice(p);
  if (c.state() != cm::State::failed) return;
  const cm::Failure answer = failure_of(c);
  const Notices::Kind kind = n->kind;
  retire(notices_.answered(key));
  if (kind == Notices::Kind::abandon) return abandon_answered(p, answer);
  settle_notice(p, answer);
}

int Engine::start_due_notices() {
  int work = 0;
  // Rare: most progress() calls have no notice waiting at all, and then not even the clock
  // is read.
  if (notices_.next_due(Notices::Kind::rtu_lost) != Nanos::max())
    while (auto k = notices_.pop_due(Notices::Kind::rtu_lost, now())) {
      start_notice(*pairs_.at(*k));
      ++work;
    }
  if (notices_.next_due(Notices::Kind::abandon) != Nanos::max())
    while (auto k = notices_.pop_due(Notices::Kind::abandon, now())) {
      send_abandon(*pairs_.at(*k));
      ++work;
    }
  return work;
}

}  // namespace wireup
