// The wrapper objects of the fault provider (fault/provider.h): one per object kind of the
// seam that has a call a fault may hit. CQs, MRs and SRQs are handed out unwrapped: the calls
// that make them are counted at their maker (Device, Pd); theirs are the data path's.
#pragma once

#include <deque>
#include <unordered_map>

#include "fault/provider.h"

namespace wireup::fault {

class FaultProvider;
class FaultDevice;

// The caller's return address: the place in the code that made the wrapped call.
#define WIREUP_FAULT_SITE __builtin_return_address(0)

class FaultChannel final : public prov::EventChannel {
 public:
  FaultChannel(FaultProvider& p, std::unique_ptr<prov::EventChannel> inner)
      : prov_(p), inner_(std::move(inner)) {}
  ~FaultChannel() override;
  int fd() const override { return inner_->fd(); }
  Result<prov::CmEvent> get_event() override;
  bool maybe_pending() const override { return !held_.empty() || inner_->maybe_pending(); }
  bool worth_reading(Nanos now) override { return !held_.empty() || inner_->worth_reading(now); }
  prov::EventChannel& inner() const { return *inner_; }
  bool holds_event() const { return !held_.empty(); }
  // The held events of `id` (a listener's: its pending requests too), taken out; and put back
  // on this channel (a migration carries them).
  std::vector<prov::CmEvent> take_events_of(const prov::CmId* id);
  void put_events(std::vector<prov::CmEvent> evs);

 private:
  Result<prov::CmEvent> translate(prov::CmEvent ev, const void* site);
  FaultProvider& prov_;
  std::unique_ptr<prov::EventChannel> inner_;
  // Events read from the inner channel while a read was failed: handed out first, in order
  // (the real kernel keeps an event it could not copy out at the head of its queue).
  std::deque<prov::CmEvent> held_;
};

class FaultCmId final : public prov::CmId {
 public:
  FaultCmId(FaultProvider& p, std::unique_ptr<prov::CmId> inner, FaultChannel& ch, prov::Route r);
  ~FaultCmId() override;
  Status bind_addr(const prov::SockAddr& addr) override;
  Status resolve_addr(const prov::SockAddr* src, const prov::SockAddr& dst, int timeout_ms) override;
  Status resolve_route(int timeout_ms) override;
  Status listen(int backlog) override;
  Status connect(const prov::ConnParam& param) override;
  Status accept(const prov::ConnParam& param) override;
  Status reject(std::span<const uint8_t> private_data) override;
  Status reject_ece(std::span<const uint8_t> private_data) override;
  Status establish() override;
  Status disconnect() override;
  Status notify_comm_est() override { return inner_->notify_comm_est(); }
  Status set_tos(uint8_t tos) override;
  Status set_reuseaddr(bool on) override;
  Status set_ack_timeout(uint8_t timeout) override;
  Result<prov::QpAttrWithMask> init_qp_attr(prov::QpState state) override;
  Status set_local_ece(const prov::Ece& ece) override { return inner_->set_local_ece(ece); }
  Result<prov::Ece> get_remote_ece() override { return inner_->get_remote_ece(); }
  prov::SockAddr local_addr() const override { return inner_->local_addr(); }
  prov::SockAddr peer_addr() const override { return inner_->peer_addr(); }
  prov::Device* device() const override;
  uint8_t port_num() const override { return inner_->port_num(); }
  prov::EventChannel* channel() const override { return channel_; }
  prov::CmId& inner() const { return *inner_; }

 private:
  Status migrate_native(prov::EventChannel& to) override;
  // Whether this call of `k` fails; `site` the caller's address.
  bool fails(Kind k, const void* site);
  Error failure(Kind k) const;

  FaultProvider& prov_;
  std::unique_ptr<prov::CmId> inner_;
  FaultChannel* channel_;
};

class FaultQp final : public prov::Qp {
 public:
  FaultQp(FaultProvider& p, FaultDevice& dev, std::unique_ptr<prov::Qp> inner)
      : prov_(p), dev_(dev), inner_(std::move(inner)) {}
  uint32_t qpn() const override { return inner_->qpn(); }
  prov::QpState state() const override { return inner_->state(); }
  Status modify(const prov::QpAttr& attr, uint32_t mask) override;
  Result<prov::QpAttr> query(uint32_t mask) override { return inner_->query(mask); }
  Result<prov::Ece> query_ece() override { return inner_->query_ece(); }
  Status set_ece(const prov::Ece& ece) override { return inner_->set_ece(ece); }
  Status post(const prov::SendWr& wr) override;
  Status post_recv(uint64_t wr_id, const prov::Sge& sge) override;
  bool has_srq() const override { return inner_->has_srq(); }
  prov::Device& device() const override;
  void* native() const override { return inner_->native(); }

 private:
  FaultProvider& prov_;
  FaultDevice& dev_;
  std::unique_ptr<prov::Qp> inner_;
};

class FaultPd final : public prov::Pd {
 public:
  FaultPd(FaultProvider& p, FaultDevice& dev, std::unique_ptr<prov::Pd> inner)
      : prov_(p), dev_(dev), inner_(std::move(inner)) {}
  Result<std::unique_ptr<prov::Qp>> create_qp(const prov::QpInitAttr& attr) override;
  Result<std::unique_ptr<prov::Mr>> reg_mr(void* addr, size_t len, uint32_t access_flags) override;
  Result<std::unique_ptr<prov::Srq>> create_srq(const prov::SrqInitAttr& attr) override;
  prov::Device& device() const override;
  void* native() const override { return inner_->native(); }

 private:
  FaultProvider& prov_;
  FaultDevice& dev_;
  std::unique_ptr<prov::Pd> inner_;
};

class FaultDevice final : public prov::Device {
 public:
  FaultDevice(FaultProvider& p, prov::Device& inner) : prov_(p), inner_(inner) {}
  ~FaultDevice() override;
  const prov::DeviceInfo& info() const override { return inner_.info(); }
  Result<std::unique_ptr<prov::Pd>> alloc_pd() override;
  Result<std::unique_ptr<prov::Cq>> create_cq(int cqe, bool with_comp_channel) override;
  void* native() const override { return inner_.native(); }
  prov::Device& inner() const { return inner_; }

 protected:
  // The inner device's events in library mode: it is claimed for the library once, here.
  int native_async_fd() const override { return inner_.async_fd(); }
  Result<prov::DeviceEvent> native_get_async_event() override { return inner_.get_async_event(); }
  bool native_async_pending() const override { return inner_.async_pending(); }
  bool native_async_worth_reading(Nanos now) override { return inner_.async_worth_reading(now); }
  Status native_take_async() override;

 private:
  FaultProvider& prov_;
  prov::Device& inner_;
  bool claimed_inner_ = false;
};

class FaultProvider final : public prov::Provider {
 public:
  FaultProvider(prov::Provider& inner, std::unique_ptr<prov::Provider> owned, std::shared_ptr<Plan> plan);
  ~FaultProvider() override;
  std::string_view name() const override { return name_; }
  Result<std::vector<prov::Device*>> devices() override;
  Result<std::unique_ptr<prov::EventChannel>> create_channel() override;
  Result<std::unique_ptr<prov::CmId>> create_id(prov::EventChannel& ch, prov::PortSpace ps,
                                                 prov::Route route) override;
  using Provider::wait;
  Status wait(std::span<prov::EventChannel* const> channels, std::span<prov::Device* const> devices,
              Nanos timeout) override;
  const Clock& clock() const override { return inner_.clock(); }

  Plan& plan() { return *plan_; }
  // The wrapper of an inner device (made on first sight) or of an inner id (null if none).
  FaultDevice* device_of(prov::Device* inner);
  FaultCmId* id_of(const prov::CmId* inner) const;
  void add_id(FaultCmId& id) { ids_[&id.inner()] = &id; }
  void remove_id(FaultCmId& id) { ids_.erase(&id.inner()); }

 private:
  std::unique_ptr<prov::Provider> owned_;  // declared first: outlives the wrappers below
  prov::Provider& inner_;
  std::shared_ptr<Plan> plan_;
  std::string name_;
  std::unordered_map<const prov::Device*, std::unique_ptr<FaultDevice>> devices_;
  std::unordered_map<const prov::CmId*, FaultCmId*> ids_;
};

}  // namespace wireup::fault
