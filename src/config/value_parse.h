// Turning what a user wrote (a TOML node, or an environment/API string) into a checked Value.
// Both return the Value, or "got ..." text for the caller to wrap into an error that names the
// place and the key; out-of-range values are rejected here, never clamped.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <toml++/toml.h>

#include "config/params.h"

namespace wireup::config {

// Either the parsed value or a description of what was found instead ("string \"abc\"").
using Parsed = std::variant<Value, std::string>;

Parsed parse_toml(const Param& p, const toml::node& node);
Parsed parse_text(const Param& p, std::string_view text);

// What a TOML node is, for messages: `string "abc"`, `integer 70000`, `array`, ...
std::string describe(const toml::node& node);

}  // namespace wireup::config
