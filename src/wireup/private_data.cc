#include "wireup/private_data.h"

namespace wireup {
namespace {

void put(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
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

WireBytes encode(const WireHeader& h) {
  WireBytes b{};
  put(&b[0], kWireMagic, 4);
  b[4] = kWireVersion;
  b[5] = static_cast<uint8_t>(h.kind);
  put(&b[6], static_cast<uint16_t>(h.reason), 2);
  put(&b[8], h.src_rank, 4);
  put(&b[12], h.dst_rank, 4);
  put(&b[16], h.lane, 2);
  put(&b[20], h.attempt, 4);
  put(&b[24], h.nonce, 8);
  return b;
}

Result<WireHeader> decode(std::span<const uint8_t> bytes) {
  if (bytes.size() < kWireHeaderSize)
    return bad(std::to_string(bytes.size()) + " bytes, a wireup message needs " + std::to_string(kWireHeaderSize));
  const uint8_t* p = bytes.data();
  if (get(p, 4) != kWireMagic) return bad("bad magic: not a wireup peer");
  if (p[4] != kWireVersion)
    return bad("version " + std::to_string(p[4]) + ", this library speaks " + std::to_string(kWireVersion));
  WireHeader h;
  if (p[5] < 1 || p[5] > static_cast<uint8_t>(kLastWireKind)) return bad("unknown message kind " + std::to_string(p[5]));
  h.kind = static_cast<WireKind>(p[5]);
  uint16_t reason = static_cast<uint16_t>(get(p + 6, 2));
  if (reason > static_cast<uint16_t>(kLastRejectCode))
    return bad("unknown reject reason " + std::to_string(reason));
  if (h.kind != WireKind::reject && reason != 0) return bad("reject reason set on a non-reject message");
  h.reason = static_cast<RejectCode>(reason);
  h.src_rank = static_cast<uint32_t>(get(p + 8, 4));
  h.dst_rank = static_cast<uint32_t>(get(p + 12, 4));
  h.lane = static_cast<uint16_t>(get(p + 16, 2));
  if (get(p + 18, 2) != 0) return bad("reserved field is not zero");
  h.attempt = static_cast<uint32_t>(get(p + 20, 4));
  h.nonce = get(p + 24, 8);
  return h;
}

}  // namespace wireup
