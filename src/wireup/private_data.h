// The library's own private data: fixed layout, versioned, little-endian, inside the 56-byte
// REQ budget of RDMA_PS_TCP. The receiver sees the whole CM field (zero padded), so the
// decoders never take a length from the wire: they read a fixed message from a buffer that
// must be at least that long and ignore the rest.
//
//   offset size  field
//   0      4     magic "WRUP"
//   4      1     version (3: the tag is SipHash-2-4-128; 2 was keyed BLAKE2b)
//   5      1     kind: 1 request (REQ), 2 accept (REP), 3 reject (REJ), 4 rtu_lost (REQ),
//                5 abandon (REQ)
//   6      2     reject reason (kind 3), else 0
//   8      4     source rank (the sender)
//   12     4     destination rank
//   16     2     lane
//   18     2     reserved, 0
//   20     4     attempt number (1, 2, ...)
//   24     8     nonce: a request's own (unique per request an engine sends); an answer (REP,
//                REJ) carries the nonce of the request it answers
//   32     16    tag: MAC (mac.h) of bytes 0..31 under the job's key; all zero on the one
//                unauthenticated message, the REJ to a request that did not authenticate
//   48           end
//
// So a message proves its sender holds the job key, and an answer proves which request it
// answers: a REP or REJ recorded from an earlier attempt names another nonce.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "wireup/mac.h"

namespace wireup {

inline constexpr uint32_t kWireMagic = 0x50555257;  // "WRUP" read as little-endian u32
inline constexpr uint8_t kWireVersion = 3;
inline constexpr size_t kWireAuthenticated = 32;  // bytes the tag covers
inline constexpr size_t kWireHeaderSize = kWireAuthenticated + kMacTagSize;  // the whole message

// rtu_lost: a REQ without a QP from the passive side of a pair to the active side's listener,
// sent when the passive side's REP retries ran out (UNREACHABLE) for `attempt`. It cannot
// tell a lost REP from a lost RTU, and only the second leaves the active side established,
// so it asks. The answer is always a REJ (no QP exists on either side) whose RejectCode is
// one of the repair_* codes.
//
// abandon: a REQ without a QP from the active side of a pair to the passive side's listener,
// sent when the active side gave up on the pair for a reason the passive side cannot see (a
// local failure: ECE `required` on a device without ECE, its QP factory failing to the last
// attempt; a REP it refused): the passive side settles the pair as failed at once instead of
// waiting out its wireup timeout. Answered with a REJ abandon_noted.
enum class WireKind : uint8_t { request = 1, accept = 2, reject = 3, rtu_lost = 4, abandon = 5 };
inline constexpr WireKind kLastWireKind = WireKind::abandon;

// Why the passive side refused a request (carried in REJ private data, reason 28).
enum class RejectCode : uint16_t {
  none = 0,
  bad_magic = 1,        // not ours (or not a wireup peer at all)
  bad_version = 2,
  wrong_job_key = 3,    // the tag does not verify: another job's key, or altered in flight
  unknown_rank = 4,     // source rank not in our peer table
  wrong_destination = 5,// addressed to another rank (stale address table?)
  bad_lane = 6,         // lane beyond the planned number
  wrong_role = 7,       // the plan says we initiate this pair, not the peer
  stale_attempt = 8,    // an older attempt than one we already have
  duplicate = 9,        // already connected on this lane
  local_failure = 10,   // this side failed to make or move its QP (transient: retried)
  shutting_down = 11,
  // Answers to a rtu_lost notice (the active side's view of that lane and attempt):
  repair_accepted = 12, // it was established with that attempt; torn down, a newer one follows
  repair_pending = 13,  // not established with that attempt: a newer attempt is in flight or due
  repair_refused = 14,  // established, but it cannot reconnect (its wireup has ended, the
                        // transport took the QP, or no attempts are left); it reported the loss
  bad_reply = 15,       // the active side refused our REP: not the answer to its request
  abandon_noted = 16,   // answer to an abandon notice: the passive side settled the pair
  crossed = 17,         // on demand: both sides asked for the lane at once and our request is
                        // the one the rule keeps (plan::initiates): accept ours instead
};
inline constexpr RejectCode kLastRejectCode = RejectCode::crossed;
const char* to_string(RejectCode c);
// A wireup REJ (our magic, kind reject) whose reason is past kLastRejectCode: a newer peer's,
// which decode() refuses. Only the header is read; nothing is authenticated.
bool unknown_reject_reason(std::span<const uint8_t> b);

struct WireHeader {
  WireKind kind = WireKind::request;
  RejectCode reason = RejectCode::none;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  uint16_t lane = 0;
  uint32_t attempt = 0;
  uint64_t nonce = 0;
};

using WireBytes = std::array<uint8_t, kWireHeaderSize>;

// The message with its tag left zero (Wire seals it).
WireBytes encode(const WireHeader& h);

// Decodes the fields of a message from `bytes` (the CM's private data, any length) without
// checking its tag (Wire::open does). Errors say what was wrong: too short, bad magic, bad
// version, unknown kind, non-zero reserved field.
Result<WireHeader> decode(std::span<const uint8_t> bytes);

}  // namespace wireup
