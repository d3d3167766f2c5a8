#include "ece/flow.h"

#include <cstdio>

#include "common/log.h"

namespace wireup::ece {
namespace {

void note_unsupported(const Policy& p, const prov::Qp& qp) {
  // `auto` is quiet by design; `on` asked for ECE, so say that it is not there.
  if (p.mode == Mode::on)
    WIREUP_LOG(warn, "ECE mode 'on' but device %s has no ECE (ibv_query_ece: EOPNOTSUPP); going on without",
               qp.device().info().name.c_str());
}

// The policy decided what to ask for; the provider decides what it takes (ibv_set_ece is
// IN/OUT). Its answer is what is in force, what the REP carries (passive side) and what the
// required bits are checked against.
Result<Decision> finish(const Policy& p, Decision d, prov::Qp& qp, prov::CmId& id, Report& report, bool set_on_id) {
  report.accepted = d.reject ? 0 : d.accepted;
  report.outcome = d.outcome;
  if (d.reject || d.outcome != Outcome::negotiated) return d;
  prov::Ece asked{report.local.vendor_id, d.accepted};
  if (report.remote.vendor_id != 0) asked.vendor_id = report.remote.vendor_id;
  auto taken = qp.set_ece(asked);
  if (!taken) return taken.error();
  const prov::Ece in_force{asked.vendor_id, taken->options};
  d.accepted = report.accepted = in_force.options;
  if ((p.required & ~in_force.options) != 0) {
    d.reject = true;
    d.outcome = report.outcome = Outcome::rejected;
    report.accepted = 0;
    char why[128];
    std::snprintf(why, sizeof why, "the device took options 0x%x of 0x%x asked for: required 0x%x missing",
                  in_force.options, asked.options, p.required);
    d.why = why;
    return d;
  }
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
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  auto dev = query_device(qp);
  if (!dev) return dev.error();
  if (*dev) report.local = **dev;
  else note_unsupported(p, qp);
  return finish(p, on_request(p, *dev, *remote), qp, id, report, true);
}

Result<Decision> apply_reply(const Policy& p, const std::optional<prov::Ece>& offered, prov::Qp& qp,
                             prov::CmId& id, Report& report) {
  if (p.mode == Mode::off) return Decision{false, 0, Outcome::disabled, {}};
  auto remote = id.get_remote_ece();
  if (!remote) return remote.error();
  report.remote = *remote;
  return finish(p, on_reply(p, offered, *remote), qp, id, report, false);
}

}  // namespace wireup::ece
