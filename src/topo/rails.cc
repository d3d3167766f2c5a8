// The rail set (see rails.h for the rules).
#include "topo/rails.h"

#include <algorithm>
#include <set>

namespace wireup::topo {

std::string card_of(const std::string& device, const std::string& pci_busid) {
  // domain:bus:device.function; the function is what differs between ports of one card.
  const size_t dot = pci_busid.rfind('.');
  if (pci_busid.empty() || dot == std::string::npos || dot == 0) return device;
  return pci_busid.substr(0, dot);
}

namespace {

// Picks up to `want` devices of one group into `out`, walking from `start`: first those on a
// card nothing in `out` is on yet, then (a second walk) the other ports of cards already used.
void take_from_group(const std::vector<const Choice*>& group, size_t start, size_t want, int local_rank,
                     std::vector<Rail>& out, std::vector<std::string>& notices) {
  std::set<std::string> cards;
  for (const Rail& r : out) cards.insert(r.card);
  std::vector<bool> taken(group.size(), false);
  const size_t n = group.size();
  for (int pass = 0; pass < 2 && want > 0; ++pass) {
    for (size_t k = 0; k < n && want > 0; ++k) {
      const size_t i = (start + k) % n;
      if (taken[i]) continue;
      const Choice& c = *group[i];
      const std::string card = card_of(c.device, c.pci_busid);
      if (pass == 0 && cards.count(card) != 0) continue;
      std::string why = c.why;
      if (n > 1) {
        std::string walk;
        for (const Choice* g : group) walk += (walk.empty() ? "" : ", ") + g->device;
        why += "; equally near, one device per card first: " + walk + "; " +
               (local_rank >= 0 ? "local rank " + std::to_string(local_rank) + " starts at " + group[start]->device
                                : std::string("starting at the first"));
      }
      if (pass == 1) {
        why += "; shares card " + card + " with another rail: no other equally near card is left";
        notices.push_back(c.device + " shares card " + card + " with another rail of this process");
      }
      out.push_back({c.device, c.nearness, card, std::move(why)});
      cards.insert(card);
      taken[i] = true;
      --want;
    }
  }
}

// The group in card-interleaved order (first port of each card, in ranking order, then the
// second ports, ...), so that consecutive processes' walks land on different cards first.
std::vector<const Choice*> by_card(const std::vector<const Choice*>& group) {
  std::vector<std::string> cards;
  std::vector<std::vector<const Choice*>> per_card;
  for (const Choice* c : group) {
    const std::string card = card_of(c->device, c->pci_busid);
    auto it = std::find(cards.begin(), cards.end(), card);
    if (it == cards.end()) {
      cards.push_back(card);
      per_card.push_back({c});
    } else {
      per_card[static_cast<size_t>(it - cards.begin())].push_back(c);
    }
  }
  std::vector<const Choice*> out;
  for (size_t round = 0; out.size() < group.size(); ++round)
    for (const std::vector<const Choice*>& ports : per_card)
      if (round < ports.size()) out.push_back(ports[round]);
  return out;
}

}  // namespace

Result<RailSet> choose_rails(const RankInput& in, RailCount want) {
  if (want.value < 0)
    return Error::make(ErrorCode::invalid_argument, "choose_rails",
                       "rail count " + std::to_string(want.value) + " is negative");
  Result<Ranking> ordered = order_devices(in);
  if (!ordered) return ordered.error();
  RailSet set;
  set.skipped = std::move(ordered->skipped);
  set.notices = std::move(ordered->notices);

  std::vector<std::vector<const Choice*>> groups;
  for (const Choice& c : ordered->order) {
    if (groups.size() <= static_cast<size_t>(c.tier)) groups.emplace_back();
    groups[static_cast<size_t>(c.tier)].push_back(&c);
  }
  for (std::vector<const Choice*>& g : groups) g = by_card(g);
  const size_t usable = ordered->order.size();
  size_t target = want.all_equally_near() ? groups[0].size() : static_cast<size_t>(want.value);
  if (target > usable) {
    set.notices.push_back(std::to_string(target) + " rails asked, " + std::to_string(usable) +
                          " usable device" + (usable == 1 ? "" : "s") + ": using " +
                          (usable == 1 ? "it" : "all of them"));
    target = usable;
  }
  const bool spread = in.local_rank >= 0;
  if (!spread && groups[0].size() > 1)
    set.notices.push_back("local rank unknown: the " + std::to_string(groups[0].size()) +
                          " equally near devices are not spread over the node's processes");

  for (const std::vector<const Choice*>& group : groups) {
    if (set.rails.size() == target) break;
    const size_t need = std::min(target - set.rails.size(), group.size());
    const size_t start = spread ? (static_cast<size_t>(in.local_rank) * need) % group.size() : 0;
    take_from_group(group, start, need, in.local_rank, set.rails, set.notices);
  }
  return set;
}

}  // namespace wireup::topo
