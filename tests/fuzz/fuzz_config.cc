// libFuzzer target: the configuration loader on a tuning file, the environment and API
// overrides, all at once (config::check_string: no file system involved).
//
// Input: TOML text, then optionally a NUL byte and NUL-separated NAME=VALUE entries, the
// layout of /proc/PID/environ. A NAME with a dot ("engine.lanes") is an API override, any
// other NAME an environment variable (WIREUP_* ones are parameters, the rest are ignored).
// Properties: no crash, no UB, no leak, no hang; every problem is reported as a non-empty
// message.
//
// One known bug of the TOML parser is stepped around rather than re-found on every run:
// toml++ 3.3.0 (Debian 12's libtomlplusplus3) reaches TOML_UNREACHABLE in
// is_non_ascii_horizontal_whitespace() for U+00A1..U+0499, U+2C5E..U+2FFF, U+3001..U+3057
// and U+FB26..U+FEFE wherever it tests for whitespace (marzer/tomlplusplus#190, #295; fixed
// upstream by #305). The GCC-built library wireup links reports a clean syntax error for
// every such code point (checked over the whole BMP in nine positions), so TOML text holding
// one is not handed to the parser here; every other byte sequence, other non-ASCII text and
// invalid UTF-8 included, is.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "fuzz_check.h"

namespace {

// Environment and API names are short and API overrides few in real life; more only spend
// the run in the "did you mean" edit distance (name length x every parameter, per unknown
// name). TOML keys keep any length and number.
constexpr size_t kNameMax = 64;
constexpr size_t kOverridesMax = 4;

void add_entry(std::string_view entry, wireup::config::LoadOptions& opts) {
  const size_t eq = entry.find('=');
  std::string name(entry.substr(0, std::min(eq, kNameMax)));
  std::string value(eq == std::string_view::npos ? std::string_view() : entry.substr(eq + 1));
  if (name.find('.') != std::string::npos) {
    if (opts.overrides.size() < kOverridesMax) opts.overrides.push_back({std::move(name), std::move(value)});
  } else {
    opts.env.insert_or_assign(std::move(name), std::move(value));
  }
}

// True if `text` holds, at any byte offset, the UTF-8 encoding of a code point that sends
// toml++ 3.3.0 to TOML_UNREACHABLE (the table below, computed from its lookup function).
bool has_toml_unreachable_trigger(std::string_view text) {
  constexpr std::pair<unsigned, unsigned> kBad[] = {
      {0xA1, 0x499}, {0x2C5E, 0x2FFF}, {0x3001, 0x3057}, {0xFB26, 0xFEFE}};
  auto cont = [&](size_t i) { return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    unsigned cp = 0;
    if ((b0 & 0xE0) == 0xC0 && cont(i + 1)) {
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
    } else if ((b0 & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      cp = ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
    }
    for (const auto& [lo, hi] : kBad)
      if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view toml = in.substr(0, nul);
  if (has_toml_unreachable_trigger(toml)) return -1;  // not kept in the corpus either

  wireup::config::LoadOptions opts;
  opts.search_paths.clear();
  if (nul != std::string_view::npos) {
    std::string_view rest = in.substr(nul + 1);
    while (!rest.empty()) {
      const size_t end = rest.find('\0');
      if (end != 0) add_entry(rest.substr(0, end), opts);
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }

  for (const std::string& msg : wireup::config::check_string(toml, "fuzz.toml", opts)) FUZZ_CHECK(!msg.empty());
  return 0;
}
