#include "wireup/liveness.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

namespace wireup::liveness {

namespace {
constexpr uint32_t kNoticeCopies = 2;

// a^-1 mod n for gcd(a, n) = 1 (extended Euclid).
uint64_t inverse_mod(uint64_t a, uint64_t n) {
  int64_t t = 0, nt = 1, r = static_cast<int64_t>(n), nr = static_cast<int64_t>(a % n);
  while (nr != 0) {
    const int64_t q = r / nr;
    t = std::exchange(nt, t - q * nt);
    r = std::exchange(nr, r - q * nr);
  }
  return static_cast<uint64_t>(t < 0 ? t + static_cast<int64_t>(n) : t);
}
}  // namespace

const char* check(const Params& p) {
  if (p.period <= Nanos{0}) return "liveness.period_ms must be positive";
  if (p.deadline < 3 * p.period)
    return "liveness.deadline_ms must be at least three periods (silence, then a period to confirm and spread)";
  if (p.watchers < 1 || p.watchers > 64) return "liveness.watchers must be between 1 and 64";
  return "";
}

Ring::Ring(const std::vector<uint64_t>& node_of) : pos_(node_of.size()) {
  // Ranks of a node in rank order; nodes in order of their first rank: the i-th rank of every
  // node, then the (i+1)-th, so that ring neighbours are on different nodes.
  std::map<uint64_t, uint32_t> node_index;
  std::vector<std::vector<uint32_t>> by_node;
  for (uint32_t r = 0; r < node_of.size(); ++r) {
    auto [it, fresh] = node_index.try_emplace(node_of[r], static_cast<uint32_t>(by_node.size()));
    if (fresh) by_node.emplace_back();
    by_node[it->second].push_back(r);
  }
  order_.reserve(node_of.size());
  for (size_t i = 0; order_.size() < node_of.size(); ++i)
    for (const auto& ranks : by_node)
      if (i < ranks.size()) order_.push_back(ranks[i]);
  for (uint32_t p = 0; p < order_.size(); ++p) pos_[order_[p]] = p;
}

Detector::Detector(uint32_t rank, std::shared_ptr<const Ring> ring, Params p)
    : rank_(rank), ring_(std::move(ring)), p_(p), dead_(ring_->size()) {
  for (auto& f : forwarded_) f.assign(ring_->size(), false);
  const uint64_t n = ring_->size();
  if (n > 2) {
    stride_ = std::max<uint64_t>(1, static_cast<uint64_t>(n * 0.6180339887));
    while (std::gcd(stride_, n) != 1) ++stride_;
    stride_inverse_ = inverse_mod(stride_, n);
  }
}

void Detector::start(Nanos now) {
  next_beat_ = now;
  rebuild(now);
}

void Detector::rebuild(Nanos now) {
  const uint32_t n = ring_->size();
  const uint32_t me = ring_->position(rank_);
  auto walk = [&](int dir) {
    std::vector<uint32_t> v;
    for (uint32_t step = 1; step < n && v.size() < p_.watchers; ++step) {
      const uint32_t r = ring_->rank_at(dir > 0 ? me + step : me + n - step);
      if (!dead_[r]) v.push_back(r);
    }
    return v;
  };
  watchers_ = walk(+1);
  watched_ = walk(-1);
  std::unordered_map<uint32_t, Watch> next;
  for (uint32_t r : watched_) {
    auto it = watch_.find(r);
    // A rank newly watched (the ring closed over a death) gets a full deadline from now.
    next[r] = it != watch_.end() ? it->second : Watch{now};
  }
  watch_.swap(next);
}

void Detector::send(uint32_t to, const Msg& m, std::vector<Out>& out) {
  out.push_back(Out{to, m});
  ++c_.sent;
}

void Detector::tick(Nanos now, std::vector<Out>& out) {
  const bool beat = now >= next_beat_;
  if (beat) {
    next_beat_ = std::max(next_beat_ + p_.period, now);  // no burst after a stall
    Msg hb;
    hb.kind = Kind::heartbeat;
    hb.from = rank_;
    // Deaths are told for four deadlines after they were learnt; more than fit in one
    // heartbeat go in turns.
    while (!recent_.empty() && now - recent_.front().learnt > 4 * p_.deadline) recent_.erase(recent_.begin());
    hb.ndigest = static_cast<uint8_t>(std::min(recent_.size(), Msg::kMaxDigest));
    for (uint8_t i = 0; i < hb.ndigest; ++i) hb.digest[i] = recent_[(digest_next_ + i) % recent_.size()].rank;
    digest_next_ = recent_.empty() ? 0 : (digest_next_ + hb.ndigest) % recent_.size();
    for (uint32_t w : watchers_) send(w, hb, out);
  }
  std::vector<uint32_t> confirmed;
  for (auto& [r, w] : watch_) {
    const bool silent = now - w.heard >= suspect_after();
    if (!silent) continue;
    if (!w.suspected) {
      w.suspected = true;
      ++c_.suspicions;
    } else if (!beat) {
      continue;  // told already; told again with the next heartbeat
    }
    if (1 + w.confirmations >= needed()) {
      confirmed.push_back(r);
      continue;
    }
    // Ask the rank's other watchers (its live successors, as we see the ring).
    Msg s;
    s.kind = Kind::suspect;
    s.from = rank_;
    s.subject = r;
    const uint32_t n = ring_->size(), at = ring_->position(r);
    uint32_t asked = 0;
    for (uint32_t step = 1; step < n && asked < p_.watchers; ++step) {
      const uint32_t o = ring_->rank_at(at + step);
      if (dead_[o] || o == r) continue;
      ++asked;
      if (o != rank_) send(o, s, out);
    }
  }
  for (uint32_t r : confirmed) declare(r, now, out);
}

Nanos Detector::next_due() const {
  Nanos t = next_beat_;
  for (const auto& [r, w] : watch_)
    if (!w.suspected) t = std::min(t, w.heard + suspect_after());
  return t;
}

void Detector::mark_dead(uint32_t rank, Nanos now) {
  if (dead_[rank]) return;
  dead_[rank] = true;
  ++c_.learnt;
  recent_.push_back(Recent{rank, now});
  new_deaths_.push_back(rank);
  rebuild(now);
}

void Detector::learn(uint32_t rank, Nanos now) {
  if (rank != rank_ && rank < dead_.size()) mark_dead(rank, now);
}

void Detector::declare(uint32_t rank, Nanos now, std::vector<Out>& out) {
  if (dead_[rank]) return;
  ++c_.declared;
  mark_dead(rank, now);
  for (bool mirror : {false, true}) {
    forwarded_[mirror][rank] = true;
    forward(rank, ring_->position(rank), mirror, true, out);
  }
}

void Detector::forward(uint32_t subject, uint32_t root, bool mirror, bool as_root, std::vector<Out>& out) {
  // This rank's place in the k-ary tree rooted at `root`; its children k*i+1 .. k*i+k. A child
  // known to be dead is stepped over to its own children (iteratively: few are dead).
  const uint64_t n = ring_->size(), k = p_.watchers;
  const uint64_t me = ring_->position(rank_);
  const uint64_t off = (me + n - root) % n;
  const uint64_t i = as_root ? 0 : mirror ? static_cast<uint64_t>((static_cast<unsigned __int128>(off) * stride_inverse_) % n) : off;
  Msg d;
  d.kind = Kind::dead;
  d.from = rank_;
  d.subject = subject;
  d.root = root;
  d.mirror = mirror;
  std::vector<uint64_t> todo;
  for (uint64_t c = k * i + 1; c <= k * i + k && c < n; ++c) todo.push_back(c);
  while (!todo.empty()) {
    const uint64_t c = todo.back();
    todo.pop_back();
    const uint64_t at = mirror ? (root + static_cast<uint64_t>((static_cast<unsigned __int128>(c) * stride_) % n)) % n : (root + c) % n;
    const uint32_t r = ring_->rank_at(static_cast<uint32_t>(at));
    if (!dead_[r] && r != rank_) {
      // Each notice twice: a notice lost on the way costs the whole subtree below it (until
      // the heartbeats' digest makes up for it, a period or more later), and notices are rare.
      for (uint32_t copy = 0; copy < kNoticeCopies; ++copy) send(r, d, out);
      continue;
    }
    for (uint64_t g = k * c + 1; g <= k * c + k && g < n; ++g) todo.push_back(g);
  }
}

void Detector::note_suspect(uint32_t subject, uint32_t from, Nanos now, std::vector<Out>& out) {
  auto it = watch_.find(subject);
  if (it == watch_.end()) return;  // not ours to judge (our view of the ring differs)
  Watch& w = it->second;
  // Each other watcher counts once; slot by its distance on the ring.
  const uint32_t n = ring_->size();
  const uint32_t slot = (ring_->position(from) + n - ring_->position(subject)) % n;
  const uint64_t bit = uint64_t{1} << (slot % 64);
  if ((w.from_mask & bit) == 0) {
    w.from_mask |= bit;
    ++w.confirmations;
  }
  // We time it out ourselves before agreeing: one watcher's lost heartbeats are not a death.
  if (now - w.heard >= suspect_after()) {
    if (!w.suspected) {
      w.suspected = true;
      ++c_.suspicions;
    }
    if (1 + w.confirmations >= needed()) declare(subject, now, out);
  }
}

bool Detector::hears(uint32_t rank, Nanos now) const {
  auto it = watch_.find(rank);
  return it != watch_.end() && !it->second.suspected && now - it->second.heard < suspect_after();
}

void Detector::receive(const Msg& m, Nanos now, std::vector<Out>& out) {
  ++c_.received;
  if (m.from >= dead_.size() || m.from == rank_ || dead_[m.from]) {
    ++c_.stale;  // fail-stop: a rank declared dead stays dead, whatever it sends later
    return;
  }
  switch (m.kind) {
    case Kind::heartbeat: {
      if (auto it = watch_.find(m.from); it != watch_.end()) {
        Watch& w = it->second;
        w.heard = now;
        if (w.suspected) ++c_.refuted;
        w.suspected = false;
        w.confirmations = 0;
        w.from_mask = 0;
      }
      for (uint8_t i = 0; i < std::min<size_t>(m.ndigest, Msg::kMaxDigest); ++i) {
        const uint32_t d = m.digest[i];
        if (d >= dead_.size() || d == rank_ || dead_[d]) continue;
        if (hears(d, now)) {
          ++c_.refused;
          continue;
        }
        mark_dead(d, now);
      }
      return;
    }
    case Kind::suspect:
      if (m.subject < dead_.size() && !dead_[m.subject]) note_suspect(m.subject, m.from, now, out);
      return;
    case Kind::dead:
      if (m.subject >= dead_.size() || m.subject == rank_ || m.root >= dead_.size()) return;
      if (hears(m.subject, now)) {
        ++c_.refused;
        return;
      }
      mark_dead(m.subject, now);
      // Per tree, the first notice that reached us is the one we serve (a death declared by
      // two watchers at once spreads once per tree).
      if (!forwarded_[m.mirror != 0][m.subject]) {
        forwarded_[m.mirror != 0][m.subject] = true;
        forward(m.subject, m.root, m.mirror != 0, false, out);
      }
      return;
  }
}

}  // namespace wireup::liveness
