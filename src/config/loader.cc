// load() and check(): defaults, then the file, then API overrides, then the environment, with
// every problem collected rather than stopping at the first, so that one run of
// `wireup_info --check` shows a user everything to fix.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "config/value_parse.h"

namespace wireup::config {

class Loader {
 public:
  explicit Loader(const LoadOptions& opts) : opts_(opts) {}
  // TOML text in memory stands in for the file and is called `name` in messages.
  Loader(const LoadOptions& opts, std::string_view text, std::string name)
      : opts_(opts), text_(text), text_name_(std::move(name)), in_memory_(true) {}

  void run() {
    set_defaults();
    if (in_memory_) {
      read_text();
    } else if (const std::string path = pick_file(); !path.empty()) {
      read_file(path);
    }
    apply_overrides();
    apply_env();
    cross_check();
    for (const Entry& e : cfg_.entries_) e.param->store(cfg_.settings_, e.value);
  }

  std::vector<std::string> errors() const { return errors_; }
  Config take() { return std::move(cfg_); }

 private:
  Entry& entry_of(const Param* p) {
    return cfg_.entries_[static_cast<size_t>(p - params().data())];
  }

  void set_defaults() {
    for (const Param& p : params()) {
      Entry e{&p, Value{false}, Source{}};
      // A default is parsed exactly like a file value, so it can only be something legal.
      toml::parse_result doc = toml::parse("v = " + std::string(p.default_toml));
      Parsed parsed = parse_toml(p, *doc.get("v"));
      if (auto* v = std::get_if<Value>(&parsed)) {
        e.value = *v;
      } else {
        errors_.push_back("built-in default of '" + p.name() + "' is invalid: expected " +
                          p.expected() + ", got " + std::get<std::string>(parsed));
      }
      cfg_.entries_.push_back(std::move(e));
    }
  }

  std::string pick_file() {
    if (!opts_.file.empty()) return readable(opts_.file, "config file given by the API");
    if (auto it = opts_.env.find("WIREUP_CONFIG"); it != opts_.env.end())
      return readable(it->second, "WIREUP_CONFIG=" + it->second);
    for (const std::string& path : opts_.search_paths) {
      std::error_code ec;
      if (std::filesystem::exists(path, ec)) return readable(path, "config file found on the search path");
    }
    return {};
  }

  // A named file that cannot be opened is an error, never "no file, use defaults".
  std::string readable(const std::string& path, const std::string& who) {
    std::ifstream in(path);
    if (in) return path;
    errors_.push_back(path + ": cannot read (" + who + "): " + std::strerror(errno));
    return {};
  }

  void read_file(const std::string& path) {
    cfg_.file_ = path;
    read_toml(path, [&] { return toml::parse_file(path); });
  }

  void read_text() {
    cfg_.file_ = text_name_;
    read_toml(text_name_, [&] { return toml::parse(text_, text_name_); });
  }

  // `parse` returns the document's root table or throws toml::parse_error.
  template <class ParseFn>
  void read_toml(const std::string& path, ParseFn parse) {
    toml::table root;
    try {
      root = parse();
    } catch (const toml::parse_error& e) {
      const toml::source_position pos = e.source().begin;
      errors_.push_back(path + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                        ": TOML syntax error: " + std::string(e.description()));
      return;
    }
    // toml::table iterates in key order; report in file order instead.
    std::vector<std::pair<uint32_t, std::string>> found;
    auto at = [&](const toml::node& n) { return path + ":" + std::to_string(n.source().begin.line); };
    for (auto&& [sec_key, sec_node] : root) {
      const std::string sec(sec_key.str());
      const toml::table* sec_table = sec_node.as_table();
      if (sec_table == nullptr) {
        found.emplace_back(sec_node.source().begin.line,
                           at(sec_node) + ": key '" + sec + "' is outside any section" + home_of(sec));
        continue;
      }
      if (!known_section(sec)) {
        found.emplace_back(sec_key.source().begin.line, path + ":" + std::to_string(sec_key.source().begin.line) +
                           ": unknown section '" + sec + "'" + did_you_mean(suggest(sec)));
        continue;
      }
      for (auto&& [key, node] : *sec_table) {
        const std::string name = sec + "." + std::string(key.str());
        const Param* p = find_param(sec, key.str());
        const uint32_t line = key.source().begin.line;
        const std::string where = path + ":" + std::to_string(line);
        if (p == nullptr) {
          found.emplace_back(line, where + ": unknown key '" + name + "'" + did_you_mean(suggest(name)));
          continue;
        }
        Parsed parsed = parse_toml(*p, node);
        if (auto* v = std::get_if<Value>(&parsed)) {
          entry_of(p).value = std::move(*v);
          entry_of(p).source = Source{Source::Kind::file, where};
        } else {
          found.emplace_back(line, where + ": " + bad_value(*p, std::get<std::string>(parsed)));
        }
      }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [line, msg] : found) errors_.push_back(std::move(msg));
  }

  void apply_overrides() {
    for (const Override& o : opts_.overrides) {
      const size_t dot = o.name.find('.');
      const Param* p = dot == std::string::npos
                           ? nullptr
                           : find_param(std::string_view(o.name).substr(0, dot),
                                        std::string_view(o.name).substr(dot + 1));
      if (p == nullptr) {
        errors_.push_back("api: unknown key '" + o.name + "'" + did_you_mean(suggest(o.name)));
        continue;
      }
      set_text(*p, o.value, Source{Source::Kind::api, ""}, "api: ");
    }
  }

  void apply_env() {
    for (const auto& [name, value] : opts_.env) {
      if (!name.starts_with("WIREUP_") || is_reserved_env(name)) continue;
      const Param* p = nullptr;
      for (const Param& q : params())
        if (q.env_name() == name) p = &q;
      if (p == nullptr) {
        errors_.push_back("env " + name + ": unknown variable" + did_you_mean_env(name));
        continue;
      }
      set_text(*p, value, Source{Source::Kind::env, name}, "env " + name + ": ");
    }
  }

  void set_text(const Param& p, const std::string& text, Source src, const std::string& prefix) {
    Parsed parsed = parse_text(p, text);
    if (auto* v = std::get_if<Value>(&parsed)) {
      entry_of(&p).value = std::move(*v);
      entry_of(&p).source = std::move(src);
    } else {
      errors_.push_back(prefix + bad_value(p, std::get<std::string>(parsed)));
    }
  }

  // Rules between keys. Checked on the effective values, naming where each came from.
  void cross_check() {
    const Entry& lo = entry_of(find_param("engine", "backoff_initial_ms"));
    const Entry& hi = entry_of(find_param("engine", "backoff_max_ms"));
    if (std::get<int64_t>(hi.value) < std::get<int64_t>(lo.value))
      errors_.push_back("engine.backoff_max_ms = " + lo.param->render(hi.value) + " (" +
                        hi.source.describe() + ") is below engine.backoff_initial_ms = " +
                        lo.param->render(lo.value) + " (" + lo.source.describe() + ")");
    const Entry& offered = entry_of(find_param("ece", "options"));
    const Entry& required = entry_of(find_param("ece", "required_options"));
    const uint64_t o = std::get<uint64_t>(offered.value), r = std::get<uint64_t>(required.value);
    if (o != 0 && (r & ~o) != 0)
      errors_.push_back("ece.required_options = " + required.param->render(required.value) + " (" +
                        required.source.describe() + ") asks for bits that ece.options = " +
                        offered.param->render(offered.value) + " (" + offered.source.describe() +
                        ") does not offer");
  }

  static std::string bad_value(const Param& p, const std::string& got) {
    return "key '" + p.name() + "': expected " + p.expected() + ", got " + got;
  }
  static bool known_section(std::string_view s) {
    return std::any_of(sections().begin(), sections().end(), [&](const Section& x) { return x.name == s; });
  }
  static std::string home_of(const std::string& key) {
    for (const Param& p : params())
      if (p.key == key) return " (it belongs under [" + std::string(p.section) + "])";
    return "; every key lives under a [section]";
  }
  static std::string did_you_mean(const std::string& s) {
    return s.empty() ? "" : " (did you mean '" + s + "'?)";
  }
  static std::string did_you_mean_env(const std::string& name) {
    // Compare as "section.key" so one typo counts once, not per underscore.
    std::string dotted;
    for (char c : name.substr(7)) dotted += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const Section& s : sections()) {
      const std::string prefix = std::string(s.name) + "_";
      if (dotted.starts_with(prefix)) {
        dotted[prefix.size() - 1] = '.';
        break;
      }
    }
    if (dotted.find('.') == std::string::npos) return "";  // no known section: no good guess
    const std::string pick = suggest(dotted);
    const size_t dot = pick.find('.');
    const Param* p = dot == std::string::npos ? nullptr : find_param(pick.substr(0, dot), pick.substr(dot + 1));
    return p == nullptr ? "" : " (did you mean " + p->env_name() + "?)";
  }

  const LoadOptions& opts_;
  std::string_view text_;
  std::string text_name_;
  bool in_memory_ = false;
  Config cfg_;
  std::vector<std::string> errors_;
};

Result<Config> load(const LoadOptions& opts) {
  Loader loader(opts);
  loader.run();
  std::vector<std::string> errs = loader.errors();
  if (errs.empty()) return loader.take();
  std::string detail = std::to_string(errs.size()) + (errs.size() == 1 ? " error" : " errors");
  for (const std::string& e : errs) detail += "\n  " + e;
  return Error::make(ErrorCode::config_error, "wireup config", detail);
}

std::vector<std::string> check(const LoadOptions& opts) {
  Loader loader(opts);
  loader.run();
  return loader.errors();
}

std::vector<std::string> check_file(const std::string& path) {
  LoadOptions opts;
  opts.file = path;
  opts.search_paths.clear();
  return check(opts);
}

std::vector<std::string> check_string(std::string_view text, std::string_view name, const LoadOptions& opts) {
  Loader loader(opts, text, std::string(name));
  loader.run();
  return loader.errors();
}

const Settings& built_in() {
  static const Settings s = [] {
    LoadOptions o;
    o.search_paths.clear();  // no file, no environment: the table alone
    auto c = load(o);
    // The table's own defaults failing to load is a bug of the table (tests catch it).
    return c ? c->settings() : Settings{};
  }();
  return s;
}

}  // namespace wireup::config
