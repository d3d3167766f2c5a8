#include "wireup/options.h"

namespace wireup {
namespace {

uint32_t mtu_enum(config::PathMtu m) {
  switch (m) {
    case config::PathMtu::mtu_256: return 1;
    case config::PathMtu::mtu_512: return 2;
    case config::PathMtu::mtu_1024: return 3;
    case config::PathMtu::mtu_2048: return 4;
    case config::PathMtu::mtu_4096: return 5;
    case config::PathMtu::automatic: break;
  }
  return 0;
}

ece::Mode ece_mode(config::EceMode m) {
  switch (m) {
    case config::EceMode::off: return ece::Mode::off;
    case config::EceMode::automatic: return ece::Mode::auto_;
    case config::EceMode::on: return ece::Mode::on;
    case config::EceMode::required: return ece::Mode::required;
  }
  return ece::Mode::auto_;
}

}  // namespace

prov::QpCaps qp_caps(const config::Settings& s) {
  prov::QpCaps caps;
  caps.max_send_wr = static_cast<uint32_t>(s.qp.max_send_wr);
  caps.max_recv_wr = static_cast<uint32_t>(s.qp.max_recv_wr);
  caps.max_send_sge = static_cast<uint32_t>(s.qp.max_send_sge);
  caps.max_recv_sge = static_cast<uint32_t>(s.qp.max_recv_sge);
  caps.max_inline_data = static_cast<uint32_t>(s.qp.max_inline_data);
  return caps;
}

EngineOptions engine_defaults() { return engine_options(config::built_in(), 0, 0, prov::SockAddr()); }

EngineOptions engine_options(const config::Settings& s, uint32_t rank, uint32_t nranks,
                             const prov::SockAddr& listen, uint64_t job_key) {
  EngineOptions o;
  o.rank = rank;
  o.nranks = nranks;
  o.lanes = static_cast<uint32_t>(s.engine.lanes);
  o.on_demand = s.engine.mode == config::EngineMode::on_demand;
  o.eager_ring = static_cast<uint32_t>(s.engine.eager_ring);
  o.job_key = job_key != 0 ? job_key : s.engine.job_key;
  o.listen_addr = listen;
  if (s.cm.port != 0) o.listen_addr.set_port(static_cast<uint16_t>(s.cm.port));
  o.backlog = s.cm.backlog;
  o.reuseaddr = s.cm.reuseaddr;
  o.connect_window = static_cast<uint32_t>(s.engine.connect_window);
  o.qp_window = static_cast<uint32_t>(s.engine.qp_create_window);
  o.incast = incast::Pacing{s.cm.incast == config::IncastControl::paced, static_cast<uint32_t>(s.cm.incast_burst),
                            static_cast<uint32_t>(s.cm.incast_rate)};
  o.max_attempts = static_cast<uint32_t>(s.engine.max_attempts);
  o.backoff_initial = s.engine.backoff_initial;
  o.backoff_max = s.engine.backoff_max;
  o.backoff_jitter = s.engine.backoff_jitter;
  o.wireup_timeout = s.engine.wireup_timeout;
  o.rtu_linger = s.engine.rtu_linger;
  o.liveness = s.liveness.enable;
  o.liveness_params.period = s.liveness.period;
  o.liveness_params.deadline = s.liveness.deadline;
  o.liveness_params.watchers = static_cast<uint32_t>(s.liveness.watchers);
  o.async_events = s.device.async_events == config::AsyncEvents::transport ? prov::AsyncOwner::transport
                                                                            : prov::AsyncOwner::library;
  o.resolve_addr_timeout_ms = static_cast<int>(s.cm.resolve_addr_timeout.count());
  o.resolve_route_timeout_ms = static_cast<int>(s.cm.resolve_route_timeout.count());
  if (s.cm.tos >= 0) o.tos = static_cast<uint8_t>(s.cm.tos);
  // One ACK timeout: given to the CM on both ends' ids, which answers it for RTS.
  o.ack_timeout = static_cast<uint8_t>(s.qp.timeout);
  o.ece = ece::Policy{ece_mode(s.ece.mode), s.ece.options, s.ece.required_options, s.ece.vendor_id};
  if (uint32_t m = mtu_enum(s.qp.path_mtu)) o.qp.path_mtu = m;
  o.qp.retry_cnt = static_cast<uint8_t>(s.qp.retry_cnt);
  o.qp.rnr_retry = static_cast<uint8_t>(s.qp.rnr_retry);
  o.qp.min_rnr_timer = static_cast<uint8_t>(s.qp.min_rnr_timer);
  // Unset: the device's bounds; the REQ and REP carry them (cm/depth.h).
  if (s.qp.max_rd_atomic >= 0) o.qp.max_rd_atomic = static_cast<uint8_t>(s.qp.max_rd_atomic);
  if (s.qp.max_dest_rd_atomic >= 0) o.qp.max_dest_rd_atomic = static_cast<uint8_t>(s.qp.max_dest_rd_atomic);
  o.param.retry_count = static_cast<uint8_t>(s.qp.retry_cnt);
  o.param.rnr_retry_count = static_cast<uint8_t>(s.qp.rnr_retry);
  return o;
}

}  // namespace wireup
