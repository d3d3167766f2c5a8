// QP-less requests (abandon and rtu_lost notices) go out one at a time per destination host.
// Each carries QPN 0; the peer node's CM refuses a REQ from a (CA, QPN) one of its ids still
// holds with REJ 10 (cm_match_req), so a notice reaching a node while our previous one waits
// there for its answer would never reach that node's engine. Routes resolve in parallel; only
// the REQ waits its turn (NoticeLines in admission.h).
#include <algorithm>

#include "wireup/engine.h"

namespace wireup {

cm::Connection* Engine::notice_of(Pair& p) {
  if (auto* f = p.as<Failed>()) return f->abandon_conn.get();
  if (auto* pr = p.as<Probing>(); pr && pr->notice) return pr->notice->conn.get();
  return nullptr;
}

void Engine::queue_notice(Pair& p) {
  prov::SockAddr host;
  if (auto a = peers_.address(p.peer)) host = *a;
  host.set_port(0);
  // Sent at the end of this progress() call, in line order (send_queued_notices).
  notice_lines_.wait(host.to_string(), pairs_.index(p));
}

int Engine::send_queued_notices() {
  // Nearly always: no line at all (notices are a repair path), and then nothing is built.
  if (notice_lines_.lines() == 0) return 0;
  auto on_wire = [this](uint64_t key) {
    Pair* p = pairs_.at(key);
    cm::Connection* c = p ? notice_of(*p) : nullptr;
    // Until its answer (an event) moves it on; progress() calls here after every dispatch.
    return c != nullptr && c->state() == cm::State::connecting;
  };
  auto send = [this](uint64_t key) {
    Pair* p = pairs_.at(key);
    cm::Connection* c = p ? notice_of(*p) : nullptr;
    if (c == nullptr || c->state() != cm::State::route_resolved) return false;  // retired or moved on meanwhile
    (void)c->send_notice();
    if (c->state() == cm::State::connecting) {
      // The end of wireup waits for an abandon notice that only now leaves (kAbandonBound).
      if (p->state() == PairState::failed)
        life_.abandon_until = std::max(life_.abandon_until, now() + kAbandonBound);
      return true;
    }
    // rdma_connect refused it at once: its owner settles that like any other answer.
    if (p->state() == PairState::failed) after_abandon(*p);
    else after_notice(*p);
    return false;
  };
  return notice_lines_.pump(on_wire, send);
}

}  // namespace wireup
