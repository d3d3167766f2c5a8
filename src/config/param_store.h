// How a parsed Value lands in a Settings field: one overload per field type, selected at
// compile time from the member pointers in the table row, so a row whose type does not match
// its field fails to compile instead of storing garbage.
#pragma once

#include <type_traits>
#include <variant>

#include "config/params.h"

namespace wireup::config::detail {

inline void assign(bool& d, const Value& v) { d = std::get<bool>(v); }
inline void assign(int& d, const Value& v) { d = static_cast<int>(std::get<int64_t>(v)); }
inline void assign(uint32_t& d, const Value& v) { d = static_cast<uint32_t>(std::get<uint64_t>(v)); }
inline void assign(uint64_t& d, const Value& v) { d = std::get<uint64_t>(v); }
inline void assign(double& d, const Value& v) { d = std::get<double>(v); }
inline void assign(std::string& d, const Value& v) { d = std::get<std::string>(v); }
inline void assign(std::vector<std::string>& d, const Value& v) {
  d = std::get<std::vector<std::string>>(v);
}
inline void assign(milliseconds& d, const Value& v) { d = milliseconds(std::get<int64_t>(v)); }
template <class E>
  requires std::is_enum_v<E>
void assign(E& d, const Value& v) {
  d = static_cast<E>(std::get<int64_t>(v));
}

template <auto Section, auto Member>
void store(Settings& s, const Value& v) {
  assign((s.*Section).*Member, v);
}

}  // namespace wireup::config::detail

// STORE(engine, connect_window) -> the store function for Settings::engine.connect_window.
#define WIREUP_STORE(sec, field) \
  (&::wireup::config::detail::store<&Settings::sec, &decltype(Settings::sec)::field>)
