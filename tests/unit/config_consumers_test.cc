// Every configuration key has a consumer: changing it changes what the library does with it.
// For each key of the table, a valid non-default value goes through the loader and one of the
// places the library reads the configuration must see a difference: the engine's options,
// the QP capabilities, the device ranking's input, the log level. A key nothing reads fails
// here, naming it (device.gid_index did, before it was removed; cm.reuseaddr before the
// listener got it).
#include <gtest/gtest.h>

#include <sstream>

#include "config/config.h"
#include "config/params.h"
#include "host/choice.h"
#include "host/local_rank.h"
#include "wireup/options.h"

namespace wireup {
namespace {

int opt(const std::optional<uint8_t>& v) { return v ? int(*v) : -1; }

std::string fingerprint(const EngineOptions& o) {
  std::ostringstream s;
  s << o.lanes << ' ' << o.job_key << ' ' << o.listen_addr.to_string() << ' ' << o.backlog << ' ' << o.reuseaddr << ' '
    << o.connect_window << ' ' << o.qp_window << ' ' << o.max_attempts << ' ' << o.backoff_initial.count() << ' '
    << o.backoff_max.count() << ' ' << o.backoff_jitter << ' ' << o.wireup_timeout.count() << ' '
    << o.rtu_linger.count() << ' ' << o.resolve_addr_timeout_ms << ' ' << o.resolve_route_timeout_ms << ' '
    << (o.tos ? int(*o.tos) : -1) << ' ' << (o.ack_timeout ? int(*o.ack_timeout) : -1) << ' '
    << int(o.ece.mode) << ' ' << o.ece.wanted << ' ' << o.ece.required << ' ' << o.ece.vendor_id << ' '
    << o.qp.path_mtu.value_or(0) << ' ' << opt(o.qp.timeout) << ' ' << opt(o.qp.retry_cnt) << ' '
    << opt(o.qp.rnr_retry) << ' ' << opt(o.qp.min_rnr_timer) << ' ' << opt(o.qp.max_rd_atomic) << ' '
    << opt(o.qp.max_dest_rd_atomic) << ' ' << o.qp.access_flags.value_or(0) << ' ' << int(o.param.retry_count) << ' ' << int(o.param.rnr_retry_count) << ' '
    << int(o.param.responder_resources) << ' ' << int(o.param.initiator_depth) << ' ' << o.incast.on << ' '
    << o.incast.burst << ' ' << o.incast.rate << ' ' << o.on_demand << ' ' << o.eager_ring << ' '
    << int(o.async_events) << ' ' << o.liveness << ' ' << o.liveness_params.period.count() << ' '
    << o.liveness_params.deadline.count() << ' ' << o.liveness_params.watchers;
  return s.str();
}

std::string fingerprint(const config::Settings& s) {
  std::ostringstream f;
  f << fingerprint(engine_options(s, 0, 2, prov::SockAddr::ipv4(0x0a000001, 0))) << " | ";
  const prov::QpCaps c = qp_caps(s);
  f << c.max_send_wr << ' ' << c.max_recv_wr << ' ' << c.max_send_sge << ' ' << c.max_recv_sge << ' '
    << c.max_inline_data << " | ";
  auto lr = host::resolve_local_rank(-1, "test", s.device.local_rank, [](const char*) { return nullptr; });
  const topo::RankInput in = rank_input(s, lr ? *lr : host::LocalRank{}, {});
  f << in.port << ' ' << in.local_rank << ' ' << host::rail_count(s).value << ' ';
  for (auto& x : in.include) f << '+' << x;
  for (auto& x : in.exclude) f << '-' << x;
  f << " | " << int(s.log.level);
  return f.str();
}

// A valid value other than the default, spelled as an override ("section.key=value").
std::string other_value(const config::Param& p) {
  const std::string d(p.default_toml);
  using T = config::ParamType;
  switch (p.type) {
    case T::boolean: return d == "true" ? "false" : "true";
    case T::integer:
    case T::duration_ms: {
      const int64_t v = std::stoll(d);
      return std::to_string(v < p.max ? v + 1 : v - 1);
    }
    case T::uint32:
    case T::uint64: return d.find("0x1\"") != std::string::npos ? "0x2" : "0x1";
    case T::real: return std::to_string(std::stod(d) > p.dmin ? p.dmin : p.dmax);
    case T::enumeration:
      for (const config::EnumChoice& c : p.choices)
        if (d != "\"" + std::string(c.name) + "\"" && d != std::to_string(c.value)) return std::string(c.name);
      return d;
    case T::string: return "something-else";
    case T::string_list: return "x0,x1";
  }
  return d;
}

TEST(ConfigConsumers, EveryKeyChangesWhatTheLibraryDoes) {
  config::LoadOptions base;
  base.search_paths.clear();
  auto defaults = config::load(base);
  ASSERT_TRUE(defaults) << defaults.error().message();
  const std::string before = fingerprint(defaults->settings());
  size_t checked = 0;
  for (const config::Param& p : config::params()) {
    config::LoadOptions o = base;
    o.overrides.push_back({p.name(), other_value(p)});
    auto c = config::load(o);
    ASSERT_TRUE(c) << p.name() << " = " << other_value(p) << ": " << c.error().message();
    EXPECT_NE(fingerprint(c->settings()), before)
        << "configuration key " << p.name() << " = " << other_value(p) << " changes nothing the library reads";
    ++checked;
  }
  EXPECT_GT(checked, 30u);
}

}  // namespace
}  // namespace wireup
