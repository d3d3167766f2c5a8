#include "host/local_rank.h"

#include <charconv>
#include <cstdlib>

namespace wireup::host {

GetEnv process_getenv() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Result<int> parse_local_rank(const std::string& what, const std::string& text) {
  int n = -1;
  const char* b = text.data();
  const char* e = b + text.size();
  // from_chars takes a leading '-': refuse signs and blanks before it sees them.
  const bool digits_only = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto [end, ec] = std::from_chars(b, e, n);
  if (!digits_only || ec != std::errc() || end != e || n > kMaxLocalRank)
    return Error::make(ErrorCode::config_error, "local rank",
                       what + "=\"" + text + "\" is not a local rank (expected an integer 0.." +
                           std::to_string(kMaxLocalRank) + ")");
  return n;
}

Result<LocalRank> resolve_local_rank(int explicit_rank, const char* explicit_source, int config_rank,
                                     const GetEnv& env) {
  if (explicit_rank >= 0) return LocalRank{explicit_rank, explicit_source};
  if (config_rank >= 0) return LocalRank{config_rank, "device.local_rank"};
  for (const char* var : kLocalRankVars) {
    const char* v = env(var);
    if (v == nullptr) continue;
    Result<int> n = parse_local_rank(std::string("environment variable ") + var, v);
    if (!n) return n.error();
    return LocalRank{*n, std::string("env ") + var};
  }
  return LocalRank{-1, "none: no explicit local rank, device.local_rank or launcher variable"};
}

}  // namespace wireup::host
