// Simulated verbs objects: device, PD, CQ, SRQ, QP (with the verbs state machine) and MR, and
// the RC data path between connected QPs (qp_data.cc).
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
  void set_port_state(PortState s) { spec_.port_state = s; }
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
  Result<std::unique_ptr<Srq>> create_srq(const SrqInitAttr& attr) override;
  Device& device() const override { return dev_; }
  void* native() const override { return nullptr; }
  SimDevice& sim_device() const { return dev_; }

  // Registered memory of this PD, by key (lkey == rkey): the data path touches only this.
  struct Region {
    uint64_t addr = 0;
    size_t len = 0;
    uint32_t access = 0;  // ibv_access_flags it was registered with
    // Whether [addr, addr + n) lies inside.
    bool holds(uint64_t a, uint64_t n) const { return a >= addr && n <= len && a - addr <= len - n; }
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
  // QPs whose send queue completes here and has READ/atomics in flight (or requests waiting
  // for them): a poll first lets their responses in. Empty unless one-sided reads are used.
  std::vector<Handle> senders;

 private:
  Core& core_;
  size_t cqe_;
  std::deque<WorkCompletion> q_;
  int efd_ = -1;
  bool armed_ = false;
};

// A posted receive (of a QP's own receive queue or of an SRQ).
struct RecvWr {
  uint64_t wr_id = 0;
  Sge sge;
};

class SimSrq final : public Srq {
 public:
  SimSrq(SimPd& pd, const SrqInitAttr& attr) : pd_(pd), attr_(attr) {}
  ~SimSrq() override;
  Status post_recv(uint64_t wr_id, const Sge& sge) override;
  void* native() const override { return nullptr; }
  SimPd& pd() const { return pd_; }

  std::vector<RecvWr> recvs;
  std::vector<Handle> qps;  // attached QPs, dead ones dropped lazily (a receive may serve one in RNR)

 private:
  SimPd& pd_;
  SrqInitAttr attr_;
};

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
  Status set_ece(const Ece& ece) override;
  Status post(const SendWr& wr) override;
  Status post_recv(uint64_t wr_id, const Sge& sge) override;
  bool has_srq() const override { return srq_ != nullptr; }
  Device& device() const override { return dev_; }
  void* native() const override { return nullptr; }

  // Moves the QP to ERR and flushes its queues (device removal, fatal errors).
  void to_error();
  // The responses of the READ/atomics in flight come back (the requester polls its send
  // CQ), then the send queue goes on. See qp_data.cc.
  void retire();
  // Serves the SENDs waiting for a receive (RNR) while receives are there.
  void drain_waiting();

 private:
  // A request that reached this QP as responder and waits for a receive (RNR retry forever).
  struct Inbound {
    SendWr wr;    // signaled already says sq_sig_all too
    Handle from;  // the requesting QP (it may be destroyed while this waits)
  };
  // A completed request whose completion the requester has not seen yet (READ/atomics in
  // flight, and what was posted behind them: completions come in send-queue order).
  struct Done {
    SendWr wr;
    int status;
    uint32_t byte_len;
  };
  void complete_send(const SendWr& wr, int status, uint32_t byte_len = 0);
  // A request of this QP is done: its completion now, or behind those still in flight.
  void finish(const SendWr& wr, uint32_t byte_len);
  void retire_in_flight();
  void issue_queued();
  void list_in_send_cq();  // so that its next poll retires what is in flight
  // Executes one request at the responder; false: this QP went to ERR.
  bool issue(const SendWr& wr);
  bool local_ok(const SendWr& wr) const;
  // As responder: the checks and the memory access of a WRITE, READ or atomic.
  int respond_memory(const SendWr& wr, size_t rd_atomic_in_flight);
  // As responder: the NAK of `status` (a remote error) moves this QP to ERR.
  void nak(int status);
  void deliver(const Inbound& in);  // waits in waiting_ when there is no receive
  bool take_recv(RecvWr* out);
  bool copy_in(const Sge& dst, const Sge& src, uint32_t* len, int* status) const;
  // The request failed with `status`: earlier responses first, then its error, QP to ERR.
  void fail_requester(const SendWr& wr, int status);
  SimQp* peer() const;

  SimDevice& dev_;
  SimPd& pd_;
  SimSrq* srq_;
  Handle self_;
  uint32_t qpn_;
  QpInitAttr init_;
  QpAttr attr_;
  uint32_t ece_set_ = 0;  // options stored by ibv_set_ece for the next modify (0: none)
  uint32_t ece_get_ = 0;  // the firmware's last answer: what ibv_query_ece reports
  // Short FIFOs (bounded by max_recv_wr / max_send_wr): vectors, since an empty std::deque
  // allocates.
  std::vector<RecvWr> recvs_;
  std::vector<Inbound> waiting_;  // arrived requests waiting for a receive (RNR)
  std::vector<SendWr> sq_;        // posted, not issued (the READ/atomic depth is used up)
  std::vector<Done> in_flight_;   // issued, completion not yet reported
  size_t rd_atomic_in_flight_ = 0;
  bool in_senders_ = false;       // listed in the send CQ's senders
  bool comm_est_ = false;         // COMM_EST raised already (once per QP, at its first packet)
};

}  // namespace wireup::prov::sim
