// The rdma provider: one RAII type per native object of librdmacm / libibverbs.
// Nothing clever here: every method is the matching library call plus error context.
#pragma once

#include <optional>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <map>
#include <memory>
#include <vector>

#include "provider/provider.h"

namespace wireup::prov::rdma {

class RdmaProvider;

class RdmaDevice final : public Device {
 public:
  RdmaDevice(ibv_context* ctx, DeviceInfo info) : ctx_(ctx), info_(std::move(info)) {}
  const DeviceInfo& info() const override { return info_; }
  Result<std::unique_ptr<Pd>> alloc_pd() override;
  Result<std::unique_ptr<Cq>> create_cq(int cqe, bool with_comp_channel) override;
  void* native() const override { return ctx_; }
  // RdmaProvider::wait() saw the async fd readable.
  void saw_readable() { maybe_pending_ = true; }
  ibv_context* ctx() const { return ctx_; }

 protected:
  // ibv_context::async_fd and ibv_get_async_event, library mode only (async.cc).
  int native_async_fd() const override { return ctx_->async_fd; }
  Result<DeviceEvent> native_get_async_event() override;
  bool native_async_pending() const override;
  bool native_async_worth_reading(Nanos now) override;
  // Makes async_fd non-blocking, so that a read never sleeps: the first library claim only
  // (in transport mode the fd is the transport's, flags and all).
  Status native_take_async() override;

 private:
  ibv_context* ctx_;  // owned by librdmacm (rdma_get_devices), freed by the provider
  DeviceInfo info_;
  // async_worth_reading(): an event may be pending (nothing read yet, a wait saw the fd
  // readable, or the last read found one); else not before next_read_ (the provider's
  // clock), which the first question after an empty read sets.
  bool maybe_pending_ = true;
  std::optional<Nanos> next_read_;
};

// The seam's copy of a native async event of `device` (QPN, port, or the CQ/SRQ/WQ handle by
// its scope); it is the caller's to ack. invalid_argument for an event type the seam does not
// know or a QP event without its QP.
Result<DeviceEvent> device_event_of(const ibv_async_event& e, const std::string& device);

// Reads name, vendor, ports, PCI location and netdev of one device.
DeviceInfo describe_device(ibv_context* ctx);

class RdmaPd final : public Pd {
 public:
  RdmaPd(RdmaDevice& dev, ibv_pd* pd) : dev_(dev), pd_(pd) {}
  ~RdmaPd() override;
  Result<std::unique_ptr<Qp>> create_qp(const QpInitAttr& attr) override;
  Result<std::unique_ptr<Mr>> reg_mr(void* addr, size_t len, uint32_t access_flags) override;
  Result<std::unique_ptr<Srq>> create_srq(const SrqInitAttr& attr) override;
  Device& device() const override { return dev_; }
  void* native() const override { return pd_; }

 private:
  RdmaDevice& dev_;
  ibv_pd* pd_;
};

// ibv_comp_channel, owned apart from the CQ so it is destroyed after it.
class CompChannel {
 public:
  explicit CompChannel(ibv_comp_channel* ch) : ch_(ch) {}
  ~CompChannel();
  CompChannel(const CompChannel&) = delete;
  CompChannel& operator=(const CompChannel&) = delete;
  ibv_comp_channel* get() const { return ch_; }

 private:
  ibv_comp_channel* ch_;
};

class RdmaCq final : public Cq {
 public:
  RdmaCq(std::unique_ptr<CompChannel> ch, ibv_cq* cq) : channel_(std::move(ch)), cq_(cq) {}
  ~RdmaCq() override;
  Result<int> poll(std::span<WorkCompletion> wc) override;
  int comp_fd() const override { return channel_ ? channel_->get()->fd : -1; }
  Status req_notify() override;
  Status consume_event() override;
  void* native() const override { return cq_; }

 private:
  std::unique_ptr<CompChannel> channel_;  // declared first: destroyed after the CQ
  ibv_cq* cq_;
  unsigned unacked_events_ = 0;
};

class RdmaQp final : public Qp {
 public:
  // Owns `qp`: the destructor calls ibv_destroy_qp.
  RdmaQp(RdmaDevice& dev, ibv_qp* qp) : RdmaQp(dev, qp, Ownership::owned) {}
  // A QP someone else created on `dev` and destroys (a transport's, through the C API's
  // factory): the same verbs calls, never ibv_destroy_qp.
  static std::unique_ptr<RdmaQp> unowned(RdmaDevice& dev, ibv_qp* qp) {
    return std::unique_ptr<RdmaQp>(new RdmaQp(dev, qp, Ownership::unowned));
  }
  ~RdmaQp() override;
  RdmaQp(const RdmaQp&) = delete;
  RdmaQp& operator=(const RdmaQp&) = delete;
  uint32_t qpn() const override { return qp_->qp_num; }
  QpState state() const override { return state_; }
  Status modify(const QpAttr& attr, uint32_t mask) override;
  Result<QpAttr> query(uint32_t mask) override;
  Result<Ece> query_ece() override;
  Status set_ece(const Ece& ece) override;
  Status post(const SendWr& wr) override;
  Status post_recv(uint64_t wr_id, const Sge& sge) override;
  bool has_srq() const override { return qp_->srq != nullptr; }
  Device& device() const override { return dev_; }
  void* native() const override { return qp_; }

 private:
  enum class Ownership : uint8_t { owned, unowned };
  RdmaQp(RdmaDevice& dev, ibv_qp* qp, Ownership o) : dev_(dev), qp_(qp), ownership_(o) {}

  RdmaDevice& dev_;
  ibv_qp* qp_;
  Ownership ownership_;
  QpState state_ = QpState::reset;
};

class RdmaSrq final : public Srq {
 public:
  RdmaSrq(RdmaDevice& dev, ibv_srq* srq) : dev_(dev), srq_(srq) {}
  ~RdmaSrq() override;
  RdmaSrq(const RdmaSrq&) = delete;
  RdmaSrq& operator=(const RdmaSrq&) = delete;
  Status post_recv(uint64_t wr_id, const Sge& sge) override;
  void* native() const override { return srq_; }

 private:
  RdmaDevice& dev_;
  ibv_srq* srq_;
};

class RdmaMr final : public Mr {
 public:
  explicit RdmaMr(ibv_mr* mr) : mr_(mr) {}
  ~RdmaMr() override;
  uint32_t lkey() const override { return mr_->lkey; }
  uint32_t rkey() const override { return mr_->rkey; }

 private:
  ibv_mr* mr_;
};

class RdmaEventChannel final : public EventChannel {
 public:
  // What the channel's ids point at. Outlives the wrapper when the channel is destroyed with
  // ids still on it (an owner's teardown bug, logged at error level): the native channel and
  // this record are then left alone so that those ids' rdma_destroy_id stays safe, and the last
  // of those ids closes both (RdmaCmId::attach).
  struct Shared {
    rdma_event_channel* ch = nullptr;
    RdmaEventChannel* owner = nullptr;  // null once the wrapper is gone
    size_t ids = 0;
  };
  RdmaEventChannel(RdmaProvider& prov, rdma_event_channel* ch) : prov_(prov), shared_(new Shared{ch, this, 0}) {}
  ~RdmaEventChannel() override;
  int fd() const override { return shared_->ch->fd; }
  Result<CmEvent> get_event() override;
  bool worth_reading(Nanos now) override;
  // RdmaProvider::wait() saw the fd readable.
  void saw_readable() { maybe_pending_ = true; }
  rdma_event_channel* get() const { return shared_->ch; }
  Shared* shared() const { return shared_; }

 private:
  RdmaProvider& prov_;
  Shared* shared_;
  // worth_reading(), as RdmaDevice's async_worth_reading().
  bool maybe_pending_ = true;
  std::optional<Nanos> next_read_;
};

class RdmaCmId final : public CmId {
 public:
  RdmaCmId(RdmaProvider& prov, rdma_cm_id* id, RdmaEventChannel& ch, Route route);
  ~RdmaCmId() override;
  Status bind_addr(const SockAddr& addr) override;
  Status resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) override;
  Status resolve_route(int timeout_ms) override;
  Status listen(int backlog) override;
  Status connect(const ConnParam& param) override;
  Status accept(const ConnParam& param) override;
  Status reject(std::span<const uint8_t> private_data) override;
  Status reject_ece(std::span<const uint8_t> private_data) override;
  Status establish() override;
  Status disconnect() override;
  Status notify_comm_est() override;
  Status set_tos(uint8_t tos) override;
  Status set_reuseaddr(bool on) override;
  Status set_ack_timeout(uint8_t timeout) override;
  Result<QpAttrWithMask> init_qp_attr(QpState state) override;
  Status set_local_ece(const Ece& ece) override;
  Result<Ece> get_remote_ece() override;
  SockAddr local_addr() const override;
  SockAddr peer_addr() const override;
  Device* device() const override;
  uint8_t port_num() const override { return id_->port_num; }
  EventChannel* channel() const override { return channel_ ? channel_->owner : nullptr; }

 private:
  // Error for a failed rdma_* call (they return -1 and set errno), with the peer address.
  Error fail(const char* call, std::string detail = {}) const;
  Status check_conn_param(const char* call, const ConnParam& p) const;
  Status migrate_native(EventChannel& to) override;
  void attach(RdmaEventChannel::Shared* ch);

  RdmaProvider& prov_;
  rdma_cm_id* id_;
  RdmaEventChannel::Shared* channel_ = nullptr;
};

class RdmaProvider final : public Provider {
 public:
  static Result<std::unique_ptr<RdmaProvider>> create();
  ~RdmaProvider() override;
  std::string_view name() const override { return "rdma"; }
  Result<std::vector<Device*>> devices() override;
  Result<std::unique_ptr<EventChannel>> create_channel() override;
  Result<std::unique_ptr<CmId>> create_id(EventChannel& ch, PortSpace ps, Route route) override;
  using Provider::wait;
  Status wait(std::span<EventChannel* const> channels, std::span<Device* const> devices, Nanos timeout) override;
  const Clock& clock() const override { return SteadyClock::instance(); }

  RdmaDevice* device_for(ibv_context* ctx) const;

 private:
  RdmaProvider() = default;
  ibv_context** contexts_ = nullptr;  // rdma_get_devices(); freed last
  std::vector<std::unique_ptr<RdmaDevice>> devices_;
};

}  // namespace wireup::prov::rdma
