// Verbs objects of the rdma provider: PD, CQ (+ completion channel), QP, MR.
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "provider/rdma/convert.h"
#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {

Result<std::unique_ptr<Pd>> RdmaDevice::alloc_pd() {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  if (pd == nullptr) return Error::from_errno("ibv_alloc_pd", errno, "device " + info_.name);
  return std::unique_ptr<Pd>(new RdmaPd(*this, pd));
}

Result<std::unique_ptr<Cq>> RdmaDevice::create_cq(int cqe, bool with_comp_channel) {
  std::unique_ptr<CompChannel> ch;
  if (with_comp_channel) {
    ibv_comp_channel* c = ibv_create_comp_channel(ctx_);
    if (c == nullptr)
      return Error::from_errno("ibv_create_comp_channel", errno, "device " + info_.name);
    ch = std::make_unique<CompChannel>(c);
  }
  ibv_cq* cq = ibv_create_cq(ctx_, cqe, nullptr, ch ? ch->get() : nullptr, 0);
  if (cq == nullptr)
    return Error::from_errno("ibv_create_cq", errno,
                             "device " + info_.name + ", " + std::to_string(cqe) + " entries");
  return std::unique_ptr<Cq>(new RdmaCq(std::move(ch), cq));
}

RdmaPd::~RdmaPd() {
  if (int rc = ibv_dealloc_pd(pd_); rc != 0)
    WIREUP_LOG(warn, "ibv_dealloc_pd: %s (a QP or MR still uses it?)", std::strerror(rc));
}

Result<std::unique_ptr<Qp>> RdmaPd::create_qp(const QpInitAttr& a) {
  if (a.send_cq == nullptr || a.recv_cq == nullptr)
    return Error::make(ErrorCode::invalid_argument, "ibv_create_qp", "send_cq and recv_cq are required");
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof init);
  init.send_cq = static_cast<ibv_cq*>(a.send_cq->native());
  init.recv_cq = static_cast<ibv_cq*>(a.recv_cq->native());
  init.qp_type = a.type == QpType::rc ? IBV_QPT_RC : a.type == QpType::uc ? IBV_QPT_UC : IBV_QPT_UD;
  init.cap.max_send_wr = a.caps.max_send_wr;
  init.cap.max_recv_wr = a.caps.max_recv_wr;
  init.cap.max_send_sge = a.caps.max_send_sge;
  init.cap.max_recv_sge = a.caps.max_recv_sge;
  init.cap.max_inline_data = a.caps.max_inline_data;
  init.sq_sig_all = a.sq_sig_all ? 1 : 0;
  if (a.srq != nullptr) {
    if (dynamic_cast<RdmaSrq*>(a.srq) == nullptr)
      return Error::make(ErrorCode::invalid_argument, "ibv_create_qp", "SRQ belongs to another provider");
    init.srq = static_cast<ibv_srq*>(a.srq->native());
  }
  ibv_qp* qp = ibv_create_qp(pd_, &init);
  if (qp == nullptr)
    return Error::from_errno("ibv_create_qp", errno,
                             "device " + dev_.info().name + ", send_wr " +
                                 std::to_string(a.caps.max_send_wr) + ", recv_wr " +
                                 std::to_string(a.caps.max_recv_wr));
  return std::unique_ptr<Qp>(new RdmaQp(dev_, qp));
}

Result<std::unique_ptr<Mr>> RdmaPd::reg_mr(void* addr, size_t len, uint32_t access_flags) {
  ibv_mr* mr = ibv_reg_mr(pd_, addr, len, static_cast<int>(access_flags));
  if (mr == nullptr)
    return Error::from_errno("ibv_reg_mr", errno, std::to_string(len) + " bytes");
  return std::unique_ptr<Mr>(new RdmaMr(mr));
}

Result<std::unique_ptr<Srq>> RdmaPd::create_srq(const SrqInitAttr& a) {
  ibv_srq_init_attr init;
  std::memset(&init, 0, sizeof init);
  init.attr.max_wr = a.max_wr;
  init.attr.max_sge = a.max_sge;
  init.attr.srq_limit = a.srq_limit;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  if (srq == nullptr)
    return Error::from_errno("ibv_create_srq", errno,
                             "device " + dev_.info().name + ", " + std::to_string(a.max_wr) + " WRs");
  return std::unique_ptr<Srq>(new RdmaSrq(dev_, srq));
}

RdmaSrq::~RdmaSrq() {
  if (int rc = ibv_destroy_srq(srq_); rc != 0)
    WIREUP_LOG(warn, "ibv_destroy_srq: %s (a QP still uses it?)", std::strerror(rc));
}

namespace {

// A receive of one SGE, for a QP's own receive queue or an SRQ alike.
ibv_recv_wr one_recv(uint64_t wr_id, ibv_sge* s) {
  ibv_recv_wr wr;
  std::memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = s;
  wr.num_sge = 1;
  return wr;
}

}  // namespace

Status RdmaSrq::post_recv(uint64_t wr_id, const Sge& sge) {
  ibv_sge s{sge.addr, sge.length, sge.lkey};
  ibv_recv_wr wr = one_recv(wr_id, &s);
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_srq_recv(srq_, &wr, &bad); rc != 0)
    return Error::from_errno("ibv_post_srq_recv", rc, "device " + dev_.info().name);
  return Status::ok();
}

CompChannel::~CompChannel() {
  if (ibv_destroy_comp_channel(ch_) != 0)
    WIREUP_LOG(warn, "ibv_destroy_comp_channel: %s", std::strerror(errno));
}

RdmaCq::~RdmaCq() {
  if (unacked_events_ > 0) ibv_ack_cq_events(cq_, unacked_events_);
  if (int rc = ibv_destroy_cq(cq_); rc != 0)
    WIREUP_LOG(warn, "ibv_destroy_cq: %s (a QP still uses it?)", std::strerror(rc));
}

Result<int> RdmaCq::poll(std::span<WorkCompletion> out) {
  ibv_wc wc[16];
  int total = 0;
  while (static_cast<size_t>(total) < out.size()) {
    int want = static_cast<int>(std::min<size_t>(16, out.size() - total));
    int n = ibv_poll_cq(cq_, want, wc);
    if (n < 0) return Error::from_errno("ibv_poll_cq", n == -1 ? errno : -n);
    for (int i = 0; i < n; ++i) {
      WorkCompletion& w = out[total + i];
      w.wr_id = wc[i].wr_id;
      w.status = wc[i].status;
      w.opcode = wc[i].opcode;
      w.byte_len = wc[i].byte_len;
      w.qp_num = wc[i].qp_num;
      w.src_qp = wc[i].src_qp;
      w.imm_data = wc[i].imm_data;
      w.wc_flags = wc[i].wc_flags;
    }
    total += n;
    if (n < want) break;
  }
  return total;
}

Status RdmaCq::req_notify() {
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return Error::from_errno("ibv_req_notify_cq", rc);
  return Status::ok();
}

Status RdmaCq::consume_event() {
  if (!channel_)
    return Error::make(ErrorCode::invalid_state, "ibv_get_cq_event", "CQ has no completion channel");
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(channel_->get(), &cq, &ctx) != 0)
    return Error::from_errno("ibv_get_cq_event", errno);
  // Acks are batched: ibv_ack_cq_events takes a mutex, once per 64 events is plenty.
  if (++unacked_events_ >= 64) {
    ibv_ack_cq_events(cq_, unacked_events_);
    unacked_events_ = 0;
  }
  return Status::ok();
}

RdmaQp::~RdmaQp() {
  if (ownership_ == Ownership::unowned) return;
  if (int rc = ibv_destroy_qp(qp_); rc != 0)
    WIREUP_LOG(warn, "ibv_destroy_qp(qpn 0x%x): %s", qp_->qp_num, std::strerror(rc));
}

Status RdmaQp::modify(const QpAttr& attr, uint32_t mask) {
  ibv_qp_attr a = to_ibv(attr);
  if (int rc = ibv_modify_qp(qp_, &a, static_cast<int>(mask)); rc != 0)
    return Error::from_errno("ibv_modify_qp", rc,
                             std::string("to ") + to_string(attr.qp_state) + " with " +
                                 qp_mask::names(mask))
        .with_qpn(qpn());
  if (mask & qp_mask::state) state_ = attr.qp_state;
  return Status::ok();
}

Result<QpAttr> RdmaQp::query(uint32_t mask) {
  ibv_qp_attr a;
  ibv_qp_init_attr init;
  std::memset(&a, 0, sizeof a);
  if (int rc = ibv_query_qp(qp_, &a, static_cast<int>(mask), &init); rc != 0)
    return Error::from_errno("ibv_query_qp", rc).with_qpn(qpn());
  return from_ibv(a);
}

Result<Ece> RdmaQp::query_ece() {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  // ibv_query_ece returns an errno value (EOPNOTSUPP on devices without ECE, e.g. rxe).
  if (int rc = ibv_query_ece(qp_, &e); rc != 0)
    return Error::from_errno("ibv_query_ece", rc, "device " + dev_.info().name).with_qpn(qpn());
  return Ece{e.vendor_id, e.options};
}

Status RdmaQp::set_ece(const Ece& ece) {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  e.vendor_id = ece.vendor_id;
  e.options = ece.options;
  if (int rc = ibv_set_ece(qp_, &e); rc != 0)
    return Error::from_errno("ibv_set_ece", rc, "device " + dev_.info().name).with_qpn(qpn());
  // Nothing comes back: mlx5 only stores the options for the next modify (providers/mlx5/
  // verbs.c, mlx5_set_ece); ibv_query_ece after that modify says what the firmware took.
  return Status::ok();
}

Status RdmaQp::post(const SendWr& w) {
  ibv_sge s{w.sge.addr, w.sge.length, w.sge.lkey};
  ibv_send_wr wr = to_ibv(w, &s);
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0)
    return Error::from_errno("ibv_post_send", rc, to_string(w.opcode)).with_qpn(qpn());
  return Status::ok();
}

Status RdmaQp::post_recv(uint64_t wr_id, const Sge& sge) {
  ibv_sge s{sge.addr, sge.length, sge.lkey};
  ibv_recv_wr wr = one_recv(wr_id, &s);
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0)
    return Error::from_errno("ibv_post_recv", rc).with_qpn(qpn());
  return Status::ok();
}

RdmaMr::~RdmaMr() {
  if (int rc = ibv_dereg_mr(mr_); rc != 0) WIREUP_LOG(warn, "ibv_dereg_mr: %s", std::strerror(rc));
}

}  // namespace wireup::prov::rdma
