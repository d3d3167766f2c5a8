// wireup.hpp -- the C++ face of wireup.h: RAII owners of the same handles, std types for
// the parameters and results, exceptions for failures.
//
// Header-only over the C API, so it carries no internal header and no ABI of its own. The
// semantics of every call are those of the C function it names (see wireup.h); failures
// throw wireup::Exception with the status and the full wireup_last_error() text.
//
//   wireup::Context ctx;                                   // config, device choice
//   ibv_pd* pd = ibv_alloc_pd(ctx.ibv_context());          // the transport's own resources
//   wireup::Wireup w(ctx, {rank, nranks, lanes, key},
//                    [&](const wireup::QpRequest& r) { return ibv_create_qp(pd, &attr); });
//   publish(w.local_address()); w.set_peers(table); w.start();
//   while (!w.done()) if (w.progress() == 0) poll_on(w.fd());
//   for (const wireup_result_t& r : w.results()) use(r.qp, r.peer, r.lane);
//
// Thread safety as in C: one thread per handle. A Context must outlive its Wireup objects.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "wireup/wireup.h"

namespace wireup {

// A failed wireup call: status() is the C status, what() the whole message.
class Exception : public std::runtime_error {
 public:
  Exception(wireup_status_t status, const std::string& message) : std::runtime_error(message), status_(status) {}
  wireup_status_t status() const noexcept { return status_; }

 private:
  wireup_status_t status_;
};

namespace detail {
// The message is read after the call returned: passing the text itself as an argument next
// to the call would let the compiler read it first (argument order is unspecified).
inline void check(wireup_status_t s, const wireup_t* w) {
  if (s != WIREUP_OK) throw Exception(s, wireup_last_error(w));
}
inline void check_context(wireup_status_t s) {
  if (s != WIREUP_OK) throw Exception(s, wireup_context_last_error(nullptr));
}
inline std::string str(const char* s) { return s != nullptr ? s : ""; }
}  // namespace detail

struct ContextParams {
  std::string config_file;             // empty: WIREUP_CONFIG, ./wireup.toml, /etc/wireup/wireup.toml
  std::vector<std::string> overrides;  // "section.key=value"
  int local_rank = -1;                 // -1: config, then the launcher's environment
  std::string listen_ip;               // empty: found from the device's port (see wireup.h)
};

// Configuration, the rdma provider and the chosen device (wireup_context_create).
class Context {
 public:
  explicit Context(const ContextParams& p = {}) {
    std::vector<const char*> ov;
    for (const std::string& o : p.overrides) ov.push_back(o.c_str());
    wireup_context_params_t c;
    wireup_context_params_init(&c);
    c.config_file = p.config_file.empty() ? nullptr : p.config_file.c_str();
    c.config_overrides = ov.data();
    c.num_config_overrides = ov.size();
    c.local_rank = p.local_rank;
    c.listen_ip = p.listen_ip.empty() ? nullptr : p.listen_ip.c_str();
    detail::check_context(wireup_context_create(&c, &ctx_));
  }
  // Destroy every Wireup made from this context first (else the C call refuses and it leaks).
  ~Context() { (void)wireup_context_destroy(ctx_); }
  Context(Context&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
  Context& operator=(Context&& o) noexcept {
    if (this != &o) {
      (void)wireup_context_destroy(ctx_);
      ctx_ = std::exchange(o.ctx_, nullptr);
    }
    return *this;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  std::string device_name() const { return detail::str(wireup_context_device_name(ctx_)); }
  struct ibv_context* ibv_context() const { return wireup_context_ibv_context(ctx_); }
  std::string listen_address() const { return detail::str(wireup_context_listen_address(ctx_)); }
  std::string listen_source() const { return detail::str(wireup_context_listen_source(ctx_)); }
  // The rails (device.rails): rail 0 is the device above. Out-of-range rails throw.
  size_t num_rails() const { return wireup_context_num_rails(ctx_); }
  struct ibv_context* rail_ibv_context(size_t rail) const {
    struct ibv_context* c = wireup_context_rail_ibv_context(ctx_, rail);
    if (c == nullptr) throw Exception(WIREUP_ERR_INVALID_ARGUMENT, wireup_context_last_error(ctx_));
    return c;
  }
  std::string rail_device_name(size_t rail) const { return detail::str(wireup_context_rail_device_name(ctx_, rail)); }
  // "10.0.2.1/24" (no "/N" when the prefix length is unknown).
  std::string rail_listen_address(size_t rail) const {
    return detail::str(wireup_context_rail_listen_address(ctx_, rail));
  }
  // The effective value of one key ("engine.lanes" -> "4"); throws for an unknown key.
  std::string config_value(const std::string& key) const {
    const char* v = wireup_context_config_value(ctx_, key.c_str());
    if (v == nullptr) throw Exception(WIREUP_ERR_INVALID_ARGUMENT, wireup_context_last_error(ctx_));
    return v;
  }
  std::string config_dump() const { return detail::str(wireup_context_config_dump(ctx_)); }
  wireup_context_t* get() const { return ctx_; }

 private:
  wireup_context_t* ctx_ = nullptr;
};

struct Params {
  uint32_t rank = 0;
  uint32_t nranks = 0;
  uint32_t lanes = 0;     // 0: config engine.lanes
  uint64_t job_key = 0;   // 0: config engine.job_key
};

using QpRequest = wireup_qp_request_t;
// Returns the new RC QP (RESET), or nullptr with errno set, as ibv_create_qp does. An
// exception it throws fails the attempt and is rethrown from the progress() that called it.
using QpFactory = std::function<struct ibv_qp*(const QpRequest&)>;
using QpRelease = std::function<void(const QpRequest&, struct ibv_qp*)>;
using EventHandler = std::function<void(const wireup_event_t&)>;
using LaneHandler = std::function<void(const wireup_lane_event_t&)>;
// A peer is gone as a whole (WIREUP_EVENT_PEER_DOWN): once per peer, from progress().
struct PeerDown {
  uint32_t peer = 0;
  uint32_t lanes = 0;  // its established lanes it took with it
  wireup_peer_down_cause_t cause = WIREUP_PEER_DOWN_NONE;
  const char* cause_name() const { return wireup_peer_down_cause_name(cause); }
};
using PeerDownHandler = std::function<void(const PeerDown&)>;
// Asked for a peer whose address the handle lacks: answer with Wireup::add_peer, now or later.
using AddressHandler = std::function<void(uint32_t peer)>;

struct PeerAddress {
  uint32_t rank = 0;
  std::vector<uint8_t> address;
};

// One process's wireup (wireup_create .. wireup_destroy). Move-only.
class Wireup {
 public:
  Wireup(Context& ctx, const Params& p, QpFactory factory, QpRelease release = {})
      : cb_(std::make_unique<Callbacks>()) {
    cb_->factory = std::move(factory);
    cb_->release = std::move(release);
    wireup_params_t c;
    wireup_params_init(&c);
    c.rank = p.rank;
    c.nranks = p.nranks;
    c.lanes = p.lanes;
    c.job_key = p.job_key;
    c.qp_create = &Wireup::create_tramp;
    c.qp_release = cb_->release ? &Wireup::release_tramp : nullptr;
    c.qp_arg = cb_.get();
    detail::check_context(wireup_create(ctx.get(), &c, &w_));
  }
  ~Wireup() { wireup_destroy(w_); }
  Wireup(Wireup&& o) noexcept : cb_(std::move(o.cb_)), w_(std::exchange(o.w_, nullptr)) {}
  Wireup& operator=(Wireup&& o) noexcept {
    if (this != &o) {
      wireup_destroy(w_);
      cb_ = std::move(o.cb_);
      w_ = std::exchange(o.w_, nullptr);
    }
    return *this;
  }
  Wireup(const Wireup&) = delete;
  Wireup& operator=(const Wireup&) = delete;

  std::vector<uint8_t> local_address() const {
    std::vector<uint8_t> a(WIREUP_RAILS_ADDRESS_MAX);  // several rails take more than WIREUP_ADDRESS_MAX
    size_t len = a.size();
    detail::check(wireup_local_address(w_, a.data(), &len), w_);
    a.resize(len);
    return a;
  }
  void set_peers(const std::vector<PeerAddress>& peers) {
    std::vector<wireup_peer_t> c;
    for (const PeerAddress& p : peers) c.push_back(wireup_peer_t{p.rank, p.address.data(), p.address.size()});
    detail::check(wireup_set_peers(w_, c.data(), c.size()), w_);
  }
  // The job key, when it becomes known only after the address was published (wireup_set_job_key).
  void set_job_key(uint64_t job_key) { detail::check(wireup_set_job_key(w_, job_key), w_); }
  void start() { detail::check(wireup_start(w_), w_); }
  // Returns the work done (0: nothing was ready).
  int progress() {
    int work = 0;
    wireup_status_t s = wireup_progress(w_, &work);
    if (cb_->pending) std::rethrow_exception(std::exchange(cb_->pending, nullptr));
    detail::check(s, w_);
    return work;
  }
  int fd() const { return wireup_fd(w_); }
  void wait(std::chrono::milliseconds timeout) {
    detail::check(wireup_wait(w_, static_cast<int>(timeout.count())), w_);
  }
  bool done() const { return wireup_done(w_) == 1; }
  // The peer is dead (the launcher said so): its unsettled lanes are given up now. Returns how
  // many were.
  size_t fail_peer(uint32_t peer, const std::string& why) {
    size_t n = 0;
    detail::check(wireup_fail_peer(w_, peer, why.c_str(), &n), w_);
    return n;
  }

  // On demand (wireup_on_demand.h).
  void connect(uint32_t peer) { detail::check(wireup_connect(w_, peer), w_); }
  void disconnect(uint32_t peer) { detail::check(wireup_disconnect(w_, peer), w_); }
  void add_peer(const PeerAddress& p) {
    const wireup_peer_t c{p.rank, p.address.data(), p.address.size()};
    detail::check(wireup_add_peer(w_, &c), w_);
  }
  wireup_lane_state_t lane_state(uint32_t peer, uint32_t lane) const { return wireup_lane_state(w_, peer, lane); }
  // Lane events (READY, FAILED, CLOSED), delivered from progress(); nullptr stops them.
  void on_lane_event(LaneHandler h) {
    cb_->lane = std::move(h);
    detail::check(wireup_on_lane_event(w_, cb_->lane ? &Wireup::lane_tramp : nullptr, cb_.get()), w_);
  }
  void on_address_needed(AddressHandler h) {
    cb_->address = std::move(h);
    detail::check(wireup_on_address_needed(w_, cb_->address ? &Wireup::address_tramp : nullptr, cb_.get()), w_);
  }

  size_t result_count() const { return wireup_result_count(w_); }
  std::vector<wireup_result_t> results() const {
    std::vector<wireup_result_t> v(wireup_result_count(w_));
    for (size_t i = 0; i < v.size(); ++i) {
      WIREUP_STRUCT_INIT(&v[i]);
      detail::check(wireup_result_get(w_, i, &v[i]), w_);
    }
    return v;
  }
  std::vector<wireup_peer_error_t> errors() const {
    std::vector<wireup_peer_error_t> v(wireup_error_count(w_));
    for (size_t i = 0; i < v.size(); ++i) {
      WIREUP_STRUCT_INIT(&v[i]);
      detail::check(wireup_error_get(w_, i, &v[i]), w_);
    }
    return v;
  }
  // Steady-state events (DISCONNECTED, ...), delivered from progress(); nullptr stops them.
  void on_event(EventHandler h) {
    cb_->event = std::move(h);
    register_events();
  }
  // Only the peer-down events, beside on_event's handler (which gets them too); nullptr stops
  // them.
  void on_peer_down(PeerDownHandler h) {
    cb_->peer_down = std::move(h);
    register_events();
  }
  wireup_counters_t counters() const {
    wireup_counters_t c;
    WIREUP_STRUCT_INIT(&c);
    detail::check(wireup_counters_get(w_, &c), w_);
    return c;
  }
  // One labelled count: the key is read as the group says (wireup_tally_group_t); key_name
  // is the key as wireup_stats_json writes it.
  struct Tally {
    wireup_tally_group_t group = WIREUP_TALLY_REJECTS_RECEIVED;
    uint32_t key = 0;
    std::string key_name;
    uint64_t count = 0;
  };
  std::vector<Tally> tallies() const {
    std::vector<Tally> v(wireup_tally_count(w_));
    for (size_t i = 0; i < v.size(); ++i) {
      wireup_tally_t t;
      WIREUP_STRUCT_INIT(&t);
      detail::check(wireup_tally_get(w_, i, &t), w_);
      v[i] = Tally{t.group, t.key, detail::str(t.key_name), t.count};
    }
    return v;
  }
  // Durations in ns of one phase, one per connection it applies to.
  std::vector<uint64_t> phase_samples(wireup_phase_t phase) const {
    size_t n = 0;
    wireup_status_t s = wireup_phase_samples(w_, phase, nullptr, &n);  // asks for the count
    if (s != WIREUP_ERR_BUFFER_TOO_SMALL) detail::check(s, w_);
    std::vector<uint64_t> v(n);
    if (n > 0) detail::check(wireup_phase_samples(w_, phase, v.data(), &n), w_);
    v.resize(n);
    return v;
  }
  std::string stats_json() const {
    size_t len = 0;
    wireup_status_t s = wireup_stats_json(w_, nullptr, &len);  // asks for the size
    if (s != WIREUP_ERR_BUFFER_TOO_SMALL) detail::check(s, w_);
    std::string out(len, '\0');
    detail::check(wireup_stats_json(w_, out.data(), &len), w_);
    out.resize(len - 1);  // drop the NUL
    return out;
  }
  wireup_t* get() const { return w_; }

 private:
  // On the heap so the C side's `arg` survives moves of the Wireup object.
  struct Callbacks {
    QpFactory factory;
    QpRelease release;
    EventHandler event;
    PeerDownHandler peer_down;
    LaneHandler lane;
    AddressHandler address;
    std::exception_ptr pending;  // thrown by a callback, rethrown by progress()
  };
  static int create_tramp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** out) {
    auto* cb = static_cast<Callbacks*>(arg);
    try {
      errno = 0;
      struct ibv_qp* qp = cb->factory(*req);
      if (qp == nullptr) return errno != 0 ? errno : ENOMEM;
      *out = qp;
      return 0;
    } catch (...) {
      cb->pending = std::current_exception();
      return ECANCELED;
    }
  }
  static void release_tramp(void* arg, const wireup_qp_request_t* req, struct ibv_qp* qp) {
    auto* cb = static_cast<Callbacks*>(arg);
    try {
      cb->release(*req, qp);
    } catch (...) {
      if (!cb->pending) cb->pending = std::current_exception();
    }
  }
  void register_events() {
    const bool any = cb_->event || cb_->peer_down;
    detail::check(wireup_on_event(w_, any ? &Wireup::event_tramp : nullptr, cb_.get()), w_);
  }
  static void event_tramp(void* arg, const wireup_event_t* ev) {
    auto* cb = static_cast<Callbacks*>(arg);
    try {
      if (cb->peer_down && ev->type == WIREUP_EVENT_PEER_DOWN && WIREUP_HAS_FIELD(ev, cause))
        cb->peer_down(PeerDown{ev->peer, ev->lanes_down, ev->cause});
      if (cb->event) cb->event(*ev);
    } catch (...) {
      if (!cb->pending) cb->pending = std::current_exception();
    }
  }

  static void lane_tramp(void* arg, const wireup_lane_event_t* ev) {
    auto* cb = static_cast<Callbacks*>(arg);
    try {
      cb->lane(*ev);
    } catch (...) {
      if (!cb->pending) cb->pending = std::current_exception();
    }
  }
  // Called from connect() too (not only from progress()): what it throws is rethrown by the
  // next progress().
  static void address_tramp(void* arg, uint32_t peer) {
    auto* cb = static_cast<Callbacks*>(arg);
    try {
      cb->address(peer);
    } catch (...) {
      if (!cb->pending) cb->pending = std::current_exception();
    }
  }

  std::unique_ptr<Callbacks> cb_;
  wireup_t* w_ = nullptr;
};

}  // namespace wireup
