// rdma_cm_id wrapper: each method is the librdmacm call, with the peer address in errors.
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "provider/rdma/convert.h"
#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {

RdmaCmId::RdmaCmId(RdmaProvider& prov, rdma_cm_id* id, RdmaEventChannel& ch, Route route)
    : CmId(route), prov_(prov), id_(id) {
  attach(ch.shared());
  id_->context = this;  // event dispatch: rdma_cm_event::id->context -> this wrapper
}

RdmaCmId::~RdmaCmId() {
  // Blocks until every event of this id was acked: the owner acks first (CmEvent does).
  if (rdma_destroy_id(id_) != 0)
    WIREUP_LOG(warn, "rdma_destroy_id(peer %s): %s", peer_addr().to_string().c_str(),
               std::strerror(errno));
  attach(nullptr);
}

void RdmaCmId::attach(RdmaEventChannel::Shared* ch) {
  if (channel_ != nullptr && --channel_->ids == 0 && channel_->owner == nullptr) {
    // The channel's wrapper went before its ids (an owner's teardown bug, logged then) and
    // left the native channel open for them: the last one to leave closes it.
    rdma_destroy_event_channel(channel_->ch);
    delete channel_;
  }
  channel_ = ch;
  if (channel_ != nullptr) ++channel_->ids;
}

Error RdmaCmId::fail(const char* call, std::string detail) const {
  Error e = Error::from_errno(call, errno, std::move(detail));
  SockAddr peer = peer_addr();
  if (!peer.empty()) e.peer = peer.to_string();
  return e;
}

Status RdmaCmId::check_conn_param(const char* call, const ConnParam& p) const {
  // rdma_conn_param carries an 8-bit length; anything longer cannot even be expressed.
  // The per-message limits (56 bytes in a TCP-port-space REQ, ...) are the kernel's to enforce.
  if (p.private_data.size() > 255)
    return Error::make(ErrorCode::invalid_argument, call,
                       "private data of " + std::to_string(p.private_data.size()) +
                           " bytes exceeds the 255 an rdma_conn_param can carry");
  return Status::ok();
}

Status RdmaCmId::bind_addr(const SockAddr& addr) {
  SockAddr a = addr;
  if (rdma_bind_addr(id_, a.get()) != 0) return fail("rdma_bind_addr", "address " + addr.to_string());
  return Status::ok();
}

Status RdmaCmId::resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) {
  SockAddr d = dst;
  SockAddr s = src ? *src : SockAddr();
  if (rdma_resolve_addr(id_, src ? s.get() : nullptr, d.get(), timeout_ms) != 0)
    return Error::from_errno("rdma_resolve_addr", errno).with_peer(dst.to_string());
  return Status::ok();
}

Status RdmaCmId::resolve_route(int timeout_ms) {
  if (rdma_resolve_route(id_, timeout_ms) != 0) return fail("rdma_resolve_route");
  return Status::ok();
}

Status RdmaCmId::listen(int backlog) {
  if (rdma_listen(id_, backlog) != 0)
    return fail("rdma_listen", "on " + local_addr().to_string() + ", backlog " + std::to_string(backlog));
  return Status::ok();
}

Status RdmaCmId::connect(const ConnParam& param) {
  WIREUP_TRY(check_conn_param("rdma_connect", param));
  rdma_conn_param p = to_rdma(param);
  if (rdma_connect(id_, &p) != 0) return fail("rdma_connect").with_qpn(param.qp_num);
  return Status::ok();
}

Status RdmaCmId::accept(const ConnParam& param) {
  WIREUP_TRY(check_conn_param("rdma_accept", param));
  rdma_conn_param p = to_rdma(param);
  if (rdma_accept(id_, &p) != 0) return fail("rdma_accept").with_qpn(param.qp_num);
  return Status::ok();
}

Status RdmaCmId::reject(std::span<const uint8_t> pd) {
  if (pd.size() > 255)
    return Error::make(ErrorCode::invalid_argument, "rdma_reject", "private data over 255 bytes");
  if (rdma_reject(id_, pd.empty() ? nullptr : pd.data(), static_cast<uint8_t>(pd.size())) != 0)
    return fail("rdma_reject");
  return Status::ok();
}

Status RdmaCmId::reject_ece(std::span<const uint8_t> pd) {
  if (pd.size() > 255)
    return Error::make(ErrorCode::invalid_argument, "rdma_reject_ece", "private data over 255 bytes");
  if (rdma_reject_ece(id_, pd.empty() ? nullptr : pd.data(), static_cast<uint8_t>(pd.size())) != 0)
    return fail("rdma_reject_ece");
  return Status::ok();
}

Status RdmaCmId::establish() {
  if (rdma_establish(id_) != 0) return fail("rdma_establish");
  return Status::ok();
}

Status RdmaCmId::disconnect() {
  if (rdma_disconnect(id_) != 0) return fail("rdma_disconnect");
  return Status::ok();
}

Status RdmaCmId::notify_comm_est() {
  if (rdma_notify(id_, IBV_EVENT_COMM_EST) != 0) return fail("rdma_notify");
  return Status::ok();
}

Status RdmaCmId::set_tos(uint8_t tos) {
  if (rdma_set_option(id_, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos) != 0)
    return fail("rdma_set_option", "RDMA_OPTION_ID_TOS " + std::to_string(tos));
  return Status::ok();
}

Status RdmaCmId::set_reuseaddr(bool on) {
  int v = on ? 1 : 0;
  if (rdma_set_option(id_, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof v) != 0)
    return fail("rdma_set_option", "RDMA_OPTION_ID_REUSEADDR");
  return Status::ok();
}

Status RdmaCmId::set_ack_timeout(uint8_t timeout) {
  if (rdma_set_option(id_, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof timeout) != 0)
    return fail("rdma_set_option", "RDMA_OPTION_ID_ACK_TIMEOUT " + std::to_string(timeout));
  return Status::ok();
}

Result<QpAttrWithMask> RdmaCmId::init_qp_attr(QpState state) {
  ibv_qp_attr a;
  std::memset(&a, 0, sizeof a);
  a.qp_state = static_cast<ibv_qp_state>(state);
  int mask = 0;
  if (rdma_init_qp_attr(id_, &a, &mask) != 0)
    return fail("rdma_init_qp_attr", std::string("for ") + to_string(state));
  return QpAttrWithMask{from_ibv(a), static_cast<uint32_t>(mask)};
}

Status RdmaCmId::set_local_ece(const Ece& ece) {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  e.vendor_id = ece.vendor_id;
  e.options = ece.options;
  if (rdma_set_local_ece(id_, &e) != 0) return fail("rdma_set_local_ece");
  return Status::ok();
}

Result<Ece> RdmaCmId::get_remote_ece() {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  if (rdma_get_remote_ece(id_, &e) != 0) return fail("rdma_get_remote_ece");
  return Ece{e.vendor_id, e.options};
}

Status RdmaCmId::migrate_native(EventChannel& to) {
  auto* target = dynamic_cast<RdmaEventChannel*>(&to);
  if (target == nullptr)
    return Error::make(ErrorCode::invalid_argument, "rdma_migrate_id",
                       "target channel belongs to another provider");
  if (rdma_migrate_id(id_, target->get()) != 0) return fail("rdma_migrate_id");
  attach(target->shared());
  return Status::ok();
}

SockAddr RdmaCmId::local_addr() const { return SockAddr::from(rdma_get_local_addr(id_)); }
SockAddr RdmaCmId::peer_addr() const { return SockAddr::from(rdma_get_peer_addr(id_)); }
Device* RdmaCmId::device() const { return id_->verbs ? prov_.device_for(id_->verbs) : nullptr; }

}  // namespace wireup::prov::rdma
