// Loading wireup's configuration.
//
// Precedence, lowest to highest: built-in default < TOML file < API override < environment.
// The environment always wins so that an operator can retune a job without rebuilding the
// transport that embeds wireup.
//
// The file is the first of: LoadOptions::file, the file named by WIREUP_CONFIG, the first of
// LoadOptions::search_paths that exists (./wireup.toml, then /etc/wireup/wireup.toml). A file
// that is named (by the API or WIREUP_CONFIG) but cannot be read is an error; not finding any
// file on the search path is not, and the dump then says every value is a default.
//
// Nothing falls back silently: an unknown section, key or WIREUP_* variable, a value of the
// wrong type or out of range, a syntax error — each is reported with where it was written
// ("FILE:LINE: key 'engine.connect_window': expected integer in [1, 65536], got string
// \"abc\""), all of them at once, and the load fails.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/params.h"
#include "config/settings.h"

namespace wireup::config {

// Environment variables by name. Injected rather than read from environ inside load() so that
// tests and embedders control exactly what the loader sees.
using EnvMap = std::map<std::string, std::string, std::less<>>;

// This process's environment (the WIREUP_* part is all load() looks at).
EnvMap process_environment();

// A programmatic override, written as the environment would: {"engine.lanes", "4"}.
struct Override {
  std::string name;
  std::string value;
};

struct Source {
  enum class Kind : uint8_t { built_in, file, env, api };
  Kind kind = Kind::built_in;
  std::string where;  // "PATH:LINE" for a file, the variable name for env, "" otherwise
  // "default", "/etc/wireup/wireup.toml:12", "env WIREUP_CM_PORT", "api"
  std::string describe() const;
};

struct Entry {
  const Param* param = nullptr;
  Value value;
  Source source;
};

struct LoadOptions {
  std::string file;  // explicit file; empty = WIREUP_CONFIG, then search_paths
  EnvMap env;
  std::vector<Override> overrides;
  std::vector<std::string> search_paths = {"./wireup.toml", "/etc/wireup/wireup.toml"};
};

class Config {
 public:
  const Settings& settings() const { return settings_; }
  // One entry per parameter, in table order.
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* entry(std::string_view name) const;  // "section.key"
  const std::string& file() const { return file_; }  // "" if no file was read

  // Every key as TOML with its effective value, and a comment saying where it came from.
  std::string dump() const;

 private:
  friend class Loader;
  Settings settings_;
  std::vector<Entry> entries_;
  std::string file_;
};

// The configuration, or a config_error whose detail lists every problem, one per line.
Result<Config> load(const LoadOptions& opts);

// Every problem load(opts) would report, one message per element; empty = valid.
std::vector<std::string> check(const LoadOptions& opts);

// Validate one tuning file on its own (no environment, no overrides): `wireup_info --check`.
std::vector<std::string> check_file(const std::string& path);

// Validate TOML `text` held in memory as if it were a file called `name` (messages say
// "NAME:LINE: ..."). Environment and overrides come from `opts`; its file, WIREUP_CONFIG and
// search path are not consulted. The fuzzer's entry point; no file system involved.
std::vector<std::string> check_string(std::string_view text, std::string_view name,
                                      const LoadOptions& opts = {});

// The table's defaults alone (no file, no environment): the one source of every default.
const Settings& built_in();

// config/default.toml as generated from the table: every key, its help, type and default.
std::string default_toml();

}  // namespace wireup::config
