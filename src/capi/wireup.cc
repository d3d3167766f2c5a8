// wireup_create .. wireup_destroy: the handle's lifecycle and its event loop hooks.
#include <cstring>

#include "capi/handles.h"
#include "capi/layouts.h"
#include "capi/struct_io.h"
#include "host/route.h"
#include "wireup/mac.h"
#include "wireup/options.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

wireup_status_t null_handle(const char* fn) {
  return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the wireup handle is NULL");
}

Result<std::unique_ptr<Engine>> make_engine(wireup_t* w, const wireup_params_t& p) {
  auto listen = prov::SockAddr::parse(w->ctx->listen_ip);
  if (!listen) return listen.error();
  EngineOptions o = engine_options(w->ctx->config.settings(), p.rank, p.nranks, *listen, p.job_key);
  if (p.lanes != 0) o.lanes = p.lanes;
  if (o.job_key == 0) {
    // No key yet: wireup_set_job_key() gives it before wireup_start(), which refuses without
    // it. Until then the engine holds a random stand-in that no message is ever sealed with
    // (nothing is sent or answered before start).
    o.job_key = random_nonce_base() | 1;
    w->job_key_pending = true;
  }
  // Every rail, with listen_addr's port (config cm.port, or 0: any); rail 0 is listen_addr.
  for (const wireup_context::Rail& r : w->ctx->rails) {
    auto a = prov::SockAddr::parse(r.listen_ip);
    if (!a) return a.error();
    a->set_port(o.listen_addr.port());
    o.rails.push_back(RailAddress{*a, r.prefix_len});
  }
  // Step 2 of the pairing rule (no common subnet): the route from the rail's address to the
  // peer's must leave through the rail's netdev (host/route.h). Unknown (no netdev known, as
  // with listen_ip; netlink refused): taken, and the lane's own resolution decides.
  std::vector<std::pair<prov::SockAddr, std::string>> netdevs;
  for (size_t i = 0; i < o.rails.size(); ++i) netdevs.emplace_back(o.rails[i].addr, w->ctx->rails[i].netdev);
  o.route_check = [netdevs](const prov::SockAddr& from, const prov::SockAddr& to) {
    for (const auto& [addr, netdev] : netdevs)
      if (addr == from) return host::route_out_of(netdev, from, to).value_or(true);
    return true;
  };
  if (o.liveness) {
    // Its ring needs every rank's endpoint before the first heartbeat: bulk only.
    if (o.on_demand)
      return Error::make(ErrorCode::invalid_argument, "liveness.enable",
                         "the liveness service needs the whole peer table at start: engine.mode \"bulk\" only");
    auto l = capi::LivenessService::create(o.rank, o.job_key, o.liveness_params, *listen);
    if (!l) return l.error();
    w->liveness = std::move(l).value();
    w->liveness_nranks = o.nranks;
  }
  return Engine::create(*w->ctx->provider, std::move(o), capi::make_factory(w));
}

}  // namespace

namespace wireup::capi {

void refresh_poller(wireup_t* w) {
  // The reading of the progress() (or start()) just before: no clock reading of its own.
  Nanos at = w->engine->next_wakeup(w->engine->progressed_at());
  std::vector<int> fds = w->engine->fds();
  if (w->liveness) {
    at = std::min(at, w->liveness->next_due());
    fds.push_back(w->liveness->fd());
  }
  Status s = w->poller.update(fds, at == Nanos::max() ? std::nullopt : std::optional<Nanos>(at));
  if (!s) fail(&w->last_error, "wireup_fd", s.error());  // noted; the loop still has wireup_wait
}

}  // namespace wireup::capi

extern "C" {

wireup_status_t wireup_create(wireup_context_t* ctx, const wireup_params_t* params, wireup_t** out) {
  const char* fn = "wireup_create";
  return guarded(fn, ctx ? &ctx->last_error : nullptr, [&] {
    std::string* slot = ctx ? &ctx->last_error : nullptr;
    if (ctx == nullptr) return fail(slot, WIREUP_ERR_INVALID_ARGUMENT, fn, "the context is NULL");
    if (params == nullptr) return fail(slot, WIREUP_ERR_INVALID_ARGUMENT, fn, "params is NULL");
    if (out == nullptr) return fail(slot, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    wireup_params_t p;
    std::memset(&p, 0, sizeof p);  // every field's default is 0
    if (Status s = capi::read_struct(params, p, capi::kFirstParams, "wireup_params_t"); !s) return fail(slot, fn, s.error());
    if (p.qp_create == nullptr)
      return fail(slot, WIREUP_ERR_INVALID_ARGUMENT, fn, "params->qp_create (the QP factory) is NULL");
    auto w = std::make_unique<wireup_t>();
    w->ctx = ctx;
    w->create_qp = p.qp_create;
    w->release_qp = p.qp_release;
    w->qp_arg = p.qp_arg;
    if (Status s = w->poller.open(); !s) return fail(slot, fn, s.error());
    auto e = make_engine(w.get(), p);
    if (!e) return fail(slot, fn, e.error());
    w->engine = std::move(e).value();
    capi::watch_lanes(w.get());
    capi::watch_peer_downs(w.get());
    capi::refresh_poller(w.get());
    ++ctx->handles;
    *out = w.release();
    return WIREUP_OK;
  });
}

wireup_status_t wireup_set_job_key(wireup_t* w, uint64_t job_key) {
  const char* fn = "wireup_set_job_key";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (job_key == 0) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "job_key is 0: a job's key is never 0");
    if (w->started) return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "wireup_start() was called: the key is fixed");
    if (Status s = w->engine->set_job_key(job_key); !s) return fail(&w->last_error, fn, s.error());
    if (w->liveness)
      if (Status s = w->liveness->set_job_key(job_key); !s) return fail(&w->last_error, fn, s.error());
    w->job_key_pending = false;
    return WIREUP_OK;
  });
}

wireup_status_t wireup_local_address(const wireup_t* w, uint8_t* buf, size_t* len) {
  const char* fn = "wireup_local_address";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (len == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "len is NULL");
    std::vector<uint8_t> a = w->engine->local_address();
    if (a.empty()) return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "the listener is closed (wireup is over)");
    if (w->liveness) a = capi::wrap_address(a, w->liveness->address().port());
    if (*len < a.size() || buf == nullptr) {
      const size_t have = *len;
      *len = a.size();
      return fail(&w->last_error, WIREUP_ERR_BUFFER_TOO_SMALL, fn,
                  "the address takes " + std::to_string(a.size()) + " bytes, the buffer has " + std::to_string(have));
    }
    std::copy(a.begin(), a.end(), buf);
    *len = a.size();
    return WIREUP_OK;
  });
}

wireup_status_t wireup_set_peers(wireup_t* w, const wireup_peer_t* peers, size_t n) {
  const char* fn = "wireup_set_peers";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (peers == nullptr && n > 0) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "peers is NULL");
    if (w->started)
      return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "wireup_start() was called: the peer table is fixed");
    std::vector<Peer> table;
    std::vector<prov::SockAddr> endpoints;
    table.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (peers[i].address == nullptr && peers[i].address_len > 0)
        return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                    "entry " + std::to_string(i) + " (rank " + std::to_string(peers[i].rank) + "): address is NULL");
      const uint8_t* a = peers[i].address;
      std::vector<uint8_t> bytes(a, a + peers[i].address_len);
      if (w->liveness) {
        auto u = capi::unwrap_address(bytes);
        if (!u)
          return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                      "entry " + std::to_string(i) + " (rank " + std::to_string(peers[i].rank) + "): " + u.error().message());
        bytes = std::move(u->engine_address);
        if (peers[i].rank >= endpoints.size()) endpoints.resize(peers[i].rank + 1);
        endpoints[peers[i].rank] = u->endpoint;
      }
      table.push_back(Peer{peers[i].rank, std::move(bytes)});
    }
    if (Status s = w->engine->set_peers(table); !s) return fail(&w->last_error, fn, s.error());
    w->liveness_endpoints = std::move(endpoints);
    w->peers_set = true;
    return WIREUP_OK;
  });
}

}  // extern "C"
