// Simulated verbs objects: device, PD, CQ, QP (with the verbs state machine) and MR, plus a
// minimal SEND/RECV data path between connected QPs.
#pragma once

#include <deque>
#include <unordered_map>

#include "provider/sim/core.h"

namespace wireup::prov::sim {

class SimDevice final : public Device {
 public:
  SimDevice(Core& core, uint32_t node, uint32_t index, const SimDeviceSpec& spec);
  ~SimDevice() override;
  const DeviceInfo& info() const override { return info_; }
  Result<std::unique_ptr<Pd>> alloc_pd() override;
  Result<std::unique_ptr<Cq>> create_cq(int cqe, bool with_comp_channel) override;
  void* native() const override { return nullptr; }
  // What the hardware would raise: queued for whoever owns the async events (async.cc).
  // `object`: the CQ/SRQ/WQ a cq/srq/wq-scoped event names.
  void raise(DeviceEventType type, uint32_t qpn = 0, uint8_t port = 0, const void* object = nullptr);
  // The transport's own ibv_get_async_event (transport mode, tests): the next raised event,
  // or would_block. Never call it in library mode: the two would race, as on real hardware.
  Result<DeviceEvent> read_raised() { return native_get_async_event(); }
  size_t raised_pending() const { return async_.size(); }

  const SimDeviceSpec& spec() const { return spec_; }
  uint32_t ip() const { return sim_ipv4(node, index); }
  bool usable() const { return !removed && spec_.port_state == PortState::active; }
  Error gone(const char* call) const;  // the error of a call on a removed device

  Core& core;
  uint32_t node;
  uint32_t index;
  bool removed = false;
  uint32_t next_qpn = 0x11;  // rxe and mlx5 both start above the reserved QPNs
  uint32_t qps = 0;
  std::unordered_map<uint32_t, Handle> qp_by_num;

 protected:
  // The simulated hardware's queue behind an eventfd (created on the first call, readable
  // while an event is pending), as the real ibv_context::async_fd.
  int native_async_fd() const override;
  Result<DeviceEvent> native_get_async_event() override;
  bool native_async_pending() const override { return !async_.empty(); }
  bool native_async_worth_reading(Nanos) override { return !async_.empty(); }

 private:
  void set_readable(bool want) const;

  SimDeviceSpec spec_;
  DeviceInfo info_;
  std::deque<DeviceEvent> async_;
  mutable int efd_ = -1;
  mutable bool efd_readable_ = false;
};

class SimPd final : public Pd {
 public:
  explicit SimPd(SimDevice& dev);
  ~SimPd() override;
  Result<std::unique_ptr<Qp>> create_qp(const QpInitAttr& attr) override;
  Result<std::unique_ptr<Mr>> reg_mr(void* addr, size_t len, uint32_t access_flags) override;
  Device& device() const override { return dev_; }
  void* native() const override { return nullptr; }
  SimDevice& sim_device() const { return dev_; }

  // Registered memory of this PD, by lkey: the data path copies only within it.
  struct Region {
    uint64_t addr = 0;
    size_t len = 0;
  };
  std::unordered_map<uint32_t, Region> regions;

 private:
  SimDevice& dev_;
};

class SimMr final : public Mr {
 public:
  SimMr(SimPd& pd, uint32_t key) : pd_(pd), key_(key) {}
  ~SimMr() override;
  uint32_t lkey() const override { return key_; }
  uint32_t rkey() const override { return key_; }

 private:
  SimPd& pd_;
  uint32_t key_;
};

class SimCq final : public Cq {
 public:
  SimCq(Core& core, int cqe, bool with_comp_channel);
  ~SimCq() override;
  Result<int> poll(std::span<WorkCompletion> wc) override;
  int comp_fd() const override { return efd_; }
  Status req_notify() override;
  Status consume_event() override;
  void* native() const override { return nullptr; }

  void push(const WorkCompletion& wc);

 private:
  Core& core_;
  size_t cqe_;
  std::deque<WorkCompletion> q_;
  int efd_ = -1;
  bool armed_ = false;
};

// IBV_WC_* status values the data path produces.
namespace wc_status {
inline constexpr int success = 0;
inline constexpr int loc_len_err = 1;
inline constexpr int loc_prot_err = 4;
inline constexpr int wr_flush_err = 5;
inline constexpr int retry_exc_err = 12;
}  // namespace wc_status

// The attribute masks a transition requires and allows (IBTA 11.2.4.2 / ib_modify_qp_is_ok,
// RC QPs). Pure, for the unit tests too.
struct TransitionMasks {
  bool allowed = false;
  uint32_t required = 0;
  uint32_t optional = 0;
};
TransitionMasks rc_transition(QpState from, QpState to);

class SimQp final : public Qp {
 public:
  SimQp(SimDevice& dev, SimPd& pd, const QpInitAttr& attr, uint32_t qpn);
  ~SimQp() override;
  uint32_t qpn() const override { return qpn_; }
  QpState state() const override { return attr_.qp_state; }
  Status modify(const QpAttr& attr, uint32_t mask) override;
  Result<QpAttr> query(uint32_t mask) override;
  Result<Ece> query_ece() override;
  Result<Ece> set_ece(const Ece& ece) override;
  Status post_send(uint64_t wr_id, const Sge& sge, bool signaled) override;
  Status post_recv(uint64_t wr_id, const Sge& sge) override;
  Device& device() const override { return dev_; }
  void* native() const override { return nullptr; }

  // Moves the QP to ERR and flushes its queues (device removal, fatal errors).
  void to_error();

 private:
  struct Recv {
    uint64_t wr_id;
    Sge sge;
  };
  struct Send {
    uint64_t wr_id;
    Sge sge;
    bool signaled;
    Handle from;  // the sending QP (it may be destroyed while this waits)
  };
  void complete_send(uint64_t wr_id, bool signaled, int status);
  void deliver(Send s);
  bool copy_in(const Sge& dst, const Sge& src, uint32_t* len, int* status) const;
  SimQp* peer() const;

  SimDevice& dev_;
  SimPd& pd_;
  Handle self_;
  uint32_t qpn_;
  QpInitAttr init_;
  QpAttr attr_;
  Ece ece_;
  // Short FIFOs (bounded by max_recv_wr): vectors, since an empty std::deque allocates.
  std::vector<Recv> recvs_;
  std::vector<Send> unmatched_;  // arrived SENDs waiting for a RECV (RNR retry forever)
  bool comm_est_ = false;        // COMM_EST raised already (once per QP, at its first packet)
};

}  // namespace wireup::prov::sim
