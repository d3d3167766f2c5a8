#include "wireup/on_demand.h"

#include <algorithm>

namespace wireup {

bool OnDemandAsks::ask_address(uint32_t peer) {
  auto it = std::lower_bound(address_asked_.begin(), address_asked_.end(), peer);
  if (it != address_asked_.end() && *it == peer) return false;  // asked already, not answered yet
  address_asked_.insert(it, peer);
  address_cb_(peer);
  return true;
}

void OnDemandAsks::forget_ask(uint32_t peer) {
  auto it = std::lower_bound(address_asked_.begin(), address_asked_.end(), peer);
  if (it != address_asked_.end() && *it == peer) address_asked_.erase(it);
}

bool OnDemandAsks::address_asked(uint32_t peer) const {
  return std::binary_search(address_asked_.begin(), address_asked_.end(), peer);
}

void OnDemandAsks::note_deadline(const PairTable& pairs, const Pair& p) {
  deadlines_.emplace_back(p.first_start + timeout_, pairs.index(p));
  // An entry stays until its deadline (300 s by default) even when its lane settled long
  // before; without the sweep a transport that connects and disconnects all the time would
  // keep every ask of the last 300 s.
  if (deadlines_.size() > 2 * pairs.open() + kSlack)
    deadlines_.remove_if([&](const Deadline& d) { return !live(pairs, d); });
}

bool OnDemandAsks::live(const PairTable& pairs, const Deadline& d) const {
  const Pair* p = pairs.at(d.second);
  return p != nullptr && p->open() && p->first_start + timeout_ == d.first;
}

std::optional<uint32_t> OnDemandAsks::pop_due(const PairTable& pairs, Nanos t) {
  while (!deadlines_.empty() && deadlines_.front().first <= t) {
    const Deadline d = deadlines_.front();
    deadlines_.pop_front();
    if (live(pairs, d)) return d.second;
  }
  return std::nullopt;
}

const char* to_string(RequestFor r) {
  switch (r) {
    case RequestFor::new_passive: return "new_passive";
    case RequestFor::this_pair: return "this_pair";
    case RequestFor::crossed_won: return "crossed_won";
    case RequestFor::crossed_lost: return "crossed_lost";
  }
  return "?";
}

}  // namespace wireup
