// The message authentication code of every wireup message: keyed BLAKE2b with a 128-bit tag
// (libsodium's crypto_generichash), under a key derived from the job key. The job key itself
// never travels: a peer proves it holds the key by the tag, and an answer proves it answers
// one particular request by covering that request's nonce (private_data.h).
//
// The key is only as strong as the job key it comes from (64 bits): enough that nothing on
// the fabric can guess it per message, not a defence against an offline search of 2^64 keys.
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
  std::array<uint8_t, 32> key_{};
};

// A 64-bit value no earlier engine of this process or of any other is likely to have used:
// libsodium's random generator, read once per engine (nonces are this base plus a counter).
uint64_t random_nonce_base();

}  // namespace wireup
