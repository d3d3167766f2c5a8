#include "ece/flow.h"

#include "common/log.h"

namespace wireup::ece {
namespace {

void note_unsupported(const Policy& p, const prov::Qp& qp, const char* call) {
  // `auto` is quiet by design; `on` asked for ECE, so say that it is not there.
  if (p.mode == Mode::on)
    WIREUP_LOG(warn, "ECE mode 'on' but device %s has no ECE (%s: EOPNOTSUPP); going on without",
               qp.device().info().name.c_str(), call);
}

Decision recorded(Decision d, Report& report) {
  report.accepted = 0;  // nothing is in force before the firmware answered (confirm)
  report.outcome = d.outcome;
  return d;
}

// ibv_set_ece before RTR. EOPNOTSUPP (an mlx5 without the ECE capability) turns the decision
// into `unsupported`, which `unsupported_here` re-decides under the policy.
template <class Unsupported>
Result<Decision> set_before_rtr(const Policy& p, Decision d, const prov::Ece& ask, prov::Qp& qp, Report& report,
                                const Unsupported& unsupported_here) {
  Status s = qp.set_ece(ask);
  if (s) return recorded(std::move(d), report);
  if (s.code() != ErrorCode::not_supported) return s.error();
  note_unsupported(p, qp, "ibv_set_ece");
  return recorded(unsupported_here(), report);
}

}  // namespace

Result<std::optional<prov::Ece>> query_device(prov::Qp& qp) {
  auto e = qp.query_ece();
  if (e) return std::optional<prov::Ece>(*e);
  if (e.code() == ErrorCode::not_supported) return std::optional<prov::Ece>();
  return e.error();
}

Result<std::optional<prov::Ece>> prepare_active(const Policy& p, prov::Qp& qp, prov::CmId& id, Report& report) {
  report = Report{};
  if (p.mode == Mode::off) return std::optional<prov::Ece>();
  auto dev = query_device(qp);
  if (!dev) return dev.error();
  if (*dev) report.local = **dev;
  auto o = offer(p, *dev);
  if (!o) {
    report.outcome = Outcome::unsupported;
    // Before any REQ there is nobody to send reason 35 to: a local error, final.
    if (p.mode == Mode::required)
      return Error::make(ErrorCode::not_supported, "ibv_query_ece",
                         "ECE mode 'required' but device " + qp.device().info().name +
                             (*dev ? " offers no ECE option" : " has no ECE"))
          .with_qpn(qp.qpn());
    note_unsupported(p, qp, "ibv_query_ece");
    return o;
  }
  WIREUP_TRY(id.set_local_ece(*o));
  return o;
}

Result<Decision> before_rtr_passive(const Policy& p, prov::Qp& qp, prov::CmId& id, Report& report) {
  report = Report{};
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  auto dev = query_device(qp);
  if (!dev) return dev.error();
  if (*dev) report.local = **dev;
  else note_unsupported(p, qp, "ibv_query_ece");
  Decision d = on_request(p, *dev, *remote);
  if (d.reject || d.outcome != Outcome::negotiated) return recorded(std::move(d), report);
  const prov::Ece ask{p.vendor_id != 0 ? p.vendor_id : (*dev)->vendor_id, d.accepted};
  return set_before_rtr(p, std::move(d), ask, qp, report,
                        [&] { return on_request(p, std::nullopt, *remote); });
}

Result<Decision> before_rtr_active(const Policy& p, const std::optional<prov::Ece>& offered, prov::Qp& qp,
                                   prov::CmId& id, Report& report) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  Decision d = on_reply(p, offered, *remote);
  if (d.reject || d.outcome != Outcome::negotiated) return recorded(std::move(d), report);
  const prov::Ece ask{offered->vendor_id, d.accepted};
  return set_before_rtr(p, std::move(d), ask, qp, report,
                        [&] { return on_reply(p, std::nullopt, *remote); });
}

Result<Decision> confirm(const Policy& p, Decision before, prov::Qp& qp, prov::CmId& id, Report& report,
                         bool set_on_id) {
  // Nothing was set: nothing for the firmware to have taken.
  if (before.reject || before.outcome != Outcome::negotiated) return before;
  auto now = qp.query_ece();
  if (!now && now.code() != ErrorCode::not_supported) return now.error();
  const uint32_t taken = now ? now->options : 0;
  Decision d = on_taken(p, before.accepted, taken);
  report.outcome = d.outcome;
  report.accepted = d.reject ? 0 : d.accepted;
  if (d.reject) return d;
  if (!set_on_id && taken != before.accepted)
    // The passive side's firmware took the REP's options, ours fewer: the two ends differ.
    WIREUP_LOG(warn, "ECE: device %s took options 0x%x of the 0x%x the peer accepted (QPN %u)",
               qp.device().info().name.c_str(), taken, before.accepted, qp.qpn());
  if (set_on_id && taken != 0) WIREUP_TRY(id.set_local_ece(prov::Ece{now->vendor_id, taken}));
  return d;
}

}  // namespace wireup::ece
