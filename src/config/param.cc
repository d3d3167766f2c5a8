// Naming, describing and rendering parameters; lookups and "did you mean" over the table.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "config/params.h"

namespace wireup::config {

std::string Param::name() const { return std::string(section) + "." + std::string(key); }

std::string Param::env_name() const {
  std::string n = "WIREUP_" + std::string(section) + "_" + std::string(key);
  for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return n;
}

namespace {

std::string choice_list(std::span<const EnumChoice> choices) {
  std::string s;
  for (const EnumChoice& c : choices) s += (s.empty() ? "" : "|") + std::string(c.name);
  return s;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// TOML basic string: quote and escape what TOML requires.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string Param::expected() const {
  switch (type) {
    case ParamType::boolean: return "boolean (true or false)";
    case ParamType::integer:
      return "integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    case ParamType::uint32: return "unsigned 32-bit integer (decimal, or a hex string like \"0x1f\")";
    case ParamType::uint64: return "unsigned 64-bit integer (decimal, or a hex string like \"0x1f\")";
    case ParamType::real: {
      char buf[96];
      std::snprintf(buf, sizeof buf, "number in [%g, %g]", dmin, dmax);
      return buf;
    }
    case ParamType::enumeration: return "one of " + choice_list(choices);
    case ParamType::string: return "string";
    case ParamType::string_list: return "list of strings";
    case ParamType::duration_ms:
      return "duration in [" + std::to_string(min) + ", " + std::to_string(max) +
             "] ms (integer ms, or a string like \"250ms\", \"2s\", \"5m\")";
  }
  return "?";
}

std::string Param::render(const Value& v) const {
  switch (type) {
    case ParamType::boolean: return std::get<bool>(v) ? "true" : "false";
    case ParamType::integer:
    case ParamType::duration_ms: return std::to_string(std::get<int64_t>(v));
    case ParamType::uint32:
    case ParamType::uint64: return quoted(hex(std::get<uint64_t>(v)));
    case ParamType::real: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", std::get<double>(v));
      std::string s = buf;
      // Keep it a TOML float: "1" would read back as an integer.
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case ParamType::enumeration: {
      for (const EnumChoice& c : choices)
        if (c.value == std::get<int64_t>(v)) return quoted(std::string(c.name));
      return "\"?\"";
    }
    case ParamType::string: return quoted(std::get<std::string>(v));
    case ParamType::string_list: {
      std::string s = "[";
      for (const std::string& item : std::get<std::vector<std::string>>(v))
        s += (s.size() > 1 ? ", " : "") + quoted(item);
      return s + "]";
    }
  }
  return "?";
}

const Param* find_param(std::string_view section, std::string_view key) {
  for (const Param& p : params())
    if (p.section == section && p.key == key) return &p;
  return nullptr;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string suggest(std::string_view name) {
  // A typo is a few edits; anything further is a different word and a suggestion would mislead.
  size_t best = std::max<size_t>(2, name.size() / 4) + 1;
  std::string pick;
  auto consider = [&](std::string candidate) {
    size_t d = edit_distance(name, candidate);
    if (d < best) best = d, pick = std::move(candidate);
  };
  if (name.find('.') == std::string_view::npos) {
    for (const Section& s : sections()) consider(std::string(s.name));
  } else {
    for (const Param& p : params()) consider(p.name());
  }
  return pick;
}

bool is_reserved_env(std::string_view name) {
  // WIREUP_* variables that are not parameters, read by other parts of the project. Every
  // such variable must be listed here, or a config load reports it as unknown.
  //   WIREUP_CONFIG        the tuning file to read (loader.cc)
  //   WIREUP_LOG           the log level before any config exists (common/log.cc)
  //   WIREUP_IN_VM, WIREUP_VM_*  the soft-RoCE VM harness (scripts/vm/README.md)
  //   WIREUP_JOBS          build/test parallelism of the project's scripts (scripts/*.sh)
  //   WIREUP_SYSFS_ROOT    a captured sysfs tree instead of /sys (src/host, wireup_info --sysfs)
  //   WIREUP_PMIX_*        the PMIx bootstrap (src/bootstrap/pmix_session.h)
  //   WIREUP_SLURM_*       Slurm in the pair (scripts/vm/slurm-up.sh)
  return name == "WIREUP_CONFIG" || name == "WIREUP_LOG" || name == "WIREUP_IN_VM" || name == "WIREUP_JOBS" ||
         name == "WIREUP_SYSFS_ROOT" || name.starts_with("WIREUP_VM_") || name.starts_with("WIREUP_PMIX_") ||
         name.starts_with("WIREUP_SLURM_");
}

}  // namespace wireup::config
