// The C API's handles and its error plumbing, shared by the files of src/capi.
//
// The structs are the opaque types of include/wireup/wireup.h. Every entry point records a
// failure twice: on the handle it was called on (wireup_last_error(h)) and for the calling
// thread (wireup_last_error(NULL)), so that a failed *_create can still be explained.
#pragma once

#include <deque>
#include <map>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "capi/event_fd.h"
#include "capi/liveness_service.h"
#include "capi/handed_over.h"
#include "capi/qp_adapter.h"
#include "common/status.h"
#include "config/config.h"
#include "wireup/engine.h"
#include "wireup/wireup.h"

struct wireup_context {
  wireup::config::Config config;
  std::string config_dump;
  // The rdma provider of wireup_context_create; null when a test gave the context its own
  // provider (capi/context_over.h), which then outlives the context.
  std::unique_ptr<wireup::prov::Provider> owned_provider;
  wireup::prov::Provider* provider = nullptr;
  wireup::prov::Device* device = nullptr;  // owned by the provider
  std::unique_ptr<wireup::capi::QpAdapter> qps;  // what ibv_context / ibv_qp are on it
  std::string listen_ip;
  std::string listen_source;  // how listen_ip was found (wireup_context_listen_source)
  // Every rail (config device.rails), rail 0 first: its device (rails[0] is `device`), listen
  // address (rails[0]'s is listen_ip) and subnet prefix length (0: unknown).
  struct Rail {
    wireup::prov::Device* device = nullptr;
    std::string listen_ip;
    uint8_t prefix_len = 0;
    std::string netdev;       // where listen_ip was found; empty when given (listen_ip)
    std::string listen_cidr;  // "10.0.2.1/24" (wireup_context_rail_listen_address)
    std::string listen_source;
  };
  std::vector<Rail> rails;
  // The rail whose device is `d`; 0 for a device no rail has (cannot happen for a QP of ours).
  uint32_t rail_of(const wireup::prov::Device* d) const {
    for (size_t i = 0; i < rails.size(); ++i)
      if (rails[i].device == d) return static_cast<uint32_t>(i);
    return 0;
  }
  mutable std::map<std::string, std::string, std::less<>> config_values;  // handed-out texts
  size_t handles = 0;  // wireup_t made from this context and not destroyed yet
  mutable std::string last_error;
};

struct wireup_handle {
  wireup_context* ctx = nullptr;
  wireup_qp_create_fn create_qp = nullptr;
  wireup_qp_release_fn release_qp = nullptr;
  void* qp_arg = nullptr;  // both get it
  wireup_event_fn event_fn = nullptr;  // wireup_on_event's: peer-down events (events.cc)
  void* event_arg = nullptr;
  wireup_lane_fn lane_fn = nullptr;  // on_demand.cc
  void* lane_arg = nullptr;
  wireup_address_fn address_fn = nullptr;
  void* address_arg = nullptr;
  // The engine's lane events of the last progress(), delivered once its results are handed
  // over (their indexes are the hand-over table's).
  std::vector<wireup::LaneEvent> lanes_pending;
  bool peers_set = false;
  bool started = false;
  // Created with job key 0 (params and config): wireup_set_job_key must come before start.
  bool job_key_pending = false;
  // Declared before the engine, so destroyed after it: the engine's QP wrappers call the
  // release callback above while it goes, and the channel fds leave the epoll set by closing.
  wireup::capi::EventFd poller;
  std::unique_ptr<wireup::Engine> engine;
  // Config liveness.enable: its UDP socket and decisions, progressed beside the engine.
  std::unique_ptr<wireup::capi::LivenessService> liveness;
  std::vector<wireup::prov::SockAddr> liveness_endpoints;  // by rank, from wireup_set_peers
  uint32_t liveness_nranks = 0;                            // every rank needs an endpoint
  wireup::capi::HandedOver handed;  // the results the transport was given, one per lane
  // Strings handed out by result_get / error_get stay valid until destroy (an error's until its
  // lane is given up again): node-based storage, an error's text at the error's index.
  mutable std::set<std::string> device_names;
  mutable std::deque<std::string> error_messages;
  // The last wireup_tally_count() snapshot; key_name backs tally_get's string.
  struct Tally {
    wireup_tally_group_t group;
    uint32_t key = 0;
    std::string key_name;
    uint64_t count = 0;
  };
  mutable std::vector<Tally> tallies;
  mutable std::string last_error;
};

namespace wireup::capi {

wireup_status_t to_status(ErrorCode c);

// Records `message` as the failure of `fn` on `slot` (may be null) and the thread.
wireup_status_t fail(std::string* slot, wireup_status_t st, const char* fn, const std::string& message);
wireup_status_t fail(std::string* slot, const char* fn, const Error& e);

// The thread's last failure (wireup_last_error(NULL)).
const std::string& thread_error();

// Runs `body` (returning wireup_status_t). An exception must not cross into C: it becomes
// WIREUP_ERR_INTERNAL with its text, recorded like any failure.
template <class F>
wireup_status_t guarded(const char* fn, std::string* slot, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(slot, WIREUP_ERR_RESOURCE, fn, "out of memory");
  } catch (const std::exception& e) {
    return fail(slot, WIREUP_ERR_INTERNAL, fn, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return fail(slot, WIREUP_ERR_INTERNAL, fn, "unexpected exception of unknown type");
  }
}

// The QP factory the engine calls, turning the transport's C callback into wrapped QPs.
qp::QpFactory make_factory(wireup_t* w);

// Hands the connections the pending READY lane events name over to the transport
// (handed_over.h).
void hand_over_new_results(wireup_t* w);
// The engine's lane and address callbacks, routed to the handle's (on_demand.cc); and the lane
// events of the last progress(), delivered after its hand-over.
void watch_lanes(wireup_t* w);
void close_lanes(wireup_t* w);
void deliver_lanes(wireup_t* w);
// The engine's peer-down reports, routed to the liveness service (a death learnt from DREQs or
// wireup_fail_peer closes its ring over the rank) and then to wireup_on_event's callback.
void watch_peer_downs(wireup_t* w);

// Re-arms the poller after the engine's fds or timers may have changed.
void refresh_poller(wireup_t* w);

}  // namespace wireup::capi
