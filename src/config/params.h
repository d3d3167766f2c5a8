// The parameter table: one row per configurable key, as UCX does it ({name, default, help,
// offset, type}). The row says how to parse a value, which values are legal, what the key is
// for, and where the parsed value lands in Settings. Files, environment, API overrides, the
// dump and config/default.toml are all driven by this one table (params.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/settings.h"

namespace wireup::config {

enum class ParamType : uint8_t {
  boolean,
  integer,      // int64 within [min, max]
  uint32,       // integer or hex string "0x1f"
  uint64,       // integer or hex string; hex is the only way past INT64_MAX in TOML
  real,         // double within [dmin, dmax]
  enumeration,  // one of `choices` (a string, or an integer spelling one, e.g. path_mtu = 4096)
  string,
  string_list,  // TOML array of strings; comma-separated in the environment
  duration_ms,  // integer milliseconds or a string with a unit: "250ms", "2s", "5m"
};

// A parsed value. Enumerations hold the choice's `value`, durations hold milliseconds,
// uint32/uint64 hold their value in the uint64_t alternative.
using Value = std::variant<bool, int64_t, uint64_t, double, std::string, std::vector<std::string>>;

struct EnumChoice {
  std::string_view name;
  int64_t value;
};

struct Param {
  std::string_view section;
  std::string_view key;
  ParamType type;
  // The default as a TOML literal ("64", "\"auto\"", "[]", "\"0x0\""), parsed by the same code
  // as a file so a default can never be something a user could not have written.
  std::string_view default_toml;
  std::string_view help;
  int64_t min = 0;  // integer and duration_ms bounds (inclusive)
  int64_t max = 0;
  double dmin = 0;  // real bounds (inclusive)
  double dmax = 0;
  std::span<const EnumChoice> choices = {};
  bool secret = false;  // the dump shows whether it is set, never the value
  void (*store)(Settings&, const Value&) = nullptr;

  std::string name() const;  // "section.key"
  std::string env_name() const;  // "WIREUP_SECTION_KEY"
  // "integer in [1, 65536]", "one of off|auto|on|required", ...
  std::string expected() const;
  // The value as TOML would spell it (hex for uint32/uint64, choice names for enums).
  std::string render(const Value& v) const;
};

// Every parameter, in section order. The order is the order of the dump and default.toml.
std::span<const Param> params();
// The sections, in order, with a one-line description each.
struct Section {
  std::string_view name;
  std::string_view help;
};
std::span<const Section> sections();

const Param* find_param(std::string_view section, std::string_view key);
// The known "section.key" (or, for a name without a dot, the section) closest to `name` by
// edit distance; "" if nothing is close enough to be a typo.
std::string suggest(std::string_view name);
// Environment variables that start with WIREUP_ but are not parameters (read elsewhere; the
// list is in param.cc).
bool is_reserved_env(std::string_view name);

}  // namespace wireup::config
