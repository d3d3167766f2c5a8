// Who connects to whom, and in what order: pure functions both sides agree on.
#pragma once

#include <cstdint>
#include <vector>

namespace wireup::plan {

// True if rank a initiates the connections of the pair {a, b} in a job of n ranks.
// Ranks sit on a ring; a initiates to the (n-1)/2 ranks after it, so every rank
// initiates about half of its pairs. With n even, the pair at distance n/2 goes to
// the lower rank.
bool initiates(uint32_t a, uint32_t b, uint32_t n);

// The peers of `me` (from `peers`, any order) that `me` initiates to, in start order:
// rotated so that rank r starts with r+1, r+2, ... and no rank is hit by everyone at once.
std::vector<uint32_t> outgoing(uint32_t me, uint32_t n, const std::vector<uint32_t>& peers);

// The peers that initiate to `me`.
std::vector<uint32_t> incoming(uint32_t me, uint32_t n, const std::vector<uint32_t>& peers);

}  // namespace wireup::plan
