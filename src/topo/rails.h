// The rail set: the devices a process uses when it uses more than one. A pure function of the
// ranking's input, like rank.h, so every rule is a unit test away.
//
// The rules, in order:
//  - candidates are filtered and ordered by nearness exactly as for one device (rank.h): a
//    device whose port is down, or that include/exclude rule out, is skipped with its reason;
//  - RailCount::all_equally_near takes the best group of equally near devices; a number N takes
//    N devices, best group first, then the next group, and so on;
//  - inside a group, one rail per HCA first: two devices on one card (the two PCI functions of
//    a dual-port ConnectX, which share one PCIe slot) are both taken only when no other equally
//    near card is left. Striping over two ports of one card gains little (UCX #9520 measured
//    +11% there against +100% for one port on each of two cards);
//  - equal processes do not pile onto the same devices: a group is walked in card-interleaved
//    order (the first device of each card, then the second ones), starting at
//    local_rank * N modulo the group's size. With one device per card and N = 1 this is
//    rank.h's rotation; with dual-port cards, neighbouring local ranks start on different cards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "topo/rank.h"

namespace wireup::topo {

struct RailCount {
  static constexpr int kAllEquallyNear = 0;
  int value = 1;  // > 0: that many rails; kAllEquallyNear: the best group of equally near devices
  bool all_equally_near() const { return value == kAllEquallyNear; }
};

struct Rail {
  std::string device;
  Nearness nearness = Nearness::machine;
  std::string card;  // what tells HCAs apart: the PCI slot (busid without the function), else the device
  std::string why;   // the ranking's sentence and how this rail was picked
};

struct RailSet {
  std::vector<Rail> rails;          // rail 0 first; never empty
  std::vector<Skipped> skipped;     // as in Ranking
  std::vector<std::string> notices; // fewer devices than asked, unknown local rank, shared cards
};

// The card a device sits on: "0000:21:00" for "0000:21:00.1"; the device's name when the
// provider knows no PCI function for it (rxe, siw), so each such device is its own card.
std::string card_of(const std::string& device, const std::string& pci_busid);

Result<RailSet> choose_rails(const RankInput& in, RailCount want);

}  // namespace wireup::topo
