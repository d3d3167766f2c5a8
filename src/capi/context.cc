// wireup_context_*: configuration, provider, device choice, listen address; and the same
// context over a provider a test gives (context_over.h).
#include <cstring>

#include "capi/context_over.h"
#include "capi/handles.h"
#include "capi/layouts.h"
#include "capi/struct_io.h"
#include "common/log.h"
#include "host/choice.h"
#include "host/netdev.h"
#include "provider/rdma/rdma.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

// "section.key=value" -> Override; the error names the malformed entry.
Result<std::vector<config::Override>> parse_overrides(const wireup_context_params_t& p) {
  std::vector<config::Override> out;
  if (p.num_config_overrides > 0 && p.config_overrides == nullptr)
    return Error::make(ErrorCode::invalid_argument, "config_overrides",
                       "is NULL with num_config_overrides " + std::to_string(p.num_config_overrides));
  for (size_t i = 0; i < p.num_config_overrides; ++i) {
    const char* o = p.config_overrides[i];
    const char* eq = o != nullptr ? std::strchr(o, '=') : nullptr;
    if (eq == nullptr || eq == o)
      return Error::make(ErrorCode::invalid_argument, "config_overrides",
                         "entry " + std::to_string(i) + " (" + (o ? "\"" + std::string(o) + "\"" : "NULL") +
                             ") is not \"section.key=value\"");
    out.push_back(config::Override{std::string(o, eq), std::string(eq + 1)});
  }
  return out;
}

// The configuration and the local rank: the same whatever the provider.
Result<host::LocalRank> load_config(const wireup_context_params_t& p, wireup_context& ctx) {
  auto overrides = parse_overrides(p);
  if (!overrides) return overrides.error();

  config::LoadOptions lo;
  if (p.config_file != nullptr) lo.file = p.config_file;
  lo.env = config::process_environment();
  lo.overrides = std::move(overrides).value();
  Result<config::Config> cfg = config::load(lo);
  if (!cfg) return cfg.error();
  ctx.config = std::move(cfg).value();
  ctx.config_dump = ctx.config.dump();
  // A level written somewhere wins over WIREUP_LOG; the built-in default does not.
  if (const config::Entry* e = ctx.config.entry("log.level"); e && e->source.kind != config::Source::Kind::built_in)
    log::set_level(ctx.config.settings().log.level);

  const config::Settings& s = ctx.config.settings();
  return host::resolve_local_rank(p.local_rank, "wireup_context_params.local_rank", s.device.local_rank,
                                  host::process_getenv());
}

Status set_listen_ip(const char* ip, wireup_context& ctx) {
  auto a = prov::SockAddr::parse(ip);
  if (!a) return Error::make(ErrorCode::invalid_argument, "listen_ip", a.error().message());
  ctx.listen_ip = ip;
  ctx.listen_source = std::string("listen_ip ") + ip + " (given)";
  return Status::ok();
}

// rails[0] is the context's device and listen address; each rail's text for the API.
Status set_rails(wireup_context& ctx) {
  ctx.device = ctx.rails[0].device;
  ctx.listen_ip = ctx.rails[0].listen_ip;
  ctx.listen_source = ctx.rails[0].listen_source;
  for (wireup_context::Rail& r : ctx.rails)
    r.listen_cidr = r.prefix_len ? r.listen_ip + "/" + std::to_string(r.prefix_len) : r.listen_ip;
  return Status::ok();
}

Status build(const wireup_context_params_t& p, wireup_context& ctx) {
  if (p.provider != nullptr && std::strcmp(p.provider, "rdma") != 0)
    return Error::make(ErrorCode::invalid_argument, "provider",
                       "unknown provider \"" + std::string(p.provider) + "\" (the C API offers: rdma)");
  Result<host::LocalRank> lr = load_config(p, ctx);
  if (!lr) return lr.error();
  const config::Settings& s = ctx.config.settings();
  const topo::RailCount want = host::rail_count(s);
  // listen_ip names one address: with several rails each comes from its own device's port.
  if (want.value != 1 && p.listen_ip != nullptr)
    return Error::make(ErrorCode::config_error, "wireup_context_create",
                       "listen_ip " + std::string(p.listen_ip) + " with device.rails = " +
                           (want.all_equally_near() ? std::string("\"all\"") : std::to_string(want.value)) +
                           ": one address for several rails; leave listen_ip NULL, each rail's address "
                           "comes from its device's port");

  auto prov = prov::rdma::RdmaProvider::create();
  if (!prov) return prov.error();
  ctx.qps = capi::rdma_qp_adapter(**prov);
  ctx.owned_provider = std::move(prov).value();
  ctx.provider = ctx.owned_provider.get();
  std::vector<host::DeviceChoice> chosen;
  if (want.value == 1) {
    auto choice = host::choose_device(*ctx.provider, s, *lr);
    if (!choice) return choice.error();
    chosen.push_back(std::move(choice).value());
  } else {
    auto set = host::choose_rail_devices(*ctx.provider, s, *lr);
    if (!set) return set.error();
    chosen = std::move(set).value();
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    const host::DeviceChoice& c = chosen[i];
    if (chosen.size() == 1)
      WIREUP_LOG(info, "device %s; local rank %d (%s)", c.why.c_str(), lr->value, lr->source.c_str());
    else
      WIREUP_LOG(info, "rail %zu: device %s; local rank %d (%s)", i, c.why.c_str(), lr->value, lr->source.c_str());
    wireup_context::Rail r;
    r.device = c.device;
    if (p.listen_ip != nullptr) {
      if (Status st = set_listen_ip(p.listen_ip, ctx); !st) return st;
      r.listen_ip = ctx.listen_ip;
      r.listen_source = ctx.listen_source;
    } else {
      auto l = host::device_listen_address(host::sysfs_root(), c.device->info().name, s.device.port,
                                           host::live_addresses());
      if (!l && chosen.size() == 1) return l.error();
      if (!l) return Error(l.error()).with_peer("rail " + std::to_string(i));
      r.listen_ip = l->ip;
      r.prefix_len = l->prefix_len;
      r.netdev = l->netdev;
      r.listen_source = l->why;
    }
    WIREUP_LOG(info, "listen address%s: %s", chosen.size() == 1 ? "" : (" of rail " + std::to_string(i)).c_str(),
               r.listen_source.c_str());
    ctx.rails.push_back(std::move(r));
  }
  return set_rails(ctx);
}

Status build_over(const wireup_context_params_t& p, capi::ProviderSeat seat, wireup_context& ctx) {
  if (seat.qps == nullptr)
    return Error::make(ErrorCode::invalid_argument, "capi::context_create_over", "no QP adapter");
  if (p.listen_ip == nullptr)
    return Error::make(ErrorCode::invalid_argument, "listen_ip",
                       "is NULL: a context over a given provider listens on the address it is given");
  Result<host::LocalRank> lr = load_config(p, ctx);
  if (!lr) return lr.error();
  ctx.provider = &seat.provider;
  ctx.device = &seat.device;
  ctx.qps = std::move(seat.qps);
  WIREUP_TRY(set_listen_ip(p.listen_ip, ctx));
  ctx.rails.push_back(wireup_context::Rail{&seat.device, ctx.listen_ip, 0, {}, {}, ctx.listen_source});
  return set_rails(ctx);
}

// Accessors answer NULL for a NULL context, and say why to wireup_last_error(NULL).
std::nullptr_t null_context(const char* fn) {
  fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the context is NULL");
  return nullptr;
}

// The rail `rail` of `ctx`, or null with the reason recorded.
const wireup_context::Rail* rail_at(const wireup_context_t* ctx, size_t rail, const char* fn) {
  if (ctx == nullptr) return null_context(fn);
  if (rail >= ctx->rails.size())
    return fail(&ctx->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                "rail " + std::to_string(rail) + " of " + std::to_string(ctx->rails.size()) +
                    " (wireup_context_num_rails)"),
           nullptr;
  return &ctx->rails[rail];
}

// The caller's params (NULL: all defaults) as this library's layout.
Result<wireup_context_params_t> read_params(const wireup_context_params_t* params) {
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  if (params == nullptr) return p;
  if (Status s = capi::read_struct(params, p, capi::kFirstContextParams, "wireup_context_params_t"); !s) return s;
  return p;
}

}  // namespace

namespace wireup::capi {

wireup_status_t context_create_over(const wireup_context_params_t* params, ProviderSeat seat, wireup_context_t** out) {
  const char* fn = "capi::context_create_over";
  return guarded(fn, nullptr, [&] {
    if (out == nullptr) return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    auto p = read_params(params);
    if (!p) return fail(nullptr, fn, p.error());
    auto ctx = std::make_unique<wireup_context>();
    if (Status s = build_over(*p, std::move(seat), *ctx); !s) return fail(nullptr, fn, s.error());
    *out = ctx.release();
    return WIREUP_OK;
  });
}

}  // namespace wireup::capi

extern "C" {

wireup_status_t wireup_context_create(const wireup_context_params_t* params, wireup_context_t** out) {
  return guarded("wireup_context_create", nullptr, [&] {
    if (out == nullptr) return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, "wireup_context_create", "out is NULL");
    auto p = read_params(params);
    if (!p) return fail(nullptr, "wireup_context_create", p.error());
    auto ctx = std::make_unique<wireup_context>();
    if (Status s = build(*p, *ctx); !s) return fail(nullptr, "wireup_context_create", s.error());
    *out = ctx.release();
    return WIREUP_OK;
  });
}

const char* wireup_context_device_name(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->device->info().name.c_str() : null_context("wireup_context_device_name");
}

struct ibv_context* wireup_context_ibv_context(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->qps->context_of(*ctx->device) : null_context("wireup_context_ibv_context");
}

size_t wireup_context_num_rails(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->rails.size() : (null_context("wireup_context_num_rails"), 0);
}


struct ibv_context* wireup_context_rail_ibv_context(const wireup_context_t* ctx, size_t rail) {
  const wireup_context::Rail* r = rail_at(ctx, rail, "wireup_context_rail_ibv_context");
  return r != nullptr ? ctx->qps->context_of(*r->device) : nullptr;
}

const char* wireup_context_rail_device_name(const wireup_context_t* ctx, size_t rail) {
  const wireup_context::Rail* r = rail_at(ctx, rail, "wireup_context_rail_device_name");
  return r != nullptr ? r->device->info().name.c_str() : nullptr;
}

const char* wireup_context_rail_listen_address(const wireup_context_t* ctx, size_t rail) {
  const wireup_context::Rail* r = rail_at(ctx, rail, "wireup_context_rail_listen_address");
  return r != nullptr ? r->listen_cidr.c_str() : nullptr;
}

const char* wireup_context_listen_address(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->listen_ip.c_str() : null_context("wireup_context_listen_address");
}

const char* wireup_context_listen_source(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->listen_source.c_str() : null_context("wireup_context_listen_source");
}

const char* wireup_context_config_value(const wireup_context_t* ctx, const char* key) {
  const char* fn = "wireup_context_config_value";
  if (ctx == nullptr) return null_context(fn);
  if (key == nullptr) return fail(&ctx->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "key is NULL"), nullptr;
  const config::Entry* e = ctx->config.entry(key);
  if (e == nullptr || e->param == nullptr)
    return fail(&ctx->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                "\"" + std::string(key) + "\" is not a configuration key (see wireup_info --config)"),
           nullptr;
  // The value never changes after create: render each key once, so earlier pointers stay valid.
  auto [it, fresh] = ctx->config_values.try_emplace(key);
  // As the dump shows it: a secret (the job key) says only whether it is set.
  if (fresh && e->param->secret) it->second = std::get<uint64_t>(e->value) == 0 ? "\"0x0\"" : "\"<set, hidden>\"";
  else if (fresh) it->second = e->param->render(e->value);
  return it->second.c_str();
}

const char* wireup_context_config_dump(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->config_dump.c_str() : null_context("wireup_context_config_dump");
}

wireup_status_t wireup_context_destroy(wireup_context_t* ctx) {
  if (ctx == nullptr) return WIREUP_OK;
  if (ctx->handles > 0)
    return fail(&ctx->last_error, WIREUP_ERR_INVALID_STATE, "wireup_context_destroy",
                std::to_string(ctx->handles) + " wireup handle(s) still use this context: wireup_destroy them first");
  delete ctx;
  return WIREUP_OK;
}

}  // extern "C"
