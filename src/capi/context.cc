// wireup_context_*: configuration, provider, device choice, listen address.
#include <cstring>

#include "capi/device_choice.h"
#include "capi/handles.h"
#include "common/log.h"

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

Status build(const wireup_context_params_t& p, wireup_context& ctx) {
  if (p.provider != nullptr && std::strcmp(p.provider, "rdma") != 0)
    return Error::make(ErrorCode::invalid_argument, "provider",
                       "unknown provider \"" + std::string(p.provider) + "\" (the C API offers: rdma)");
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

  auto prov = prov::rdma::RdmaProvider::create();
  if (!prov) return prov.error();
  ctx.provider = std::move(prov).value();
  auto choice = capi::choose_device(*ctx.provider, ctx.config.settings(), p.local_rank);
  if (!choice) return choice.error();
  ctx.device = choice->device;
  WIREUP_LOG(info, "device %s", choice->why.c_str());

  if (p.listen_ip != nullptr) {
    auto a = prov::SockAddr::parse(p.listen_ip);
    if (!a) return Error::make(ErrorCode::invalid_argument, "listen_ip", a.error().message());
    ctx.listen_ip = p.listen_ip;
  } else {
    auto ip = capi::netdev_ipv4(ctx.device->info());
    if (!ip) return ip.error();
    ctx.listen_ip = *ip;
  }
  return Status::ok();
}

// Accessors answer NULL for a NULL context, and say why to wireup_last_error(NULL).
std::nullptr_t null_context(const char* fn) {
  fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the context is NULL");
  return nullptr;
}

}  // namespace

extern "C" {

void wireup_context_params_init(wireup_context_params_t* params) {
  if (params == nullptr) return;
  std::memset(params, 0, sizeof *params);
  params->local_rank = -1;
}

wireup_status_t wireup_context_create(const wireup_context_params_t* params, wireup_context_t** out) {
  return guarded("wireup_context_create", nullptr, [&] {
    if (out == nullptr) return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, "wireup_context_create", "out is NULL");
    wireup_context_params_t defaults;
    wireup_context_params_init(&defaults);
    auto ctx = std::make_unique<wireup_context>();
    if (Status s = build(params != nullptr ? *params : defaults, *ctx); !s)
      return fail(nullptr, "wireup_context_create", s.error());
    *out = ctx.release();
    return WIREUP_OK;
  });
}

const char* wireup_context_device_name(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->device->info().name.c_str() : null_context("wireup_context_device_name");
}

struct ibv_context* wireup_context_ibv_context(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->device->ctx() : null_context("wireup_context_ibv_context");
}

const char* wireup_context_listen_address(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->listen_ip.c_str() : null_context("wireup_context_listen_address");
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
