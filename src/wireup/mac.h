// The message authentication code of every wireup message: SipHash-2-4 with a 128-bit output
// (libsodium's crypto_shorthash_siphashx24) under a 128-bit key derived from the job key by
// keyed BLAKE2b once per engine. The job key itself never travels: a peer proves it holds the
// key by the tag, and an answer proves it answers one particular request by covering that
// request's nonce (private_data.h).
//
// Why SipHash and not BLAKE2b per message: what is authenticated is 32 bytes of an interactive
// handshake, and SipHash is a PRF made for exactly that (libsodium lists integrity checking in
// interactive protocols among its uses; the kernel keys TCP SYN cookies with it for the same
// reason: a handshake under a flood). Keyed BLAKE2b compresses two 128-byte blocks (key, then
// message) for every tag, several times SipHash's work over 32 bytes, and four MACs per
// connection made them the engine's largest single cost (measured: docs/results.md).
//
// The key is only as strong as the job key it comes from (64 bits, well under the 128 of
// SipHash's key): enough that nothing on the fabric can guess it per message, not a defence
// against an offline search of 2^64 keys. A forged tag passes with probability 2^-128 per try.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "common/status.h"

namespace wireup {

inline constexpr size_t kMacTagSize = 16;

class MacKey {
 public:
  // Initialises libsodium (once per process; thread-safe) and derives the key.
  static Result<MacKey> derive(uint64_t job_key);
  ~MacKey();
  MacKey(const MacKey& o) = default;
  MacKey& operator=(const MacKey& o) = default;

  std::array<uint8_t, kMacTagSize> tag(std::span<const uint8_t> message) const;
  // Constant time in the tag's bytes.
  bool verify(std::span<const uint8_t> message, std::span<const uint8_t, kMacTagSize> tag) const;

 private:
  MacKey() = default;
  std::array<uint8_t, 16> key_{};  // crypto_shorthash_siphashx24_KEYBYTES (static_assert in mac.cc)
};

// A 64-bit value no earlier engine of this process or of any other is likely to have used:
// libsodium's random generator, read once per engine (nonces are this base plus a counter).
uint64_t random_nonce_base();

}  // namespace wireup
