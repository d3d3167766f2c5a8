#include "wireup/notices.h"

#include <algorithm>
#include <cassert>

namespace wireup {
namespace {

Notices::Notice of_kind(Notices::Kind k) {
  Notices::Notice n;
  n.kind = k;
  return n;
}

}  // namespace

void NoticeLines::wait(const std::string& host, uint64_t key) { lines_[host].waiting.push_back(key); }

int NoticeLines::pump(const std::function<bool(uint64_t)>& on_wire, const std::function<bool(uint64_t)>& send) {
  int sent = 0;
  for (auto it = lines_.begin(); it != lines_.end();) {
    Line& l = it->second;
    if (l.sent && on_wire(*l.sent)) {
      ++it;
      continue;
    }
    l.sent.reset();
    while (!l.waiting.empty()) {
      const uint64_t k = l.waiting.front();
      l.waiting.pop_front();
      if (send(k)) {
        l.sent = k;
        ++sent;
        break;
      }
    }
    it = l.sent || !l.waiting.empty() ? std::next(it) : lines_.erase(it);
  }
  return sent;
}

Notices::Notice* Notices::find(uint64_t key) {
  auto it = notices_.find(key);
  return it == notices_.end() ? nullptr : &it->second;
}

const Notices::Notice* Notices::find(uint64_t key) const { return const_cast<Notices*>(this)->find(key); }

bool Notices::holds(uint64_t key, const cm::Connection& c) const {
  const Notice* n = find(key);
  return n != nullptr && n->conn.get() == &c;
}

bool Notices::open_abandon(uint64_t key) {
  if (!notices_.try_emplace(key, of_kind(Kind::abandon)).second) return false;
  ++abandons_;
  return true;
}

Notices::Notice& Notices::open_probe(uint64_t key, uint32_t attempt, const cm::Failure* why) {
  auto [it, made] = notices_.try_emplace(key, of_kind(Kind::rtu_lost));
  Notice& n = it->second;
  assert(n.kind == Kind::rtu_lost);
  if (made && why != nullptr) n.unreachable = *why;
  if (n.attempt != attempt) {
    n.attempt = attempt;
    n.tries = 0;
  }
  return n;
}

std::unique_ptr<cm::Connection> Notices::close(uint64_t key) {
  // Called for every pair whose state is released, nearly always with no notice at all.
  if (notices_.empty()) return nullptr;
  auto it = notices_.find(key);
  if (it == notices_.end()) return nullptr;
  std::unique_ptr<cm::Connection> c = std::move(it->second.conn);
  if (it->second.kind == Kind::abandon) --abandons_;
  notices_.erase(it);
  return c;
}

std::unique_ptr<cm::Connection> Notices::begin_try(uint64_t key, Nanos now) {
  Notice* n = find(key);
  if (n == nullptr) return nullptr;
  ++n->tries;
  n->phase = Phase::resolving;
  if (n->kind == Kind::abandon) abandon_until_ = now + kAbandonBound;
  return std::move(n->conn);
}

void Notices::hold(uint64_t key, std::unique_ptr<cm::Connection> c) {
  if (Notice* n = find(key)) n->conn = std::move(c);
}

void Notices::route_resolved(uint64_t key, const std::string& host) {
  Notice* n = find(key);
  if (n == nullptr) return;
  n->phase = Phase::queued;
  // Sent at the end of this progress() call, in line order (send_queued).
  lines_.wait(host, key);
}

int Notices::send_queued(Nanos now, const std::function<bool(uint64_t)>& send) {
  // On the wire until its answer moves it on; the engine sends after every dispatch.
  auto on_wire = [this](uint64_t key) {
    const Notice* n = find(key);
    return n != nullptr && n->phase == Phase::on_wire;
  };
  auto offer = [&](uint64_t key) {
    Notice* n = find(key);
    if (n == nullptr || n->phase != Phase::queued) return false;  // closed or moved on meanwhile
    if (!send(key)) return false;  // not sent, or refused at once: `send` settled it (n may be gone)
    n->phase = Phase::on_wire;
    // The end of wireup waits for an abandon that only now leaves.
    if (n->kind == Kind::abandon) abandon_until_ = std::max(abandon_until_, now + kAbandonBound);
    return true;
  };
  return lines_.pump(on_wire, offer);
}

std::unique_ptr<cm::Connection> Notices::answered(uint64_t key) {
  Notice* n = find(key);
  if (n == nullptr) return nullptr;
  n->phase = Phase::idle;
  return std::move(n->conn);
}

void Notices::retry_at(uint64_t key, Nanos at) {
  Notice* n = find(key);
  if (n == nullptr) return;
  n->phase = Phase::backing_off;
  due_[idx(n->kind)].emplace(at, key);
  if (n->kind == Kind::abandon) abandon_until_ = std::max(abandon_until_, at + kAbandonBound);
}

std::optional<uint64_t> Notices::pop_due(Kind kind, Nanos now) {
  auto& q = due_[idx(kind)];
  while (!q.empty() && q.begin()->first <= now) {
    const uint64_t key = q.begin()->second;
    q.erase(q.begin());
    // A notice closed since, or already on its next try (an earlier entry of it came first).
    const Notice* n = find(key);
    if (n != nullptr && n->kind == kind && n->phase == Phase::backing_off) return key;
  }
  return std::nullopt;
}

void Notices::drop_retries() {
  for (auto& q : due_) q.clear();
}

size_t Notices::live_ids() const {
  size_t ids = 0;
  for (const auto& [key, n] : notices_) ids += n.conn && n.conn->id() ? 1 : 0;
  return ids;
}

void Notices::clear() {
  notices_.clear();
  lines_.clear();
  drop_retries();
  abandons_ = 0;
}

}  // namespace wireup
