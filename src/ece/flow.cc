#include "ece/flow.h"

#include "common/log.h"

namespace wireup::ece {
namespace {

void note_unsupported(const Policy& p, const prov::Qp& qp) {
  // `auto` is quiet by design; `on` asked for ECE, so say that it is not there.
  if (p.mode == Mode::on)
    WIREUP_LOG(warn, "ECE mode 'on' but device %s has no ECE (ibv_query_ece: EOPNOTSUPP); going on without",
               qp.device().info().name.c_str());
}

Result<Decision> finish(Decision d, prov::Qp& qp, prov::CmId& id, Report& report, bool set_on_id) {
  report.accepted = d.reject ? 0 : d.accepted;
  report.outcome = d.outcome;
  if (d.reject || d.outcome != Outcome::negotiated) return d;
  prov::Ece in_force{report.local.vendor_id, d.accepted};
  if (report.remote.vendor_id != 0) in_force.vendor_id = report.remote.vendor_id;
  WIREUP_TRY(qp.set_ece(in_force));
  if (set_on_id) WIREUP_TRY(id.set_local_ece(in_force));
  return d;
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
    if (p.mode == Mode::required)
      return Error::make(ErrorCode::not_supported, "ibv_query_ece",
                         "ECE mode 'required' but device " + qp.device().info().name + " has no ECE")
          .with_qpn(qp.qpn());
    note_unsupported(p, qp);
    return o;
  }
  WIREUP_TRY(id.set_local_ece(*o));
  return o;
}

Result<Decision> answer_request(const Policy& p, prov::Qp& qp, prov::CmId& id, Report& report) {
  report = Report{};
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, "ECE off"};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  auto dev = query_device(qp);
  if (!dev) return dev.error();
  if (*dev) report.local = **dev;
  else note_unsupported(p, qp);
  return finish(on_request(p, *dev, *remote), qp, id, report, true);
}

Result<Decision> apply_reply(const Policy& p, const std::optional<prov::Ece>& offered, prov::Qp& qp,
                             prov::CmId& id, Report& report) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, "ECE off"};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  return finish(on_reply(p, offered, *remote), qp, id, report, false);
}

}  // namespace wireup::ece
