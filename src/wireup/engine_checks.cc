#include "wireup/engine_checks.h"

#include "wireup/pair_table.h"

namespace wireup {
namespace {

Error bad_option(const std::string& what) {
  return Error::make(ErrorCode::invalid_argument, "Engine::create", what);
}

}  // namespace

Result<cm::Profile> make_profile(const EngineOptions& o) {
  auto qp = qp::CheckedOverrides::check(o.qp);
  if (!qp) return qp.error();
  cm::Profile pr;
  prov::SockAddr src = o.listen_addr;
  src.set_port(0);
  pr.local = src;
  pr.resolve_addr_timeout_ms = o.resolve_addr_timeout_ms;
  pr.resolve_route_timeout_ms = o.resolve_route_timeout_ms;
  pr.tos = o.tos;
  pr.ack_timeout = o.ack_timeout;
  pr.ece = o.ece;
  pr.qp = *qp;
  pr.param = o.param;
  return pr;
}

Status check_options(const EngineOptions& o, const qp::QpFactory& factory) {
  if (o.nranks == 0) return bad_option("nranks is 0");
  if (o.rank >= o.nranks) return bad_option("rank " + std::to_string(o.rank) + " >= nranks " + std::to_string(o.nranks));
  if (o.backlog <= 0) return bad_option("backlog " + std::to_string(o.backlog) + " is not positive");
  if (o.wireup_timeout <= Nanos{0}) return bad_option("wireup_timeout is not positive");
  if (o.resolve_addr_timeout_ms <= 0 || o.resolve_route_timeout_ms <= 0)
    return bad_option("resolve_addr/route timeouts must be positive");
  if (o.lanes == 0 || o.lanes > 65535) return bad_option("lanes " + std::to_string(o.lanes) + " outside [1, 65535]");
  if (uint64_t{o.nranks - 1} * o.lanes > kMaxPairs)
    return bad_option(std::to_string(o.nranks) + " ranks x " + std::to_string(o.lanes) + " lanes: more than " +
                      std::to_string(kMaxPairs) + " pairs in one process");
  if (o.job_key == 0) return bad_option("job_key is 0: every rank of a job must share one non-zero key");
  if (o.connect_window == 0) return bad_option("connect_window is 0");
  if (o.qp_window == 0) return bad_option("qp_window is 0");
  if (o.max_attempts == 0) return bad_option("max_attempts is 0");
  // A result counts its attempts in 16 bits (ConnResult): more could not be reported.
  if (o.max_attempts > 65535)
    return bad_option("max_attempts " + std::to_string(o.max_attempts) + " above 65535 (a result counts attempts in 16 bits)");
  if (o.incast.on && (o.incast.burst == 0 || o.incast.rate == 0)) return bad_option("incast pacing with a zero burst or rate");
  if (o.backoff_jitter < 0 || o.backoff_jitter > 1) return bad_option("backoff_jitter outside [0, 1]");
  if (o.listen_addr.empty()) return bad_option("listen_addr is not set");
  if (o.listen_addr.family() == AF_INET && o.listen_addr.ipv4_addr() == 0)
    return bad_option("listen_addr 0.0.0.0: peers need a specific address to reach (the device's IP)");
  if (!o.on_demand && (o.eager_ring != 0 || !o.eager_peers.empty()))
    return bad_option("eager_ring / eager_peers are for on_demand mode (bulk connects every peer)");
  if (!factory) return bad_option("no QP factory");
  if (o.rails.size() > kMaxRails)
    return bad_option(std::to_string(o.rails.size()) + " rails, at most " + std::to_string(kMaxRails));
  if (!o.rails.empty() && o.rails[0].addr.to_string() != o.listen_addr.to_string())
    return bad_option("rail 0 (" + o.rails[0].addr.to_string() + ") is not listen_addr (" + o.listen_addr.to_string() + ")");
  for (size_t r = 0; r < o.rails.size(); ++r)
    if (o.rails[r].addr.empty() || (o.rails[r].addr.family() == AF_INET && o.rails[r].addr.ipv4_addr() == 0))
      return bad_option("rail " + std::to_string(r) + ": no specific address (peers need the device's IP)");
  return Status::ok();  // the QP overrides: make_profile() checks them, once for every QP
}

}  // namespace wireup
