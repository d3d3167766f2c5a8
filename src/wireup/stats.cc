#include "wireup/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace wireup {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::resolve_addr: return "resolve_addr";
    case Phase::resolve_route: return "resolve_route";
    case Phase::qp_create: return "qp_create";
    case Phase::req_to_rep: return "req_to_rep";
    case Phase::rtr_rts: return "rtr_rts";
    case Phase::establish: return "establish";
    case Phase::attempt: return "attempt";
    case Phase::total: return "total";
    case Phase::count_: break;
  }
  return "?";
}

const char* to_string(Counter c) {
  switch (c) {
    case Counter::connects_started: return "connects_started";
    case Counter::retries: return "retries";
    case Counter::established_active: return "established_active";
    case Counter::established_passive: return "established_passive";
    case Counter::failed: return "failed";
    case Counter::superseded: return "superseded";
    case Counter::strangers: return "strangers";
    case Counter::strangers_unlogged: return "strangers_unlogged";
    case Counter::disconnects: return "disconnects";
    case Counter::events: return "events";
    case Counter::rtu_lost_sent: return "rtu_lost_sent";
    case Counter::rtu_lost_received: return "rtu_lost_received";
    case Counter::repairs: return "repairs";
    case Counter::repairs_refused: return "repairs_refused";
    case Counter::abandons_sent: return "abandons_sent";
    case Counter::abandons_received: return "abandons_received";
    case Counter::device_events: return "device_events";
    case Counter::comm_est_notified: return "comm_est_notified";
    case Counter::device_removals: return "device_removals";
    case Counter::addr_changes: return "addr_changes";
    case Counter::asks: return "asks";
    case Counter::crossed_won: return "crossed_won";
    case Counter::crossed_yielded: return "crossed_yielded";
    case Counter::lanes_closed: return "lanes_closed";
    case Counter::peers_down: return "peers_down";
    case Counter::connects_paced: return "connects_paced";
    case Counter::count_: break;
  }
  return "?";
}

std::array<Nanos, kPhases> phase_spans(const cm::Timings& t, cm::Role role, Nanos first_start) {
  std::array<Nanos, kPhases> d;
  d.fill(cm::kUnset);
  auto span = [&](Phase p, Nanos from, Nanos to) {
    if (from != cm::kUnset && to != cm::kUnset && to >= from) d[static_cast<size_t>(p)] = to - from;
  };
  if (role == cm::Role::active) {
    span(Phase::resolve_addr, t.start, t.addr_resolved);
    span(Phase::resolve_route, t.addr_resolved, t.route_resolved);
    span(Phase::qp_create, t.route_resolved, t.qp_created);
    span(Phase::req_to_rep, t.request, t.response);
    span(Phase::rtr_rts, t.response, t.rts);
    span(Phase::attempt, t.start, t.established);
  } else {
    span(Phase::qp_create, t.request, t.qp_created);
    span(Phase::rtr_rts, t.qp_created, t.rts);
    span(Phase::attempt, t.request, t.established);
  }
  span(Phase::establish, t.rts, t.established);
  span(Phase::total, first_start, t.established);
  return d;
}

void Stats::reject_received(int ib_reason) {
  const size_t i = ib_reason < 0 ? 0 : std::min<size_t>(static_cast<size_t>(ib_reason), kRejectReasons - 1);
  ++rejects_received_[i];
}

uint64_t Stats::rejects_received(int ib_reason) const {
  const size_t i = ib_reason < 0 ? 0 : std::min<size_t>(static_cast<size_t>(ib_reason), kRejectReasons - 1);
  return rejects_received_[i];
}

void Stats::record(const cm::Connection& c) { ++ece_[static_cast<size_t>(c.ece().outcome)]; }

std::vector<int64_t> Stats::samples(Phase p) const {
  std::vector<int64_t> v;
  if (results_ == nullptr || !sampled(p)) return v;
  const size_t i = static_cast<size_t>(p);
  for (const ConnResult& r : *results_) {
    const Nanos d = phase_spans(r.timings.get(), r.role, r.timings.first_start())[i];
    if (d != cm::kUnset) v.push_back(d.count());
  }
  return v;
}

PhaseSummary Stats::summary(Phase p) const {
  std::vector<int64_t> v = samples(p);
  PhaseSummary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))] / 1e3; };
  s.p50_us = at(0.50);
  s.p99_us = at(0.99);
  s.max_us = v.back() / 1e3;
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  s.mean_us = sum / static_cast<double>(v.size()) / 1e3;
  return s;
}

std::map<int, uint64_t> Stats::rejects_received_by_reason() const {
  std::map<int, uint64_t> m;
  for (size_t i = 0; i < kRejectReasons; ++i)
    if (rejects_received_[i] != 0) m[static_cast<int>(i)] = rejects_received_[i];
  return m;
}

std::map<std::string, uint64_t> Stats::rejects_sent_by_name() const {
  std::map<std::string, uint64_t> m;
  for (size_t i = 0; i < kRejectCodes; ++i)
    if (rejects_sent_[i] != 0) m[to_string(static_cast<RejectCode>(i))] = rejects_sent_[i];
  return m;
}

std::map<std::string, uint64_t> Stats::failures_by_name() const {
  std::map<std::string, uint64_t> m;
  for (size_t i = 0; i < kFailKinds; ++i)
    if (failures_[i] != 0) m[cm::to_string(static_cast<cm::FailKind>(i))] = failures_[i];
  return m;
}

std::map<std::string, uint64_t> Stats::ece_outcomes_by_name() const {
  std::map<std::string, uint64_t> m;
  for (size_t i = 0; i < kEceOutcomes; ++i)
    if (ece_[i] != 0) m[ece::to_string(static_cast<ece::Outcome>(i))] = ece_[i];
  return m;
}

std::vector<RailCounts> Stats::rails() const {
  std::vector<RailCounts> v = rails_;
  if (windows_ != nullptr && v.size() < windows_->rails()) v.resize(windows_->rails());
  if (v.empty()) v.resize(1);
  return v;
}

WindowPeaks Stats::window_peaks(uint32_t rail) const {
  return windows_ != nullptr && rail < windows_->rails() ? windows_->peaks(rail) : WindowPeaks{};
}

WindowPeaks Stats::window_peaks_total() const { return windows_ != nullptr ? windows_->peaks_total() : WindowPeaks{}; }

namespace {
// Maps keyed by a reject reason number still get string keys: JSON objects have no others.
template <class K>
nlohmann::ordered_json json_map(const std::map<K, uint64_t>& m) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [k, v] : m) {
    if constexpr (std::is_same_v<K, int>) o[std::to_string(k)] = v;
    else o[k] = v;
  }
  return o;
}

// Microseconds to one decimal: finer digits are noise of the clock and the sampling.
double tenth(double us) { return std::round(us * 10.0) / 10.0; }
}  // namespace

std::string Stats::to_json() const {
  nlohmann::ordered_json j;
  for (size_t i = 0; i < counters_.size(); ++i) j[to_string(static_cast<Counter>(i))] = counters_[i];
  j["rejects_received"] = json_map(rejects_received_by_reason());
  j["rejects_sent"] = json_map(rejects_sent_by_name());
  j["failures"] = json_map(failures_by_name());
  j["ece_outcomes"] = json_map(ece_outcomes_by_name());
  nlohmann::ordered_json& phases = j["phases_us"] = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kPhases; ++i) {
    if (!sampled(static_cast<Phase>(i))) continue;
    const PhaseSummary p = summary(static_cast<Phase>(i));
    phases[to_string(static_cast<Phase>(i))] = {{"n", p.n},
                                                 {"p50", tenth(p.p50_us)},
                                                 {"p99", tenth(p.p99_us)},
                                                 {"max", tenth(p.max_us)},
                                                 {"mean", tenth(p.mean_us)}};
  }
  // The windows' peaks (the most in flight at once), over every rail together, then per rail
  // with what each rail carried.
  auto peaks_json = [](const WindowPeaks& w) {
    return nlohmann::ordered_json{{"connects", w.connects},
                                  {"qps_active", w.qps[static_cast<int>(cm::Role::active)]},
                                  {"qps_passive", w.qps[static_cast<int>(cm::Role::passive)]}};
  };
  j["window_peaks"] = peaks_json(window_peaks_total());
  nlohmann::ordered_json& rails = j["rails"] = nlohmann::ordered_json::array();
  const std::vector<RailCounts> rs = this->rails();
  for (size_t r = 0; r < rs.size(); ++r) {
    rails.push_back({{"rail", r},
                     {"connects_started", rs[r].connects_started},
                     {"retries", rs[r].retries},
                     {"established_active", rs[r].established_active},
                     {"established_passive", rs[r].established_passive},
                     {"rejects_received", rs[r].rejects_received},
                     {"window_peaks", peaks_json(window_peaks(static_cast<uint32_t>(r)))}});
  }
  return j.dump();
}

}  // namespace wireup
