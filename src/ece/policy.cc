#include "ece/policy.h"

namespace wireup::ece {
namespace {

// "0x%x" without printf: it runs for every negotiated connection.
std::string hex(uint32_t v) {
  char b[10];
  char* p = b + sizeof b;
  do {
    *--p = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  return std::string(p, b + sizeof b);
}

// `why` says what the device or the peer lacked; it is only written out (a string built) when
// the decision is a reject: every connection comes through here, nearly none is refused.
template <class Why>
Decision missing_required(const Policy& p, uint32_t accepted, Outcome fallback, const Why& why) {
  // `required` means ECE itself is required, whatever the option bits.
  if (p.mode == Mode::required && fallback != Outcome::negotiated)
    return Decision{true, 0, Outcome::rejected, "ECE required but not negotiated (" + std::string(why()) + ")"};
  uint32_t missing = p.required & ~accepted;
  if (missing == 0) return Decision{false, accepted, fallback, {}};
  return Decision{true, accepted, Outcome::rejected,
                  "required ECE option(s) " + hex(missing) + " not available (" + std::string(why()) + ")"};
}
auto says(const char* s) {
  return [s] { return s; };
}

}  // namespace

const char* to_string(Mode m) {
  switch (m) {
    case Mode::off: return "off";
    case Mode::auto_: return "auto";
    case Mode::on: return "on";
    case Mode::required: return "required";
  }
  return "?";
}

std::optional<Mode> mode_from_string(const std::string& s) {
  if (s == "off") return Mode::off;
  if (s == "auto") return Mode::auto_;
  if (s == "on") return Mode::on;
  if (s == "required") return Mode::required;
  return std::nullopt;
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::disabled: return "disabled";
    case Outcome::negotiated: return "negotiated";
    case Outcome::unsupported: return "unsupported";
    case Outcome::vendor_mismatch: return "vendor_mismatch";
    case Outcome::rejected: return "rejected";
  }
  return "?";
}

std::optional<prov::Ece> offer(const Policy& p, const std::optional<prov::Ece>& device) {
  if (p.mode == Mode::off || !device || device->vendor_id == 0) return std::nullopt;
  uint32_t options = p.wanted == 0 ? device->options : (device->options & p.wanted);
  // An mlx5 without the ECE capability answers query with options 0: nothing to offer.
  if (options == 0) return std::nullopt;
  uint32_t vendor = p.vendor_id != 0 ? p.vendor_id : device->vendor_id;
  return prov::Ece{vendor, options};
}

Decision on_request(const Policy& p, const std::optional<prov::Ece>& device, const prov::Ece& peer) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  if (!device || device->vendor_id == 0) return missing_required(p, 0, Outcome::unsupported, says("this device has no ECE"));
  if (peer.vendor_id == 0) return missing_required(p, 0, Outcome::unsupported, says("peer offered no ECE"));
  uint32_t our_vendor = p.vendor_id != 0 ? p.vendor_id : device->vendor_id;
  if (peer.vendor_id != our_vendor)
    return missing_required(p, 0, Outcome::vendor_mismatch,
                            [&] { return "peer vendor " + hex(peer.vendor_id) + " != ours " + hex(our_vendor); });
  // The device's options are not applied here: the firmware takes what it can at RTR, and
  // what it took is checked then (on_taken).
  uint32_t asked = p.wanted == 0 ? peer.options : (peer.options & p.wanted);
  if (asked == 0) return missing_required(p, 0, Outcome::unsupported, says("no option to ask for"));
  return missing_required(p, asked, Outcome::negotiated, [&] { return "asked for " + hex(asked); });
}

Decision on_reply(const Policy& p, const std::optional<prov::Ece>& offered, const prov::Ece& reply) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  if (!offered) return missing_required(p, 0, Outcome::unsupported, says("this device has no ECE"));
  if (reply.vendor_id == 0) return missing_required(p, 0, Outcome::unsupported, says("peer accepted no ECE"));
  if (reply.vendor_id != offered->vendor_id)
    return missing_required(p, 0, Outcome::vendor_mismatch,
                            [&] { return "peer vendor " + hex(reply.vendor_id) + " != ours " + hex(offered->vendor_id); });
  // The passive side may only narrow our offer; anything beyond it is not in force.
  uint32_t accepted = reply.options & offered->options;
  // librdmacm's REP always carries the REQ's vendor id with the passive side's options, 0
  // when it set none: "no ECE there" and "nothing accepted" look the same from here.
  if (accepted == 0) return missing_required(p, 0, Outcome::unsupported, says("peer accepted no ECE option"));
  return missing_required(p, accepted, Outcome::negotiated, [&] { return "accepted " + hex(accepted); });
}

Decision on_taken(const Policy& p, uint32_t asked, uint32_t taken) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  auto why = [&] { return "the device took options " + hex(taken) + " of " + hex(asked) + " asked for"; };
  if (taken == 0) return missing_required(p, 0, Outcome::unsupported, why);
  return missing_required(p, taken, Outcome::negotiated, why);
}

}  // namespace wireup::ece
