#include "testsupport/capi_seam.h"

#include <infiniband/verbs.h>

#include <cstring>
#include <memory>

#include "capi/handles.h"

namespace wireup::capi_seam {
namespace {

// The seam's counterpart of RdmaQp::unowned: the sim's QP, made and owned by the transport
// (the test), driven by the engine, never destroyed by it.
class UnownedQp final : public prov::Qp {
 public:
  explicit UnownedQp(prov::Qp& q) : q_(q) {}
  uint32_t qpn() const override { return q_.qpn(); }
  prov::QpState state() const override { return q_.state(); }
  Status modify(const prov::QpAttr& a, uint32_t mask) override { return q_.modify(a, mask); }
  Result<prov::QpAttr> query(uint32_t mask) override { return q_.query(mask); }
  Result<prov::Ece> query_ece() override { return q_.query_ece(); }
  Status set_ece(const prov::Ece& e) override { return q_.set_ece(e); }
  Status post(const prov::SendWr& wr) override { return q_.post(wr); }
  Status post_recv(uint64_t id, const prov::Sge& s) override { return q_.post_recv(id, s); }
  bool has_srq() const override { return q_.has_srq(); }
  prov::Device& device() const override { return q_.device(); }
  void* native() const override { return q_.native(); }

 private:
  prov::Qp& q_;
};

class SeamQpAdapter final : public capi::QpAdapter {
 public:
  ibv_context* context_of(prov::Device& dev) const override { return reinterpret_cast<ibv_context*>(&dev); }

  // On the seam the event's element.qp is a prov::Qp* (as_ibv_qp), the rest as verbs has it.
  Result<prov::DeviceEvent> event_of(const ibv_async_event& e, prov::Device& dev) const override {
    // Read as the int it is stored as: the transport may hand over any value, and loading one
    // outside enum ibv_event_type's range through the enum type is undefined (UBSan says so).
    int t;
    static_assert(sizeof t == sizeof e.event_type);
    std::memcpy(&t, &e.event_type, sizeof t);
    if (t < 0 || t > static_cast<int>(prov::DeviceEventType::wq_fatal))
      return Error::make(ErrorCode::invalid_argument, "async event",
                         "event_type " + std::to_string(t) + " is not an enum ibv_event_type value wireup knows");
    prov::DeviceEvent out;
    out.type = static_cast<prov::DeviceEventType>(t);
    out.device = dev.info().name;
    switch (prov::scope_of(out.type)) {
      case prov::DeviceEventScope::qp: {
        prov::Qp* q = seam_qp(e.element.qp);
        if (q == nullptr)
          return Error::make(ErrorCode::invalid_argument, "async event", "a QP event names no QP (element.qp NULL)");
        if (&q->device() != &dev)
          return Error::make(ErrorCode::invalid_argument, "async event", "names a QP of another device")
              .with_qpn(q->qpn());
        out.qpn = q->qpn();
        break;
      }
      case prov::DeviceEventScope::cq: out.object = e.element.cq; break;
      case prov::DeviceEventScope::srq: out.object = e.element.srq; break;
      case prov::DeviceEventScope::wq: out.object = e.element.wq; break;
      case prov::DeviceEventScope::port: out.port = static_cast<uint8_t>(e.element.port_num); break;
      case prov::DeviceEventScope::device: break;
    }
    return out;
  }

  Result<std::unique_ptr<prov::Qp>> view(ibv_qp* qp, prov::Device& dev) override {
    prov::Qp* q = seam_qp(qp);
    if (&q->device() != &dev)
      return Error::make(ErrorCode::invalid_argument, "QP factory",
                         "the QP was created on another device than the request's (" + dev.info().name + ")")
          .with_qpn(q->qpn());
    if (q->state() != prov::QpState::reset)
      return Error::make(ErrorCode::invalid_argument, "QP factory",
                         std::string("the QP is in state ") + prov::to_string(q->state()) + ", not RESET")
          .with_qpn(q->qpn());
    return std::unique_ptr<prov::Qp>(std::make_unique<UnownedQp>(*q));
  }
};

bool finished(const wireup_t* w, bool until_setup_closed) {
  return wireup_done(w) == 1 && !(until_setup_closed && w->engine->setup_channel_open());
}

}  // namespace

std::unique_ptr<capi::QpAdapter> seam_qp_adapter() { return std::make_unique<SeamQpAdapter>(); }

wireup_status_t context_create(prov::Provider& p, prov::Device& dev, const wireup_context_params_t* params,
                               wireup_context_t** out) {
  return capi::context_create_over(params, capi::ProviderSeat{p, dev, seam_qp_adapter()}, out);
}

Status drive(prov::sim::SimFabric& fab, const std::vector<wireup_t*>& handles, const DriveOptions& o) {
  const Nanos until = fab.now() + o.bound;
  int idle_rounds = 0;  // rounds without work nor a clock advance: a driver bug, not a hang
  for (;;) {
    int work = 0;
    for (wireup_t* w : handles) {
      int k = 0;
      if (wireup_progress(w, &k) != WIREUP_OK)
        return Error::make(ErrorCode::system_error, "capi_seam::drive", wireup_last_error(w));
      work += k;
    }
    if (o.after_round) o.after_round();
    bool all = true;
    for (const wireup_t* w : handles) all = all && finished(w, o.until_setup_closed);
    if (all && (!o.until || o.until())) return Status::ok();
    if (work > 0) {
      idle_rounds = 0;
      continue;
    }
    Nanos next_timer = Nanos::max();
    for (const wireup_t* w : handles) next_timer = std::min(next_timer, w->engine->next_wakeup());
    const Nanos next_event = fab.next_time();
    const Nanos next = std::min(next_timer, next_event);
    if (next == Nanos::max())
      return Error::make(ErrorCode::invalid_state, "capi_seam::drive", "handles not done and nothing scheduled");
    if (next > until)
      return Error::make(ErrorCode::timed_out, "capi_seam::drive", "handles not done within the bound");
    if (next <= fab.now() && ++idle_rounds > 1000)
      return Error::make(ErrorCode::invalid_state, "capi_seam::drive", "work due now but progress does none");
    if (next_event <= next_timer) fab.step();
    else fab.run_until(next_timer);
  }
}

}  // namespace wireup::capi_seam
