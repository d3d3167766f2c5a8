// Forced include (-include) for the fuzz build: toml++'s own debug assertions off, as in the
// libtomlplusplus3 that wireup links (Debian builds it with GCC and NDEBUG, where
// TOML_ASSERT_ASSUME is a no-op). The fuzz build keeps NDEBUG undefined for wireup's asserts,
// which would otherwise turn toml++'s internal preconditions on. Known one, found here:
// toml++ 3.3.0 parse_key() asserts on headers like "[,a]" or "[[[1]]]" and then reports the
// syntax error correctly (fixed upstream, marzer/tomlplusplus#301). ASan and UBSan still
// check every byte toml++ touches.
#pragma once
#define TOML_ASSERT(expr) static_assert(true)
