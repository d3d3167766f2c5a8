// Incast pacing: no listener is sent more first connect requests than its backlog holds.
//
// The kernel queues a CONNECT_REQUEST against the listener's backlog until the process fetches
// it (ucma.c); a REQ that finds the backlog full is dropped without a reject, and its sender's
// CM resends it only after a whole CM timeout (~6.1 s on Debian 12's kernel). A hub that P
// peers connect to at once overflows at P/2 > backlog, whatever the senders' windows say: each
// sends one REQ.
//
// The plan says who initiates to whom (plan::initiates), so every sender can compute, without a
// message, its place among a listener's planned initiators: nearest on the ring first, lane-
// major (as the engine starts them). Each listener's initiators then behave as if they drew from
// one token bucket of depth `burst` refilled at `rate`: the REQ in slot s leaves no earlier than
// (s - burst + 1) / rate after start. Deterministic, O(1) per pair, and no wire change.
//
// A sender does not know which other ranks really connect to that listener (its peer table may
// be partial), so it assumes they all do: the plan's worst case. Where the senders are paced
// anyway (an all-to-all, whose ranks start with their nearest peers and are bound by their own
// connect window) the delay is a lower bound they reach later than it expires. Every rank of a
// job must use the same pacing and backlog (like the job key): a sender takes its own
// configuration for the listener's.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace wireup::incast {

struct Pacing {
  bool on = false;
  uint32_t burst = 0;  // first REQs one listener is sent at once; <= backlog / 2
  uint32_t rate = 0;   // first REQs per second one listener is sent after the burst
};

// The pacing a listener of `backlog` is sent: the configured burst capped at half the backlog,
// so that retries, notices and strangers still find room.
Pacing effective(const Pacing& asked, int backlog);

// The slot of rank `me`'s REQ for `lane` among the first REQs listener `peer` is planned to
// receive in a job of n ranks. Only meaningful when plan::initiates(me, peer, n).
uint64_t slot(uint32_t me, uint32_t peer, uint32_t lane, uint32_t n);

// Several rails: the peer listens on each of its rails, each with its own backlog, and each
// rail is paced alone. An initiator stripes its lanes over the `rails` rail pairs it has with
// the peer from the sum of both ranks (rail_routes.h: lane L of rank i goes over pair
// (L + i + peer) mod rails), and assumes every other initiator does the same with as many
// pairs (like the pacing, the rail count is taken to be the job's). The slot is then the
// place of (me, lane) among the planned first REQs of the one listener its lane goes to, in
// the same order (lane-major, nearest first). With one rail it is slot().
uint64_t rail_slot(uint32_t me, uint32_t peer, uint32_t lane, uint32_t n, uint32_t rails);

// How long after start() the REQ in `slot` may leave; 0 when pacing is off or within the burst.
Nanos delay(const Pacing& p, uint64_t slot);

}  // namespace wireup::incast
