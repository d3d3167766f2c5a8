// Rendering configuration as TOML: the effective values with their sources (`wireup_info
// --config`), and the documented defaults (config/default.toml). Both are valid TOML, so a dump
// can be saved and used as a tuning file.
#include <unistd.h>

#include "config/config.h"

extern char** environ;  // POSIX; read only in process_environment()

namespace wireup::config {

std::string Source::describe() const {
  switch (kind) {
    case Kind::built_in: return "default";
    case Kind::file: return where;
    case Kind::env: return "env " + where;
    case Kind::api: return "api";
  }
  return "?";
}

const Entry* Config::entry(std::string_view name) const {
  for (const Entry& e : entries_)
    if (e.param->name() == name) return &e;
  return nullptr;
}

namespace {

// A dump is pasted into bug reports; the job key authenticates connect requests.
std::string shown(const Entry& e) {
  if (!e.param->secret) return e.param->render(e.value);
  return std::get<uint64_t>(e.value) == 0 ? "\"0x0\"" : "\"<set, hidden>\"";
}

void wrap_comment(std::string& out, std::string_view text, size_t width = 96) {
  std::string line = "#";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    if (line.size() + 1 + word.size() > width && line.size() > 1) {
      out += line + "\n";
      line = "#";
    }
    line += " " + std::string(word);
    pos = end + 1;
  }
  out += line + "\n";
}

}  // namespace

std::string Config::dump() const {
  std::string out = "# wireup effective configuration; file: " + (file_.empty() ? "none" : file_) + "\n";
  std::string_view section;
  for (const Entry& e : entries_) {
    if (e.param->section != section) {
      section = e.param->section;
      out += "\n[" + std::string(section) + "]\n";
    }
    std::string line = std::string(e.param->key) + " = " + shown(e);
    if (line.size() < 40) line.resize(40, ' ');
    out += line + "  # " + e.source.describe() + "\n";
  }
  return out;
}

std::string default_toml() {
  std::string out =
      "# wireup: every configuration key, its default, and what it is for.\n"
      "#\n"
      "# Generated from the parameter table in src/config/params.cc (`wireup_info --default-toml`);\n"
      "# tests/unit/config_table_test.cc fails when this file and the table disagree.\n"
      "# The values below ARE the defaults, so copy only the lines you mean to change into a tuning\n"
      "# file: a copy of the whole file would pin today's defaults forever.\n"
      "#\n"
      "# Precedence: default < this kind of file < API override < environment WIREUP_<SECTION>_<KEY>.\n";
  std::string_view section;
  for (const Param& p : params()) {
    if (p.section != section) {
      section = p.section;
      out += "\n[" + std::string(section) + "]\n";
      for (const Section& s : sections())
        if (s.name == section) wrap_comment(out, s.help);
    }
    out += "\n";
    wrap_comment(out, p.help);
    wrap_comment(out, "type: " + p.expected() + "; env " + p.env_name());
    out += std::string(p.key) + " = " + std::string(p.default_toml) + "\n";
  }
  return out;
}

EnvMap process_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;  // not NAME=VALUE; nothing a user could mean
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

}  // namespace wireup::config
