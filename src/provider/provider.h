// The seam to the fabric: rdma_cm ids and event channels, and the verbs subset the library
// needs (PD, CQ, QP, MR, ECE). Two implementations sit behind it: "rdma" (librdmacm +
// libibverbs, a thin 1:1 translation) and "sim" (an in-process simulated fabric).
//
// Contract notes (these follow the real stack; tests/conformance checks both providers):
//  - Every object is move-less and owned through std::unique_ptr; destroying it releases the
//    native object. A CmId must be destroyed only after every event of it was acked, exactly
//    as rdma_destroy_id(3) requires (the real call blocks until then).
//  - EventChannel::get_event() never blocks: ErrorCode::would_block when nothing is pending.
//    Provider::wait() is the only blocking call; on sim it advances the virtual clock.
//  - An EventChannel must outlive every id on it (rdma_destroy_id talks to the channel). Both
//    providers count a channel's ids; one destroyed with ids still on it says so at error
//    level and keeps those ids safe to destroy later (rdma: the native channel is left open).
//  - Events are dispatched by type, not by a void*: every id carries a Route (the sink that
//    handles its events and a tag the sink chose), set when the id is created and again when
//    it is migrated; dispatch() hands each event to its id's sink.
//  - A CmEvent must be acked (ack() or its destructor) before its id is migrated or destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "provider/cm_event.h"
#include "provider/types.h"

namespace wireup::prov {

class CmId;
class Device;
class Pd;
class Cq;
class Qp;
class Mr;
class Srq;
class EventChannel;

// Where an id's events go: a sink, and a tag of the sink's choosing (e.g. which pair).
struct Route {
  CmEventSink* sink = nullptr;
  uint64_t tag = 0;
  constexpr Route() = default;
  constexpr Route(std::nullptr_t) {}
  constexpr Route(CmEventSink* s, uint64_t t = 0) : sink(s), tag(t) {}
};

class EventChannel {
 public:
  virtual ~EventChannel() = default;
  // Pollable fd (readable when an event is pending); -1 if the provider has none.
  virtual int fd() const = 0;
  // Non-blocking rdma_get_cm_event: would_block when nothing is pending.
  virtual Result<CmEvent> get_event() = 0;
  // False only when get_event() certainly has nothing (the sim's queue is empty): dispatch()
  // then skips the call. Where only the read itself can tell (rdma), always true.
  virtual bool maybe_pending() const { return true; }
  // For a channel that rarely has an event and is asked at every progress (the engine's
  // steady channel while it wires up), as Device::async_worth_reading: exact where asking
  // costs nothing (maybe_pending()), a hint on rdma, where each read is a system call (the
  // last wait() saw the fd readable, the last read found an event, or kPollInterval passed
  // since the first question after a read that found none). `now`: the caller's reading of
  // the provider's clock. A caller whose own loop polls the fd reads an event within the
  // interval (and, if it polls level-triggered, turns its loop meanwhile).
  virtual bool worth_reading(Nanos now) {
    (void)now;
    return maybe_pending();
  }
  static constexpr Nanos kPollInterval = std::chrono::milliseconds(1);
};

// Takes up to `max` events from `ch` and hands each to its id's sink (a CONNECT_REQUEST to the
// listener's). Events of ids without a sink are acked and counted in `unrouted` (if given).
// Returns the number of events handled; a channel error other than would_block is logged.
int dispatch(EventChannel& ch, int max, size_t* unrouted = nullptr);

class CmId {
 public:
  virtual ~CmId() = default;
  CmId(const CmId&) = delete;
  CmId& operator=(const CmId&) = delete;
  virtual Status bind_addr(const SockAddr& addr) = 0;
  virtual Status resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) = 0;
  virtual Status resolve_route(int timeout_ms) = 0;
  virtual Status listen(int backlog) = 0;
  virtual Status connect(const ConnParam& param) = 0;
  virtual Status accept(const ConnParam& param) = 0;
  virtual Status reject(std::span<const uint8_t> private_data) = 0;
  virtual Status reject_ece(std::span<const uint8_t> private_data) = 0;
  virtual Status establish() = 0;
  virtual Status disconnect() = 0;
  // rdma_notify(IBV_EVENT_COMM_EST): a receive completed before ESTABLISHED.
  virtual Status notify_comm_est() = 0;
  virtual Status set_tos(uint8_t tos) = 0;
  virtual Status set_reuseaddr(bool on) = 0;
  virtual Status set_ack_timeout(uint8_t timeout) = 0;  // 4.096 us * 2^timeout
  // rdma_init_qp_attr: what the CM wants the QP to get for `state` (INIT, RTR or RTS).
  virtual Result<QpAttrWithMask> init_qp_attr(QpState state) = 0;
  virtual Status set_local_ece(const Ece& ece) = 0;
  virtual Result<Ece> get_remote_ece() = 0;
  // rdma_migrate_id: pending events move along; blocks (rdma) while an event of this id
  // retrieved from the old channel is un-acked. On success the id's events go to `r`.
  Status migrate(EventChannel& to, Route r);
  Status migrate(EventChannel& to) { return migrate(to, route_); }

  virtual SockAddr local_addr() const = 0;
  virtual SockAddr peer_addr() const = 0;
  // The device the id is bound to (after resolve_addr, or on a CONNECT_REQUEST id); nullptr
  // before. Owned by the provider.
  virtual Device* device() const = 0;
  virtual uint8_t port_num() const = 0;
  virtual EventChannel* channel() const = 0;
  const Route& route() const { return route_; }
  void set_route(Route r) { route_ = r; }

 protected:
  explicit CmId(Route r) : route_(r) {}
  // The provider's rdma_migrate_id; migrate() re-routes the id once it succeeded.
  virtual Status migrate_native(EventChannel& to) = 0;

 private:
  Route route_;
};

class Mr {
 public:
  virtual ~Mr() = default;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
};

class Cq {
 public:
  virtual ~Cq() = default;
  // ibv_poll_cq: number of completions written into wc.
  virtual Result<int> poll(std::span<WorkCompletion> wc) = 0;
  // Completion channel (ibv_comp_channel) fd, -1 when created without one.
  virtual int comp_fd() const = 0;
  // ibv_req_notify_cq; then, after comp_fd is readable, consume_event() acks it.
  virtual Status req_notify() = 0;
  virtual Status consume_event() = 0;
  virtual void* native() const = 0;  // ibv_cq* on rdma
};

class Qp {
 public:
  virtual ~Qp() = default;
  virtual uint32_t qpn() const = 0;
  virtual QpState state() const = 0;  // as last set through this object
  virtual Status modify(const QpAttr& attr, uint32_t mask) = 0;
  virtual Result<QpAttr> query(uint32_t mask) = 0;
  // ibv_query_ece: on mlx5 {0x15b3, what the firmware last answered}: what it took at the last
  // modify that followed a set_ece (its answer at create before any). EOPNOTSUPP: no ECE verbs.
  virtual Result<Ece> query_ece() = 0;
  // ibv_set_ece: stores the options for the next modify and writes nothing back (mlx5 also
  // clears the last answer); the firmware decides at that modify, and query_ece after it says
  // what was taken (rdma-core providers/mlx5/verbs.c, mlx5_set_ece / mlx5_modify_qp).
  // EOPNOTSUPP: the device has no ECE; EINVAL: another vendor.
  virtual Status set_ece(const Ece& ece) = 0;
  // ibv_post_send of one work request. Errors of the post itself (a QP not ready to send, a
  // full send queue, bad arguments) are returned; what happens on the wire comes as a
  // completion.
  virtual Status post(const SendWr& wr) = 0;
  // The SEND shorthand.
  Status post_send(uint64_t wr_id, const Sge& sge, bool signaled) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sge = sge;
    wr.signaled = signaled;
    return post(wr);
  }
  // ibv_post_recv; an SRQ-attached QP has no receive queue of its own (EINVAL, as verbs).
  virtual Status post_recv(uint64_t wr_id, const Sge& sge) = 0;
  // Whether the QP was created with an SRQ: its receives come from there (and the REQ/REP
  // that connects it says so in its SRQ bit).
  virtual bool has_srq() const = 0;
  virtual Device& device() const = 0;
  virtual void* native() const = 0;  // ibv_qp* on rdma
};

struct QpInitAttr {
  QpType type = QpType::rc;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  QpCaps caps;
  bool sq_sig_all = false;
  Srq* srq = nullptr;  // receives come from this SRQ (same PD); caps.max_recv_wr is ignored
};

// A shared receive queue (ibv_srq): receives posted here serve every QP attached to it.
// It must outlive those QPs (ibv_destroy_srq refuses with EBUSY while one is attached).
class Srq {
 public:
  virtual ~Srq() = default;
  virtual Status post_recv(uint64_t wr_id, const Sge& sge) = 0;  // ibv_post_srq_recv
  virtual void* native() const = 0;  // ibv_srq* on rdma
};

class Pd {
 public:
  virtual ~Pd() = default;
  virtual Result<std::unique_ptr<Qp>> create_qp(const QpInitAttr& attr) = 0;
  virtual Result<std::unique_ptr<Mr>> reg_mr(void* addr, size_t len, uint32_t access_flags) = 0;
  virtual Result<std::unique_ptr<Srq>> create_srq(const SrqInitAttr& attr) = 0;
  virtual Device& device() const = 0;
  virtual void* native() const = 0;  // ibv_pd* on rdma
};

// Takes a device's asynchronous events. A QP's event goes to the one sink that owns the QP,
// or to every sink when none does (a QP of the transport's own); a port's, a CQ's or the
// device's event goes to every sink. Called from dispatch_device_events(), acked already.
class DeviceEventSink {
 public:
  virtual bool owns_qp(uint32_t qpn) const = 0;
  virtual void on_device_event(const DeviceEvent& ev) = 0;

 protected:
  ~DeviceEventSink() = default;
};

// Who reads a device's async events (config device.async_events). The events of one
// ibv_context go to whoever calls ibv_get_async_event first, so exactly one party may read
// them: a transport with its own async handler (UCX's, Open MPI's) must own them and hand
// the library those it was given (Device::post_async_event).
enum class AsyncOwner : uint8_t {
  library,    // the library reads and acks them (the fd made non-blocking) and forwards the rest
  transport,  // the library never touches the native fd; it reads only what the transport posts
};
const char* to_string(AsyncOwner o);

// An open RDMA device (ibv_context); owned by the provider, alive as long as it is.
//
// Its async events reach the library from one of two sources, by its owner (claim_async):
// library, the native events (ibv_get_async_event); transport, an inbox the transport fills
// with the events it read itself (post_async_event). async_fd() / get_async_event() /
// async_pending() / async_worth_reading() read whichever source is in force; before any
// claim, neither (fd -1, nothing pending): nothing reads a device nobody claimed.
class Device {
 public:
  Device();
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  virtual const DeviceInfo& info() const = 0;
  virtual Result<std::unique_ptr<Pd>> alloc_pd() = 0;
  virtual Result<std::unique_ptr<Cq>> create_cq(int cqe, bool with_comp_channel) = 0;
  virtual void* native() const = 0;  // ibv_context* on rdma

  // A pollable fd, readable when get_async_event() has an event: the native async fd
  // (library), the inbox's eventfd (transport); -1 before a claim or without one.
  int async_fd() const;
  // Non-blocking: the next event, copied out (a native one acked at once with
  // ibv_ack_async_event: ibv_destroy_qp waits for the acks of its QP's events, so none is
  // ever held); would_block when nothing is pending (or nobody claimed the events).
  Result<DeviceEvent> get_async_event();
  // Does get_async_event() have an event without blocking (for waits that cannot poll fds).
  bool async_pending() const;
  // Whether a caller that polls at every progress should call get_async_event() now (`now`:
  // the caller's reading of the provider's clock, so that asking costs no clock read of its
  // own): exact where that costs nothing (the sim's queue, the inbox), a hint where each call
  // is a system call that nearly always answers EAGAIN (rdma, library mode: the last wait()
  // saw the fd readable, the last read found an event, or kAsyncPollInterval passed since
  // the first call after a read that found none). So an event is read at once after a wait
  // that saw it, and within the interval by a caller whose own event loop polls the fd.
  bool async_worth_reading(Nanos now);
  static constexpr Nanos kAsyncPollInterval = std::chrono::milliseconds(1);

  // Takes a share of the async events for `o` (each DeviceSubscription holds one). Every
  // holder must agree: a claim for the other owner while one is held fails (invalid_argument,
  // naming the device and both owners). The first library claim readies the native source
  // (rdma: the fd made non-blocking, once; the flag is left set afterwards).
  Status claim_async(AsyncOwner o);
  void release_async(AsyncOwner o);
  // The owner while a claim is held.
  std::optional<AsyncOwner> async_owner() const;
  // Transport mode: an event the transport read from the native source, acked by it (the
  // library keeps a copy, nothing that points into it but the opaque object handle).
  // get_async_event() returns it next. Callable from any thread (an async thread of the
  // transport's); the events are handled by the thread that progresses the library.
  void post_async_event(DeviceEvent ev);
  // Events posted and not read yet.
  size_t posted_pending() const;

  // The sinks dispatch_device_events() hands this device's events to (not owned; see
  // DeviceSubscription). Several owners (engines) may share one device.
  void add_sink(DeviceEventSink* s);
  void remove_sink(DeviceEventSink* s);
  std::span<DeviceEventSink* const> sinks() const { return sinks_; }

 protected:
  // The native source (ibv_context::async_fd and ibv_get_async_event on rdma, the simulated
  // hardware's queue on sim), as async_fd() ... describe them for library mode.
  virtual int native_async_fd() const = 0;
  virtual Result<DeviceEvent> native_get_async_event() = 0;
  virtual bool native_async_pending() const = 0;
  virtual bool native_async_worth_reading(Nanos now) = 0;
  // The first library claim: ready the native source for non-blocking reads.
  virtual Status native_take_async() { return Status::ok(); }

 private:
  // The inbox of transport mode: a queue, and an eventfd readable while it is not empty.
  struct Inbox;

  std::vector<DeviceEventSink*> sinks_;
  std::optional<AsyncOwner> owner_;
  uint32_t claims_ = 0;
  bool native_ready_ = false;
  std::unique_ptr<Inbox> inbox_;
};

// A sink's place on a device, for as long as this object lives, with its share of the
// device's async events (Device::claim_async).
class DeviceSubscription {
 public:
  DeviceSubscription() = default;
  // Fails when the device's async events are claimed for the other owner.
  static Result<DeviceSubscription> make(Device& d, DeviceEventSink& s, AsyncOwner o);
  ~DeviceSubscription() { reset(); }
  DeviceSubscription(DeviceSubscription&& o) noexcept
      : dev_(std::exchange(o.dev_, nullptr)), sink_(o.sink_), owner_(o.owner_) {}
  DeviceSubscription& operator=(DeviceSubscription&& o) noexcept;
  void reset();
  Device* device() const { return dev_; }
  AsyncOwner owner() const { return owner_; }

 private:
  Device* dev_ = nullptr;
  DeviceEventSink* sink_ = nullptr;
  AsyncOwner owner_ = AsyncOwner::library;
};

// Hands one event to `dev`'s sinks (see DeviceEventSink); false when there was none.
bool deliver_device_event(Device& dev, const DeviceEvent& ev);

// Takes up to `max` async events of `dev` and hands each to its sinks (see DeviceEventSink).
// Returns the number taken; events no sink was there for are counted in `unclaimed`.
int dispatch_device_events(Device& dev, int max, size_t* unclaimed = nullptr);

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view name() const = 0;
  // Devices the CM can use; no_device with one clear sentence when there are none.
  virtual Result<std::vector<Device*>> devices() = 0;
  virtual Result<std::unique_ptr<EventChannel>> create_channel() = 0;
  virtual Result<std::unique_ptr<CmId>> create_id(EventChannel& ch, PortSpace ps, Route route) = 0;
  // Waits until one of `channels` has an event, one of `devices` an async event, or
  // `timeout` passes (ok either way; a timeout is not an error). On sim this advances the
  // virtual clock.
  virtual Status wait(std::span<EventChannel* const> channels, std::span<Device* const> devices,
                      Nanos timeout) = 0;
  Status wait(std::span<EventChannel* const> channels, Nanos timeout) { return wait(channels, {}, timeout); }
  virtual const Clock& clock() const = 0;
};

// The rdma provider over the live librdmacm/libibverbs. Fails with no_device and one clear
// sentence when the machine has no RDMA device.
Result<std::unique_ptr<Provider>> create_rdma_provider();

}  // namespace wireup::prov
