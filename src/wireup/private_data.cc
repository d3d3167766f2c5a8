#include "wireup/private_data.h"

#include <bit>
#include <cstring>

namespace wireup {
namespace {

// Little-endian fields of a fixed width. On a little-endian host a field is one load or store
// (memcpy of a constant size compiles to it); the byte loop it replaced was a third of the
// cost of every decode, which runs on every REQ, REP and REJ (and before any MAC check).
template <class T>
void put(uint8_t* p, T v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (size_t i = 0; i < sizeof v; ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
  }
}
template <class T>
T get(const uint8_t* p) {
  T v{};
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof v);
  } else {
    uint64_t u = 0;
    for (size_t i = 0; i < sizeof v; ++i) u |= static_cast<uint64_t>(p[i]) << (8 * i);
    v = static_cast<T>(u);
  }
  return v;
}
Error bad(std::string what) { return Error::make(ErrorCode::protocol_error, "decode private data", std::move(what)); }

}  // namespace

const char* to_string(RejectCode c) {
  switch (c) {
    case RejectCode::none: return "none";
    case RejectCode::bad_magic: return "bad_magic";
    case RejectCode::bad_version: return "bad_version";
    case RejectCode::wrong_job_key: return "wrong_job_key";
    case RejectCode::unknown_rank: return "unknown_rank";
    case RejectCode::wrong_destination: return "wrong_destination";
    case RejectCode::bad_lane: return "bad_lane";
    case RejectCode::wrong_role: return "wrong_role";
    case RejectCode::stale_attempt: return "stale_attempt";
    case RejectCode::duplicate: return "duplicate";
    case RejectCode::local_failure: return "local_failure";
    case RejectCode::shutting_down: return "shutting_down";
    case RejectCode::repair_accepted: return "repair_accepted";
    case RejectCode::repair_pending: return "repair_pending";
    case RejectCode::repair_refused: return "repair_refused";
    case RejectCode::bad_reply: return "bad_reply";
    case RejectCode::abandon_noted: return "abandon_noted";
    case RejectCode::crossed: return "crossed";
  }
  return "unknown";
}

bool unknown_reject_reason(std::span<const uint8_t> b) {
  if (b.size() < 8 || get<uint32_t>(b.data()) != kWireMagic) return false;
  return b[5] == static_cast<uint8_t>(WireKind::reject) && get<uint16_t>(b.data() + 6) > static_cast<uint16_t>(kLastRejectCode);
}

WireBytes encode(const WireHeader& h) {
  WireBytes b{};
  put<uint32_t>(&b[0], kWireMagic);
  b[4] = kWireVersion;
  b[5] = static_cast<uint8_t>(h.kind);
  put<uint16_t>(&b[6], static_cast<uint16_t>(h.reason));
  put<uint32_t>(&b[8], h.src_rank);
  put<uint32_t>(&b[12], h.dst_rank);
  put<uint16_t>(&b[16], h.lane);
  put<uint32_t>(&b[20], h.attempt);
  put<uint64_t>(&b[24], h.nonce);
  return b;
}

Result<WireHeader> decode(std::span<const uint8_t> bytes) {
  if (bytes.size() < kWireHeaderSize)
    return bad(std::to_string(bytes.size()) + " bytes, a wireup message needs " + std::to_string(kWireHeaderSize));
  const uint8_t* p = bytes.data();
  if (get<uint32_t>(p) != kWireMagic) return bad("bad magic: not a wireup peer");
  if (p[4] != kWireVersion)
    return bad("version " + std::to_string(p[4]) + ", this library speaks " + std::to_string(kWireVersion));
  WireHeader h;
  if (p[5] < 1 || p[5] > static_cast<uint8_t>(kLastWireKind)) return bad("unknown message kind " + std::to_string(p[5]));
  h.kind = static_cast<WireKind>(p[5]);
  const uint16_t reason = get<uint16_t>(p + 6);
  if (reason > static_cast<uint16_t>(kLastRejectCode))
    return bad("unknown reject reason " + std::to_string(reason));
  if (h.kind != WireKind::reject && reason != 0) return bad("reject reason set on a non-reject message");
  h.reason = static_cast<RejectCode>(reason);
  h.src_rank = get<uint32_t>(p + 8);
  h.dst_rank = get<uint32_t>(p + 12);
  h.lane = get<uint16_t>(p + 16);
  if (get<uint16_t>(p + 18) != 0) return bad("reserved field is not zero");
  h.attempt = get<uint32_t>(p + 20);
  h.nonce = get<uint64_t>(p + 24);
  return h;
}

}  // namespace wireup
