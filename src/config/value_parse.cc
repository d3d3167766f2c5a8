#include "config/value_parse.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>

namespace wireup::config {
namespace {

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The whole string must be the number: "12abc" is an error, not 12.
template <class N>
bool parse_number(std::string_view s, N& out, int base = 10) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_real(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_unsigned(std::string_view s, uint64_t& out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return parse_number(s.substr(2), out, 16);
  return parse_number(s, out);
}

// "250", "250ms", "2s", "5m" -> milliseconds.
bool parse_duration(std::string_view s, int64_t& ms) {
  int64_t scale = 1;
  if (s.ends_with("ms")) {
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    s.remove_suffix(1), scale = 1000;
  } else if (s.ends_with("m")) {
    s.remove_suffix(1), scale = 60 * 1000;
  }
  int64_t n = 0;
  if (!parse_number(trim(s), n) || n > std::numeric_limits<int64_t>::max() / scale ||
      n < std::numeric_limits<int64_t>::min() / scale)
    return false;  // n * scale would overflow (negative ones too: "-9223372036854775808s")
  ms = n * scale;
  return true;
}

Parsed ranged_int(const Param& p, int64_t v, const std::string& got) {
  if (v < p.min || v > p.max) return got;
  return Value{v};
}

Parsed ranged_unsigned(const Param& p, uint64_t v, const std::string& got) {
  if (p.type == ParamType::uint32 && v > std::numeric_limits<uint32_t>::max()) return got;
  return Value{v};
}

Parsed ranged_real(const Param& p, double v, const std::string& got) {
  if (!(v >= p.dmin && v <= p.dmax)) return got;  // also rejects NaN
  return Value{v};
}

Parsed choice(const Param& p, std::string_view name, const std::string& got) {
  for (const EnumChoice& c : p.choices)
    if (c.name == name) return Value{c.value};
  return got;
}

}  // namespace

std::string describe(const toml::node& node) {
  if (auto s = node.as_string()) return "string " + quote(s->get());
  if (auto i = node.as_integer()) return "integer " + std::to_string(i->get());
  if (auto f = node.as_floating_point()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", f->get());
    return std::string("float ") + buf;
  }
  if (auto b = node.as_boolean()) return std::string("boolean ") + (b->get() ? "true" : "false");
  if (node.is_array()) return "array";
  if (node.is_table()) return "table";
  return "date/time";
}

Parsed parse_toml(const Param& p, const toml::node& node) {
  const std::string got = describe(node);
  switch (p.type) {
    case ParamType::boolean:
      if (auto b = node.as_boolean()) return Value{b->get()};
      return got;
    case ParamType::integer:
      if (auto i = node.as_integer()) return ranged_int(p, i->get(), got);
      return got;
    case ParamType::uint32:
    case ParamType::uint64: {
      if (auto i = node.as_integer())
        return i->get() < 0 ? Parsed{got} : ranged_unsigned(p, static_cast<uint64_t>(i->get()), got);
      uint64_t v = 0;
      if (auto s = node.as_string(); s && parse_unsigned(trim(s->get()), v))
        return ranged_unsigned(p, v, got);
      return got;
    }
    case ParamType::real:
      if (auto f = node.as_floating_point()) return ranged_real(p, f->get(), got);
      if (auto i = node.as_integer()) return ranged_real(p, static_cast<double>(i->get()), got);
      return got;
    case ParamType::enumeration:
      if (auto s = node.as_string()) return choice(p, s->get(), got);
      // path_mtu = 4096 reads naturally without quotes; accept an integer that names a choice.
      if (auto i = node.as_integer()) return choice(p, std::to_string(i->get()), got);
      return got;
    case ParamType::string:
      if (auto s = node.as_string()) return Value{s->get()};
      return got;
    case ParamType::string_list: {
      auto arr = node.as_array();
      if (arr == nullptr) return got;
      std::vector<std::string> items;
      for (size_t i = 0; i < arr->size(); ++i) {
        auto s = arr->get(i)->as_string();
        if (s == nullptr) return "array whose element " + std::to_string(i) + " is " + describe(*arr->get(i));
        items.push_back(s->get());
      }
      return Value{std::move(items)};
    }
    case ParamType::duration_ms: {
      if (auto i = node.as_integer()) return ranged_int(p, i->get(), got);
      int64_t ms = 0;
      if (auto s = node.as_string(); s && parse_duration(trim(s->get()), ms))
        return ranged_int(p, ms, got);
      return got;
    }
  }
  return got;
}

Parsed parse_text(const Param& p, std::string_view raw) {
  const std::string got = quote(raw);
  std::string_view text = trim(raw);
  switch (p.type) {
    case ParamType::boolean: {
      const std::string l = lower(text);
      if (l == "true" || l == "1" || l == "yes" || l == "on") return Value{true};
      if (l == "false" || l == "0" || l == "no" || l == "off") return Value{false};
      return got;
    }
    case ParamType::integer: {
      int64_t v = 0;
      if (!parse_number(text, v)) return got;
      return ranged_int(p, v, got);
    }
    case ParamType::uint32:
    case ParamType::uint64: {
      uint64_t v = 0;
      if (!parse_unsigned(text, v)) return got;
      return ranged_unsigned(p, v, got);
    }
    case ParamType::real: {
      double v = 0;
      if (!parse_real(text, v)) return got;
      return ranged_real(p, v, got);
    }
    case ParamType::enumeration: return choice(p, text, got);
    case ParamType::string: return Value{std::string(raw)};
    case ParamType::string_list: {
      std::vector<std::string> items;
      if (text.empty()) return Value{items};
      while (true) {
        size_t comma = text.find(',');
        std::string_view item = trim(text.substr(0, comma));
        if (item.empty()) return got;  // "a,,b" is a typo, not a list with an empty name
        items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
      }
      return Value{std::move(items)};
    }
    case ParamType::duration_ms: {
      int64_t ms = 0;
      if (!parse_duration(text, ms)) return got;
      return ranged_int(p, ms, got);
    }
  }
  return got;
}

}  // namespace wireup::config
