#include "wireup/stats.h"

#include <algorithm>
#include <cstdio>

namespace wireup {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::resolve_addr: return "resolve_addr";
    case Phase::resolve_route: return "resolve_route";
    case Phase::qp_create: return "qp_create";
    case Phase::req_to_rep: return "req_to_rep";
    case Phase::rtr_rts: return "rtr_rts";
    case Phase::establish: return "establish";
    case Phase::total: return "total";
    case Phase::count_: break;
  }
  return "?";
}

void Stats::add(Phase p, Nanos d) {
  if (d.count() >= 0) samples_[static_cast<size_t>(p)].push_back(d.count());
}

void Stats::reserve(size_t active, size_t passive) {
  for (size_t i = 0; i < samples_.size(); ++i) {
    const Phase p = static_cast<Phase>(i);
    const bool active_only = p == Phase::resolve_addr || p == Phase::resolve_route || p == Phase::req_to_rep;
    samples_[i].reserve(samples_[i].size() + active + (active_only ? 0 : passive));
  }
}

void Stats::record(const cm::Connection& c, Nanos first_start) {
  const cm::Timings& t = c.timings();
  auto span = [&](Phase p, Nanos from, Nanos to) {
    if (from != cm::kUnset && to != cm::kUnset) add(p, to - from);
  };
  if (c.role() == cm::Role::active) {
    span(Phase::resolve_addr, t.start, t.addr_resolved);
    span(Phase::resolve_route, t.addr_resolved, t.route_resolved);
    span(Phase::qp_create, t.route_resolved, t.qp_created);
    span(Phase::req_to_rep, t.request, t.response);
    span(Phase::rtr_rts, t.response, t.rts);
  } else {
    span(Phase::qp_create, t.request, t.qp_created);
    span(Phase::rtr_rts, t.qp_created, t.rts);
  }
  span(Phase::establish, t.rts, t.established);
  span(Phase::total, first_start, t.established);
  ece_outcomes[ece::to_string(c.ece().outcome)]++;
}

PhaseSummary Stats::summary(Phase p) const {
  std::vector<int64_t> v = samples_[static_cast<size_t>(p)];
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

namespace {
template <class M>
std::string json_map(const M& m) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) s += ",";
    first = false;
    char buf[96];
    if constexpr (std::is_same_v<typename M::key_type, int>)
      std::snprintf(buf, sizeof buf, "\"%d\":%llu", k, static_cast<unsigned long long>(v));
    else
      std::snprintf(buf, sizeof buf, "\"%s\":%llu", k.c_str(), static_cast<unsigned long long>(v));
    s += buf;
  }
  return s + "}";
}
}  // namespace

std::string Stats::to_json() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"connects_started\":%llu,\"retries\":%llu,\"established_active\":%llu,"
                "\"established_passive\":%llu,\"failed\":%llu,\"superseded\":%llu,\"strangers\":%llu,"
                "\"disconnects\":%llu,\"events\":%llu,",
                (unsigned long long)connects_started, (unsigned long long)retries,
                (unsigned long long)established_active, (unsigned long long)established_passive,
                (unsigned long long)failed, (unsigned long long)superseded, (unsigned long long)strangers,
                (unsigned long long)disconnects, (unsigned long long)events);
  std::string s = buf;
  std::snprintf(buf, sizeof buf, "\"rtu_lost_sent\":%llu,\"rtu_lost_received\":%llu,\"repairs\":%llu,"
                "\"repairs_refused\":%llu,",
                (unsigned long long)rtu_lost_sent, (unsigned long long)rtu_lost_received,
                (unsigned long long)repairs, (unsigned long long)repairs_refused);
  s += buf;
  s += "\"rejects_received\":" + json_map(rejects_received) + ",";
  s += "\"rejects_sent\":" + json_map(rejects_sent) + ",";
  s += "\"failures\":" + json_map(failures) + ",";
  s += "\"ece_outcomes\":" + json_map(ece_outcomes) + ",";
  s += "\"phases_us\":{";
  for (size_t i = 0; i < static_cast<size_t>(Phase::count_); ++i) {
    PhaseSummary p = summary(static_cast<Phase>(i));
    std::snprintf(buf, sizeof buf, "%s\"%s\":{\"n\":%zu,\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f,\"mean\":%.1f}",
                  i ? "," : "", to_string(static_cast<Phase>(i)), p.n, p.p50_us, p.p99_us, p.max_us, p.mean_us);
    s += buf;
  }
  return s + "}}";
}

}  // namespace wireup
