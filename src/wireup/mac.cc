#include "wireup/mac.h"

#include <sodium.h>

namespace wireup {
static_assert(sizeof(MacKey) == crypto_shorthash_siphashx24_KEYBYTES, "the key is SipHash's 128 bits and nothing else");
namespace {

// Domain separation: the same job key used for anything else yields another key (and v3's
// SipHash key is not v2's BLAKE2b key: wire version 3).
constexpr unsigned char kPersonal[crypto_generichash_blake2b_PERSONALBYTES] = {'w', 'i', 'r', 'e', 'u', 'p', '-', 'm',
                                                                               'a', 'c', '-', 'v', '3', 0,   0,   0};
static_assert(kMacTagSize == crypto_shorthash_siphashx24_BYTES, "the tag is SipHash-2-4's 128-bit output");

}  // namespace

Result<MacKey> MacKey::derive(uint64_t job_key) {
  if (sodium_init() < 0)
    return Error::make(ErrorCode::system_error, "sodium_init", "libsodium could not initialise (no entropy source?)");
  unsigned char in[8];
  for (int i = 0; i < 8; ++i) in[i] = static_cast<unsigned char>(job_key >> (8 * i));
  MacKey k;
  if (crypto_generichash_blake2b_salt_personal(k.key_.data(), k.key_.size(), in, sizeof in, nullptr, 0, nullptr,
                                               kPersonal) != 0)
    return Error::make(ErrorCode::system_error, "crypto_generichash_blake2b_salt_personal", "key derivation failed");
  sodium_memzero(in, sizeof in);
  return k;
}

MacKey::~MacKey() { sodium_memzero(key_.data(), key_.size()); }

std::array<uint8_t, kMacTagSize> MacKey::tag(std::span<const uint8_t> message) const {
  std::array<uint8_t, kMacTagSize> t{};
  // Cannot fail: it has no failure path (returns 0 always).
  (void)crypto_shorthash_siphashx24(t.data(), message.data(), message.size(), key_.data());
  return t;
}

bool MacKey::verify(std::span<const uint8_t> message, std::span<const uint8_t, kMacTagSize> given) const {
  const auto t = tag(message);
  static_assert(kMacTagSize == 16);
  return crypto_verify_16(t.data(), given.data()) == 0;
}

uint64_t random_nonce_base() {
  uint64_t v = 0;
  randombytes_buf(&v, sizeof v);
  return v;
}

}  // namespace wireup
