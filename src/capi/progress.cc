// wireup_start, the event loop hooks (progress, fd, wait, done) and wireup_destroy.
#include <poll.h>

#include <cerrno>
#include <chrono>

#include "capi/handles.h"
#include "common/clock.h"
#include "common/log.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

constexpr auto kDestroyDrain = std::chrono::seconds(2);  // documented in wireup.h

wireup_status_t null_handle(const char* fn) {
  return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the wireup handle is NULL");
}

}  // namespace

extern "C" {

wireup_status_t wireup_start(wireup_t* w) {
  const char* fn = "wireup_start";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (w->started) return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "already started");
    if (w->job_key_pending)
      return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn,
                  "no job key: pass one in wireup_params_t.job_key or config engine.job_key, or call "
                  "wireup_set_job_key() before wireup_start()");
    if (!w->peers_set && !w->engine->on_demand())
      return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "wireup_set_peers() has not been called");
    if (Status s = w->engine->start(); !s) return fail(&w->last_error, fn, s.error());
    if (w->liveness) {
      std::vector<prov::SockAddr> eps = w->liveness_endpoints;
      eps.resize(std::max<size_t>(eps.size(), w->liveness_nranks));
      const Nanos now = SteadyClock::instance().now();
      if (Status s = w->liveness->start(std::move(eps), now); !s)
        return fail(&w->last_error, fn, s.error());
    }
    w->started = true;
    capi::refresh_poller(w);
    return WIREUP_OK;
  });
}

wireup_status_t wireup_progress(wireup_t* w, int* work_done) {
  const char* fn = "wireup_progress";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (!w->started) return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "wireup_start() has not been called");
    // The liveness service first: a death it learns now is delivered by this very call.
    int live_work = 0;
    if (w->liveness) {
      std::vector<uint32_t> deaths;
      // CLOCK_MONOTONIC, as the handle's timerfd (the liveness service is rdma-only).
      const Nanos now = SteadyClock::instance().now();
      auto lw = w->liveness->progress(now, deaths);
      if (!lw) return fail(&w->last_error, fn, lw.error());
      live_work = *lw;
      for (uint32_t d : deaths) w->engine->declare_down(d, PeerDownCause::silent);
    }
    Result<int> work = w->engine->progress();
    if (work) *work += live_work;
    capi::close_lanes(w);            // lanes closed in this call are not held any more
    capi::hand_over_new_results(w);  // before anything else can take a connected QP back
    capi::deliver_lanes(w);          // after it: a READY's QP is the transport's
    capi::refresh_poller(w);
    if (!work) return fail(&w->last_error, fn, work.error());
    if (work_done != nullptr) *work_done = *work;
    return WIREUP_OK;
  });
}

int wireup_fd(const wireup_t* w) {
  if (w == nullptr) return null_handle("wireup_fd"), -1;
  return w->poller.fd();
}

wireup_status_t wireup_wait(wireup_t* w, int timeout_ms) {
  const char* fn = "wireup_wait";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (timeout_ms < -1)
      return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                  "timeout_ms " + std::to_string(timeout_ms) + " (use -1 for no limit)");
    // -1: a day stands for "no limit"; the engine's own deadline and timers cut it short.
    Nanos t = timeout_ms < 0 ? Nanos(std::chrono::hours(24)) : Nanos(std::chrono::milliseconds(timeout_ms));
    if (w->liveness && w->started) {
      // The engine's wait knows nothing of the UDP socket: wait on the handle's own fd, which
      // holds the engine's channels, the socket and a timer at the earliest of both.
      capi::refresh_poller(w);
      pollfd p{w->poller.fd(), POLLIN, 0};
      const int ms = static_cast<int>(std::min<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(t).count(), INT32_MAX));
      if (::poll(&p, 1, ms) < 0 && errno != EINTR)
        return fail(&w->last_error, fn, Error::from_errno("poll", errno, "wireup_fd"));
      return WIREUP_OK;
    }
    if (Status s = w->engine->wait(t); !s) return fail(&w->last_error, fn, s.error());
    return WIREUP_OK;
  });
}

wireup_status_t wireup_fail_peer(wireup_t* w, uint32_t peer, const char* why, size_t* given_up) {
  const char* fn = "wireup_fail_peer";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (why == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "why is NULL");
    if (!w->started) return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn, "wireup_start() has not been called");
    const size_t n = w->engine->fail_peer(peer, why);
    capi::refresh_poller(w);  // a settled last pair makes progress() due (the setup channel goes)
    if (given_up != nullptr) *given_up = n;
    return WIREUP_OK;
  });
}

int wireup_done(const wireup_t* w) {
  if (w == nullptr) return null_handle("wireup_done"), -1;
  return w->engine->done() ? 1 : 0;
}

void wireup_destroy(wireup_t* w) {
  if (w == nullptr) return;
  guarded("wireup_destroy", &w->last_error, [&] {
    capi::close_lanes(w);
    capi::hand_over_new_results(w);  // what connected in the last call too: close() releases only the rest
    w->engine->on_steady_event(nullptr);  // the transport may be tearing its callback state down
    w->engine->on_peer_down(nullptr);
    w->engine->on_device_report(nullptr);
    w->engine->on_lane_event(nullptr);
    w->engine->on_address_needed(nullptr);
    if (Status s = w->engine->close(kDestroyDrain); !s)
      WIREUP_LOG(warn, "wireup_destroy: %s", s.message().c_str());
    return WIREUP_OK;
  });
  --w->ctx->handles;
  delete w;
}

}  // extern "C"
