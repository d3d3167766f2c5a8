// The on-demand pattern and one rank's lane ledger (wireup_a2a_pattern.h).
#include "wireup_a2a_pattern.h"

#include <algorithm>
#include <charconv>

namespace wireup::a2a {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// K distinct ranks other than r out of n, from a generator only (seed, r) decides: a partial
// Fisher-Yates shuffle of the n-1 others.
std::vector<uint32_t> draw(uint32_t r, uint32_t n, uint32_t k, uint64_t seed) {
  std::vector<uint32_t> others;
  for (uint32_t q = 0; q < n; ++q)
    if (q != r) others.push_back(q);
  uint64_t state = seed ^ (uint64_t(r) * 0xd1b54a32d192ed03ULL);
  for (uint32_t i = 0; i < k; ++i) {
    const uint64_t j = i + splitmix64(state) % (others.size() - i);
    std::swap(others[i], others[size_t(j)]);
  }
  others.resize(k);
  std::sort(others.begin(), others.end());
  return others;
}

}  // namespace

std::string Pattern::text() const {
  switch (kind) {
    case Kind::all: return "all";
    case Kind::ring: return "ring:" + std::to_string(k);
    case Kind::random: return "random:" + std::to_string(k);
  }
  return "?";
}

Expected<Pattern> parse_pattern(const std::string& s) {
  Pattern p;
  if (s == "all") return p;
  const size_t colon = s.find(':');
  const std::string name = s.substr(0, colon);
  auto bad = [&] { return Expected<Pattern>::failure("--pattern " + s + ": expected all, ring:K or random:K (K >= 1)"); };
  if (colon == std::string::npos || (name != "ring" && name != "random")) return bad();
  const char* b = s.data() + colon + 1;
  const char* e = s.data() + s.size();
  auto [end, ec] = std::from_chars(b, e, p.k);
  if (b == e || ec != std::errc() || end != e || p.k == 0) return bad();
  p.kind = name == "ring" ? Pattern::Kind::ring : Pattern::Kind::random;
  return p;
}

Expected<PatternPlan> PatternPlan::make(const Pattern& p, uint32_t n, uint64_t seed) {
  if (p.kind != Pattern::Kind::all && p.k >= n)
    return Expected<PatternPlan>::failure("--pattern " + p.text() + ": K must be below the job's " +
                                          std::to_string(n) + " ranks (a rank has " + std::to_string(n - 1) +
                                          " peers)");
  PatternPlan plan;
  plan.text_ = p.text();
  plan.asks_.resize(n);
  plan.partners_.resize(n);
  for (uint32_t r = 0; r < n; ++r) {
    std::vector<uint32_t>& a = plan.asks_[r];
    if (p.kind == Pattern::Kind::all) {
      for (uint32_t q = 0; q < n; ++q)
        if (q != r) a.push_back(q);
    } else if (p.kind == Pattern::Kind::ring) {
      for (uint32_t d = 1; d <= p.k; ++d) a.push_back((r + d) % n);
      std::sort(a.begin(), a.end());
    } else {
      a = draw(r, n, p.k, seed);
    }
  }
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t q : plan.asks_[r]) {
      const bool both = plan.asks(q, r);
      if (!both || r < q) ++plan.pairs_;
      if (both && r < q) ++plan.crossing_;
      plan.partners_[r].push_back(q);
      plan.partners_[q].push_back(r);
    }
  for (auto& v : plan.partners_) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return plan;
}

bool PatternPlan::asks(uint32_t a, uint32_t b) const {
  const std::vector<uint32_t>& v = asks_[a];
  return std::binary_search(v.begin(), v.end(), b);
}

JobInfo::Pattern pattern_info(const PatternPlan& plan, const std::set<uint32_t>& dead) {
  JobInfo::Pattern i{plan.text(), plan.pairs(), plan.crossing(), 0, {}};
  for (uint32_t r = 0; r < plan.ranks(); ++r)
    for (uint32_t q : plan.partners(r)) {
      if (r < q && (dead.count(r) || dead.count(q))) ++i.pairs_with_dead;
      if (dead.count(q) && !dead.count(r) && plan.asks(r, q)) i.asked_dead.insert(r);
    }
  return i;
}

LaneLedger::LaneLedger(const PatternPlan& plan, uint32_t me, uint32_t lanes, const std::set<uint32_t>& dead)
    : plan_(plan), me_(me), lanes_(lanes) {
  for (uint32_t q : plan.partners(me)) {
    const bool awaited = !dead.count(q) || plan.asks(me, q);
    for (uint32_t l = 0; l < lanes; ++l) {
      Lane& x = lanes_of_[uint64_t(q) * lanes + l];
      x.settled = !awaited;
      if (awaited) ++unsettled_;
    }
  }
}

LaneLedger::Lane* LaneLedger::lane(uint32_t peer, uint32_t l) {
  auto it = lanes_of_.find(uint64_t(peer) * lanes_ + l);
  return it == lanes_of_.end() ? nullptr : &it->second;
}

void LaneLedger::settle(Lane& x) {
  if (x.settled) return;
  x.settled = true;
  --unsettled_;
}

void LaneLedger::asked(uint32_t peer, int64_t at_ns) {
  for (uint32_t l = 0; l < lanes_; ++l)
    if (Lane* x = lane(peer, l); x && x->asked_at < 0) x->asked_at = at_ns;
}

void LaneLedger::ready(uint32_t peer, uint32_t l, int64_t at_ns) {
  Lane* x = lane(peer, l);
  if (x == nullptr) return;  // outside the pattern: check() names it
  if (x->asked_at >= 0 && !x->settled) ask_to_ready_.push_back(at_ns - x->asked_at);
  settle(*x);
}

void LaneLedger::failed(uint32_t peer, uint32_t l) {
  if (Lane* x = lane(peer, l)) settle(*x);
}

void LaneLedger::check(const std::vector<std::pair<uint32_t, uint32_t>>& held, CheckCounts& c) const {
  std::unordered_map<uint64_t, uint32_t> times;
  const std::vector<uint32_t>& partners = plan_.partners(me_);
  for (auto [peer, l] : held) {
    const std::string what = "rank " + std::to_string(me_) + " <-> rank " + std::to_string(peer) + " lane " +
                             std::to_string(l);
    if (!std::binary_search(partners.begin(), partners.end(), peer) || l >= lanes_) {
      ++c.pattern_extra;
      c.problem(what + ": connected, but neither end asked for it (pattern " + plan_.text() + ")");
    } else if (++times[uint64_t(peer) * lanes_ + l] == 2) {
      ++c.pattern_dup;
      c.problem(what + ": connected more than once");
    }
  }
}

}  // namespace wireup::a2a
