// Every verb a transport uses, posted through the provider seam on every QP an engine handed
// over, from both roles: SEND, SEND with immediate, RDMA WRITE, WRITE with immediate, RDMA READ
// as deep as the QP's max_rd_atomic, compare-and-swap and fetch-and-add into the peer's memory.
// Checks the data, the immediates, each completion (status, opcode, QP) and that every QP is
// still at RTS afterwards (an access or depth error moves it to ERR).
#pragma once

#include <functional>

#include "tests/engine/engine_harness.h"

namespace wireup::etest {

// Where a rank's QPs live: the PD to register memory on, the CQ their completions go to (send
// and receive), and the SRQ their receives come from (nullptr: each QP's own receive queue).
struct RankVerbs {
  prov::Pd* pd = nullptr;
  prov::Cq* cq = nullptr;
  prov::Srq* srq = nullptr;
};
using RankVerbsOf = std::function<RankVerbs(uint32_t rank)>;

// The rank's DefaultQpFactory (Rank::factory) on the device of its first live QP.
RankVerbs factory_verbs(Job& job, uint32_t rank);

// Runs the verbs on every live result (not withdrawn, QP still held by the engine) of every
// rank; the peer's side of each is its result with the crossed (peer, lane). Returns the number
// of QPs checked.
size_t expect_every_verb(Job& job, const RankVerbsOf& verbs_of);
inline size_t expect_every_verb(Job& job) {
  return expect_every_verb(job, [&job](uint32_t r) { return factory_verbs(job, r); });
}

}  // namespace wireup::etest
