// The RC data path of a simulated QP, requester and responder as IB has them: SEND (with
// immediate), RDMA WRITE (with immediate), RDMA READ, compare-and-swap, fetch-and-add, and
// receives from the QP's own queue or from its SRQ.
//
// Time: a request reaches the responder when it is posted (the data moves then). A READ or an
// atomic stays in flight until the requester polls its send CQ (its response "comes back"),
// and what was posted behind it completes behind it, in send-queue order. So a requester that
// posts n READs before polling has n in flight, which is what the depth checks look at:
//  - the requester issues at most its max_rd_atomic at a time; the rest wait in its send
//    queue, as the hardware does;
//  - a responder that gets more than its max_dest_rd_atomic in flight NAKs the one too many
//    with "invalid request" (mlx5; the device spec's enforces_rd_atomic_depth). rxe does not
//    count them (the sim's rxe profile does not either): see docs/testing.md.
//
// Responder errors follow IBA's responder classes as mlx5 reports them: a request the QP is
// not enabled for (its access flags), one too many in flight, or a misaligned atomic is an
// invalid request (requester: REM_INV_REQ_ERR); an rkey the responder's PD does not have, an
// MR without the access, or an access outside the MR is a remote access error
// (REM_ACCESS_ERR). Either way the requester's QP goes to ERR (later WRs flush) and so does
// the responder's, with the affiliated event (QP_REQ_ERR / QP_ACCESS_ERR).
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {
namespace {

bool is_atomic(WrOpcode op) {
  return op == WrOpcode::atomic_cmp_and_swp || op == WrOpcode::atomic_fetch_and_add;
}
bool is_rd_atomic(WrOpcode op) { return op == WrOpcode::rdma_read || is_atomic(op); }
bool is_write(WrOpcode op) { return op == WrOpcode::rdma_write || op == WrOpcode::rdma_write_with_imm; }
bool with_imm(WrOpcode op) { return op == WrOpcode::send_with_imm || op == WrOpcode::rdma_write_with_imm; }

int wc_opcode_of(WrOpcode op) {
  switch (op) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm: return wc_opcode_rdma_write;
    case WrOpcode::rdma_read: return wc_opcode_rdma_read;
    case WrOpcode::atomic_cmp_and_swp: return wc_opcode_comp_swap;
    case WrOpcode::atomic_fetch_and_add: return wc_opcode_fetch_add;
    case WrOpcode::send:
    case WrOpcode::send_with_imm: break;
  }
  return wc_opcode_send;
}

// The remote access a request needs, of the responder's QP and of the MR.
uint32_t access_needed(WrOpcode op) {
  if (is_write(op)) return access::remote_write;
  if (op == WrOpcode::rdma_read) return access::remote_read;
  return access::remote_atomic;
}

}  // namespace

SimQp* SimQp::peer() const {
  const Gid& g = attr_.ah_attr.dgid;
  if (g.raw[10] != 0xff || g.raw[11] != 0xff) return nullptr;
  uint32_t ip = (uint32_t{g.raw[12]} << 24) | (uint32_t{g.raw[13]} << 16) |
                (uint32_t{g.raw[14]} << 8) | g.raw[15];
  SimDevice* d = dev_.core.device_at(ip);
  // A port that is down, at either end, carries nothing: the requester's retries run out.
  if (d == nullptr || d->removed || dev_.core.node(d->node).dead || !d->usable() || !dev_.usable()) return nullptr;
  auto it = d->qp_by_num.find(attr_.dest_qp_num);
  return it == d->qp_by_num.end() ? nullptr : dev_.core.qps.get(it->second);
}

void SimQp::complete_send(const SendWr& wr, int status, uint32_t byte_len) {
  // An error completes even an unsignaled request (verbs: errors are always reported).
  if (!wr.signaled && status == wc_status::success) return;
  WorkCompletion wc;
  wc.wr_id = wr.wr_id;
  wc.status = status;
  wc.opcode = wc_opcode_of(wr.opcode);
  wc.byte_len = status == wc_status::success ? byte_len : 0;
  wc.qp_num = qpn_;
  static_cast<SimCq*>(init_.send_cq)->push(wc);
}

void SimQp::finish(const SendWr& wr, uint32_t byte_len) {
  if (in_flight_.empty()) complete_send(wr, wc_status::success, byte_len);
  else in_flight_.push_back(Done{wr, wc_status::success, byte_len});
}

void SimQp::retire_in_flight() {
  std::vector<Done> done;
  done.swap(in_flight_);
  rd_atomic_in_flight_ = 0;
  for (const Done& d : done) complete_send(d.wr, d.status, d.byte_len);
}

void SimQp::list_in_send_cq() {
  if (in_senders_) return;
  in_senders_ = true;
  static_cast<SimCq*>(init_.send_cq)->senders.push_back(self_);
}

void SimQp::retire() {
  in_senders_ = false;  // the CQ took this QP off its list
  retire_in_flight();
  issue_queued();
  if (!in_flight_.empty() || !sq_.empty()) list_in_send_cq();
}

Status SimQp::post(const SendWr& w) {
  const char* call = "ibv_post_send";
  SendWr wr = w;
  wr.signaled = w.signaled || init_.sq_sig_all;
  if (attr_.qp_state == QpState::err) {
    // A QP in ERR takes work requests and flushes them.
    complete_send(wr, wc_status::wr_flush_err);
    return Status::ok();
  }
  if (attr_.qp_state != QpState::rts)
    return Error::from_errno(call, EINVAL, std::string("QP is ") + to_string(attr_.qp_state) + ", not RTS")
        .with_qpn(qpn_);
  if (sq_.size() + in_flight_.size() >= init_.caps.max_send_wr)
    return Error::from_errno(call, ENOMEM,
                             "send queue full (" + std::to_string(init_.caps.max_send_wr) + " WRs)")
        .with_qpn(qpn_);
  if (is_atomic(wr.opcode) && wr.sge.length != 8)
    return Error::from_errno(call, EINVAL,
                             std::string(to_string(wr.opcode)) + " needs one 8-byte SGE, not " +
                                 std::to_string(wr.sge.length) + " bytes")
        .with_qpn(qpn_);
  sq_.push_back(wr);
  issue_queued();
  return Status::ok();
}

void SimQp::issue_queued() {
  while (!sq_.empty() && attr_.qp_state == QpState::rts) {
    // The requester's own READ/atomic credits: the next one waits for a response.
    if (is_rd_atomic(sq_.front().opcode) && rd_atomic_in_flight_ >= attr_.max_rd_atomic) {
      list_in_send_cq();
      return;
    }
    SendWr wr = sq_.front();
    sq_.erase(sq_.begin());
    if (!issue(wr)) return;
  }
}

bool SimQp::local_ok(const SendWr& wr) const {
  if (wr.sge.length == 0) return true;
  auto r = pd_.regions.find(wr.sge.lkey);
  if (r == pd_.regions.end() || !r->second.holds(wr.sge.addr, wr.sge.length)) return false;
  // A READ's or an atomic's response is written into the SGE: it needs LOCAL_WRITE.
  return !is_rd_atomic(wr.opcode) || (r->second.access & access::local_write) != 0;
}

bool SimQp::issue(const SendWr& wr) {
  if (!local_ok(wr)) {
    fail_requester(wr, wc_status::loc_prot_err);
    return false;
  }
  SimQp* p = peer();
  if (p == nullptr || (p->attr_.qp_state != QpState::rtr && p->attr_.qp_state != QpState::rts) ||
      p->attr_.dest_qp_num != qpn_) {
    // Nobody acknowledges: the transport retries run out.
    fail_requester(wr, wc_status::retry_exc_err);
    return false;
  }
  // IBA 11.6.3: the first request packet that reaches a QP still in RTR raises the
  // affiliated event Communication Established (the RTU may be lost or late). Once per QP.
  if (p->attr_.qp_state == QpState::rtr && !p->comm_est_) {
    p->comm_est_ = true;
    p->dev_.raise(DeviceEventType::comm_est, p->qpn_);
  }
  if (wr.opcode == WrOpcode::send || wr.opcode == WrOpcode::send_with_imm) {
    p->deliver(Inbound{wr, self_});  // completes this request when a receive takes it
    return attr_.qp_state != QpState::err;
  }
  if (is_rd_atomic(wr.opcode)) ++rd_atomic_in_flight_;
  const int st = p->respond_memory(wr, rd_atomic_in_flight_);
  if (st != wc_status::success) {
    p->nak(st);
    fail_requester(wr, st);
    return false;
  }
  if (is_rd_atomic(wr.opcode)) {
    in_flight_.push_back(Done{wr, wc_status::success, is_atomic(wr.opcode) ? 8u : wr.sge.length});
    list_in_send_cq();
    return true;
  }
  if (wr.opcode == WrOpcode::rdma_write_with_imm) {
    p->deliver(Inbound{wr, self_});  // the immediate consumes a receive
    return attr_.qp_state != QpState::err;
  }
  finish(wr, wr.sge.length);
  return true;
}

int SimQp::respond_memory(const SendWr& wr, size_t rd_atomic_in_flight) {
  const uint32_t need = access_needed(wr.opcode);
  if ((attr_.qp_access_flags & need) == 0) return wc_status::rem_inv_req_err;
  if (is_rd_atomic(wr.opcode) && dev_.spec().enforces_rd_atomic_depth &&
      rd_atomic_in_flight > attr_.max_dest_rd_atomic)
    return wc_status::rem_inv_req_err;
  if (is_atomic(wr.opcode) && (wr.remote_addr & 7) != 0) return wc_status::rem_inv_req_err;
  const uint64_t len = is_atomic(wr.opcode) ? 8 : wr.sge.length;
  if (len == 0) return wc_status::success;  // a zero-length RDMA touches no memory: no rkey check
  auto r = pd_.regions.find(wr.rkey);
  if (r == pd_.regions.end() || (r->second.access & need) == 0 || !r->second.holds(wr.remote_addr, len))
    return wc_status::rem_access_err;
  void* remote = reinterpret_cast<void*>(wr.remote_addr);
  void* local = reinterpret_cast<void*>(wr.sge.addr);
  switch (wr.opcode) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm: std::memmove(remote, local, len); break;
    case WrOpcode::rdma_read: std::memmove(local, remote, len); break;
    default: {
      // Host order, as rxe (rxe_resp.c) and the verbs API values are.
      uint64_t old = 0;
      std::memcpy(&old, remote, 8);
      uint64_t now = old;
      if (wr.opcode == WrOpcode::atomic_fetch_and_add) now = old + wr.compare_add;
      else if (old == wr.compare_add) now = wr.swap;
      std::memcpy(remote, &now, 8);
      std::memcpy(local, &old, 8);  // the original value comes back
      break;
    }
  }
  return wc_status::success;
}

void SimQp::nak(int status) {
  dev_.raise(status == wc_status::rem_access_err ? DeviceEventType::qp_access_err : DeviceEventType::qp_req_err,
             qpn_);
  to_error();
}

void SimQp::fail_requester(const SendWr& wr, int status) {
  retire_in_flight();  // their responses came back before the error
  SendWr e = wr;
  e.signaled = true;
  complete_send(e, status);
  to_error();
}

bool SimQp::take_recv(RecvWr* out) {
  std::vector<RecvWr>& q = srq_ != nullptr ? srq_->recvs : recvs_;
  if (q.empty()) return false;
  *out = q.front();
  q.erase(q.begin());
  return true;
}

bool SimQp::copy_in(const Sge& dst, const Sge& src, uint32_t* len, int* status) const {
  auto r = pd_.regions.find(dst.lkey);
  if (r == pd_.regions.end() || !r->second.holds(dst.addr, dst.length) ||
      (r->second.access & access::local_write) == 0) {
    *status = wc_status::loc_prot_err;
    return false;
  }
  if (src.length > dst.length) {
    *status = wc_status::loc_len_err;
    return false;
  }
  if (src.length > 0)
    std::memcpy(reinterpret_cast<void*>(dst.addr), reinterpret_cast<const void*>(src.addr), src.length);
  *len = src.length;
  *status = wc_status::success;
  return true;
}

void SimQp::deliver(const Inbound& in) {
  RecvWr r;
  if (!take_recv(&r)) {
    waiting_.push_back(in);  // RNR: the requester retries until a receive is posted
    return;
  }
  SimQp* from = dev_.core.qps.get(in.from);
  WorkCompletion wc;
  wc.wr_id = r.wr_id;
  wc.qp_num = qpn_;
  wc.src_qp = from != nullptr ? from->qpn() : 0;
  int status = wc_status::success;
  if (in.wr.opcode == WrOpcode::rdma_write_with_imm) {
    wc.opcode = wc_opcode_recv_rdma_with_imm;  // the receive's SGE is not touched
    wc.byte_len = in.wr.sge.length;
  } else {
    wc.opcode = wc_opcode_recv;
    copy_in(r.sge, in.wr.sge, &wc.byte_len, &status);
  }
  if (with_imm(in.wr.opcode)) {
    wc.wc_flags = wc_flag_with_imm;
    wc.imm_data = in.wr.imm_data;
  }
  wc.status = status;
  static_cast<SimCq*>(init_.recv_cq)->push(wc);
  if (status != wc_status::success) {
    // The receiver could not take the message: its QP goes to ERR, the sender sees a
    // remote invalid request.
    to_error();
    if (from != nullptr) from->fail_requester(in.wr, wc_status::rem_inv_req_err);
    return;
  }
  if (from != nullptr) from->finish(in.wr, in.wr.sge.length);
}

void SimQp::drain_waiting() {
  while (!waiting_.empty() && attr_.qp_state != QpState::err &&
         !(srq_ != nullptr ? srq_->recvs.empty() : recvs_.empty())) {
    Inbound in = waiting_.front();
    waiting_.erase(waiting_.begin());
    deliver(in);
  }
}

Status SimQp::post_recv(uint64_t wr_id, const Sge& sge) {
  const char* call = "ibv_post_recv";
  if (srq_ != nullptr)
    return Error::from_errno(call, EINVAL, "the QP takes its receives from an SRQ").with_qpn(qpn_);
  if (attr_.qp_state == QpState::reset) return Error::from_errno(call, EINVAL, "QP is RESET").with_qpn(qpn_);
  if (recvs_.size() >= init_.caps.max_recv_wr)
    return Error::from_errno(call, ENOMEM, "receive queue full").with_qpn(qpn_);
  if (attr_.qp_state == QpState::err) {
    WorkCompletion wc{wr_id, wc_status::wr_flush_err, wc_opcode_recv, 0, qpn_, 0};
    static_cast<SimCq*>(init_.recv_cq)->push(wc);
    return Status::ok();
  }
  recvs_.push_back(RecvWr{wr_id, sge});
  drain_waiting();
  return Status::ok();
}

void SimQp::to_error() {
  attr_.qp_state = QpState::err;
  // Everything still on the send queue flushes, in order; the receive queue too (an SRQ's
  // receives stay: they belong to the other QPs as well).
  std::vector<Done> flying;
  flying.swap(in_flight_);
  rd_atomic_in_flight_ = 0;
  for (const Done& d : flying) complete_send(d.wr, wc_status::wr_flush_err);
  std::vector<SendWr> queued;
  queued.swap(sq_);
  for (const SendWr& w : queued) complete_send(w, wc_status::wr_flush_err);
  for (const RecvWr& r : recvs_) {
    WorkCompletion wc{r.wr_id, wc_status::wr_flush_err, wc_opcode_recv, 0, qpn_, 0};
    static_cast<SimCq*>(init_.recv_cq)->push(wc);
  }
  recvs_.clear();
  waiting_.clear();
}

SimSrq::~SimSrq() {
  size_t attached = 0;
  for (Handle h : qps) attached += pd_.sim_device().core.qps.get(h) != nullptr ? 1 : 0;
  if (attached != 0)
    WIREUP_LOG(warn, "sim: SRQ destroyed with %zu QP(s) attached (ibv_destroy_srq: EBUSY)", attached);
}

Status SimSrq::post_recv(uint64_t wr_id, const Sge& sge) {
  if (recvs.size() >= attr_.max_wr)
    return Error::from_errno("ibv_post_srq_recv", ENOMEM,
                             "SRQ full (" + std::to_string(attr_.max_wr) + " WRs)");
  recvs.push_back(RecvWr{wr_id, sge});
  auto& table = pd_.sim_device().core.qps;
  std::erase_if(qps, [&](Handle h) { return table.get(h) == nullptr; });
  for (size_t i = 0; i < qps.size() && !recvs.empty(); ++i) table.get(qps[i])->drain_waiting();
  return Status::ok();
}

}  // namespace wireup::prov::sim
