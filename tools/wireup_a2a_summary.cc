// The job summary: the ranks' reports added up, printed for people or as one JSON object.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

template <class M>
nlohmann::ordered_json json_counts(const M& m) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [k, v] : m) {
    if constexpr (std::is_same_v<typename M::key_type, int>) o[std::to_string(k)] = v;
    else o[k] = v;
  }
  return o;
}

// Rounded to `per_unit` steps per unit (1e6: microseconds of a second), the digits the human
// summary prints: finer ones are the clock's noise. Dividing by the integer count of steps gives
// the double nearest the decimal, which the JSON writer prints in its shortest form.
double round_to(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }

// IB CM reject reasons (IBTA vol. 1, table 112), as rdma_cm reports them in REJECTED's status.
std::string reject_reason_name(int r) {
  switch (r) {
    case 8: return "8 (nothing listening)";
    case 10: return "10 (stale connection)";
    case 28: return "28 (rejected by the peer)";
    case 35: return "35 (ECE option not supported)";
    default: return std::to_string(r);
  }
}

std::string join_ranks(const std::set<uint32_t>& s) {
  std::string o;
  for (uint32_t r : s) o += (o.empty() ? "" : ",") + std::to_string(r);
  return o;
}

bool checks_failed(const Summary& s) {
  const CheckCounts& c = s.check;
  if (c.qpn_bad || c.half_open || c.data_bad || c.errors || c.pattern_dup || c.pattern_extra || c.one_sided_bad)
    return true;
  if (!s.job.verified) return false;
  const uint64_t both_ways = 2 * s.connections;
  // A lane lost since it connected did connect: its QPNs cross (unless the other end gave it
  // up before it settled: cross_check), its data checks are skipped.
  return c.qpn_ok < s.connections || c.qpn_ok > s.connections + s.lost_after || (c.data_checked && (c.send_ok != both_ways || c.recv_ok != both_ways)) ||
         (c.one_sided_checked &&
          (c.write_ok != both_ways || c.write_landed != both_ways || c.read_ok != both_ways));
}

PhaseStats percentiles(std::vector<int64_t>& v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return double(v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))]) / 1e3; };
  return PhaseStats{v.size(), at(0.50), at(0.99), double(v.back()) / 1e3};
}

// On demand: the pattern, what was asked and crossed, ask -> ready.
std::string on_demand_lines(const Summary& s) {
  const JobInfo::Pattern& p = s.job.pattern;
  std::string o = "on demand    pattern " + p.text + ": " + std::to_string(p.pairs) + " pairs asked in the job (" +
                  std::to_string(s.lanes_asked) + " lanes asked by the ranks), " + std::to_string(p.crossing) +
                  " crossing pairs (asked by both ends); requests crossed on the wire: " +
                  std::to_string(s.crossed_won) + " refused by the kept side, " + std::to_string(s.crossed_yielded) +
                  " withdrawn\n";
  const PhaseStats& a = s.ask_to_ready;
  o += "ask->ready   " + std::to_string(a.n) + " lanes: p50 " + fmt("%.3f ms", a.p50_us / 1e3) + ", p99 " +
       fmt("%.3f ms", a.p99_us / 1e3) + ", max " + fmt("%.3f ms", a.max_us / 1e3) + " (connect() to READY, by the asker)\n";
  if (s.check.pattern_dup || s.check.pattern_extra)
    o += "pattern      " + std::to_string(s.check.pattern_dup) + " lanes connected twice, " +
         std::to_string(s.check.pattern_extra) + " connections nobody asked for  FAILED\n";
  return o;
}

void add_on_demand(nlohmann::ordered_json& o, const Summary& s) {
  const JobInfo::Pattern& p = s.job.pattern;
  const PhaseStats& a = s.ask_to_ready;
  o["engine_mode"] = s.job.on_demand ? "on_demand" : "bulk";
  if (!s.job.on_demand) return;
  o["pattern"] = {{"name", p.text},
                  {"pairs", p.pairs},
                  {"crossing_pairs", p.crossing},
                  {"pairs_with_dead", p.pairs_with_dead},
                  {"asked_dead", p.asked_dead}};
  o["lanes_asked"] = s.lanes_asked;
  o["crossed_won"] = s.crossed_won;
  o["crossed_yielded"] = s.crossed_yielded;
  o["ask_to_ready_us"] = {{"n", a.n},
                          {"p50", round_to(a.p50_us, 10)},
                          {"p99", round_to(a.p99_us, 10)},
                          {"max", round_to(a.max_us, 10)}};
}

}  // namespace

Summary summarize(const JobInfo& job, const std::vector<RankReport>& reports) {
  Summary s;
  s.job = job;
  // --into: one pair per other rank (each knows only that rank), not every pair.
  // On demand: the pairs the pattern asks for.
  s.planned = (job.on_demand     ? job.pattern.pairs
               : job.into >= 0 ? uint64_t(job.ranks - 1)
                               : uint64_t(job.ranks) * (job.ranks - 1) / 2) *
              job.lanes;
  std::vector<int64_t> a2r;
  std::set<std::string> devices;
  std::array<std::vector<int64_t>, kPhases> all;
  for (const RankReport& r : reports) {
    if (!r.device.empty()) devices.insert(r.device);
    for (auto& [k, v] : r.lanes_by_rail) s.lanes_by_rail[k] += v;
    for (auto& [k, v] : r.lost_by_rail) s.lost_by_rail[k] += v;
    s.lost_after += r.lost_after;
    for (auto& [k, t] : r.rails) {
      RailTally& m = s.rails[k];
      m.connects_started += t.connects_started;
      m.retries += t.retries;
      m.established += t.established;
      m.rejects_received += t.rejects_received;
      m.connect_peak = std::max(m.connect_peak, t.connect_peak);
      m.qp_peak_active = std::max(m.qp_peak_active, t.qp_peak_active);
      m.qp_peak_passive = std::max(m.qp_peak_passive, t.qp_peak_passive);
    }
    s.connect_peak_total = std::max(s.connect_peak_total, r.connect_peak_total);
    s.connections += r.active_to_live;
    s.lost += r.lost;
    s.connects_started += r.connects_started;
    s.retries += r.retries;
    s.strangers += r.strangers;
    s.superseded += r.superseded;
    s.events += r.events;
    s.user_s += r.user_s, s.sys_s += r.sys_s;
    for (auto& [k, v] : r.rejects_received) s.rejects_received[k] += v;
    for (auto& [k, v] : r.rejects_sent) s.rejects_sent[k] += v;
    for (auto& [k, v] : r.failures) s.failures[k] += v;
    for (auto& [k, v] : r.ece_outcomes) s.ece_outcomes[k] += v;
    for (size_t p = 0; p < all.size(); ++p) all[p].insert(all[p].end(), r.samples[p].begin(), r.samples[p].end());
    for (auto& [peer, kinds] : r.errors_by_peer) {
      auto& fp = s.failed_peers[peer];
      fp.first.insert(r.rank);
      for (auto& [k, v] : kinds) fp.second[k] += v;
    }
    const CheckCounts& c = r.check;
    s.check.qpn_ok += c.qpn_ok;
    s.check.qpn_bad += c.qpn_bad;
    s.check.half_open += c.half_open;
    s.check.send_ok += c.send_ok;
    s.check.recv_ok += c.recv_ok;
    s.check.data_bad += c.data_bad;
    s.check.errors += c.errors;
    s.check.data_checked = s.check.data_checked || c.data_checked;
    s.check.pattern_dup += c.pattern_dup;
    s.check.pattern_extra += c.pattern_extra;
    s.check.write_ok += c.write_ok;
    s.check.write_landed += c.write_landed;
    s.check.read_ok += c.read_ok;
    s.check.one_sided_bad += c.one_sided_bad;
    s.check.one_sided_checked = s.check.one_sided_checked || c.one_sided_checked;
    if (s.check.one_sided_skipped.empty()) s.check.one_sided_skipped = c.one_sided_skipped;
    for (auto& [peer, n] : c.one_sided_bad_by_peer) s.one_sided_bad_pairs[{r.rank, peer}] += n;
    s.lanes_asked += r.lanes_asked, s.crossed_won += r.crossed_won, s.crossed_yielded += r.crossed_yielded;
    a2r.insert(a2r.end(), r.ask_to_ready.begin(), r.ask_to_ready.end());
    for (const std::string& p : c.problems) s.check.problem(p);
    if (r.wireup_s >= s.slowest_rank_s) s.slowest_rank_s = r.wireup_s, s.slowest_rank = r.rank;
  }
  for (const std::string& d : devices) s.device += (s.device.empty() ? "" : ",") + d;
  s.failed = s.planned - std::min(s.planned, s.connections);
  s.conn_per_s = job.wall_s > 0 ? double(s.connections) / job.wall_s : 0;
  for (size_t p = 0; p < all.size(); ++p) s.phases[p] = percentiles(all[p]);
  s.ask_to_ready = percentiles(a2r);
  return s;
}

int exit_status(const Summary& s) {
  if (checks_failed(s)) return 1;
  return s.failed > 0 ? 3 : 0;
}

std::string human(const Summary& s) {
  std::string o;
  o += "wireup_a2a: " + std::to_string(s.job.ranks) + " ranks x " + std::to_string(s.job.lanes) + " lane" +
       (s.job.lanes == 1 ? "" : "s") + ", provider " + s.job.provider + " (" +
       (s.job.provider == "sim" ? s.job.mode : "bootstrap " + s.job.mode) + "), " +
       (s.job.on_demand ? "on demand" : "bulk") + ", device " +
       (s.device.empty() ? "-" : s.device) + "\n";
  o += "connections  " + std::to_string(s.connections) + " of " + std::to_string(s.planned) + " established, " +
       std::to_string(s.failed) + " failed";
  if (s.lost_after) o += " (" + std::to_string(s.lost_after) + " of them lost after they connected)";
  if (s.lost) o += ", " + std::to_string(s.lost) + " lost with a dead rank";
  o += "\n";
  o += "wall time    " + fmt("%.3f s", s.job.wall_s) + "   " + fmt("%.1f connections/s", s.conn_per_s) +
       "   (slowest rank " + std::to_string(s.slowest_rank) + fmt(": %.3f s)", s.slowest_rank_s) + "\n";
  if (s.job.on_demand) o += on_demand_lines(s);
  // Several rails: how many endpoints (both ends of a connection count) each rail took.
  if (s.lanes_by_rail.size() > 1 || (s.lanes_by_rail.size() == 1 && s.lanes_by_rail.begin()->first.rfind("0:", 0) != 0)) {
    o += "rails       ";
    for (auto& [k, v] : s.lanes_by_rail) {
      const size_t colon = k.find(':');
      o += " rail " + k.substr(0, colon) + " (" + k.substr(colon + 1) + ") " + std::to_string(v) + " endpoints";
      if (auto l = s.lost_by_rail.find(k); l != s.lost_by_rail.end()) o += " (" + std::to_string(l->second) + " lost since)";
      o += ";";
    }
    o.back() = '\n';
  }
  // Several rails: each rail's own windows, and what went over each (summed over the ranks;
  // the peaks are the most one rank had in flight on that rail at once).
  if (s.rails.size() > 1) {
    o += "rail windows";
    for (auto& [k, t] : s.rails)
      o += " rail " + std::to_string(k) + ": " + std::to_string(t.connects_started) + " connects (" +
           std::to_string(t.retries) + " retries), " + std::to_string(t.established) + " established, " +
           std::to_string(t.rejects_received) + " rejects, peak " + std::to_string(t.connect_peak) + " connects " +
           std::to_string(t.qp_peak_active) + "+" + std::to_string(t.qp_peak_passive) + " QPs;";
    o += " all rails peak " + std::to_string(s.connect_peak_total) + " connects\n";
  }
  if (s.user_s + s.sys_s > 0 && s.connections > 0)
    o += "cpu          " + fmt("%.3f s user + ", s.user_s) + fmt("%.3f s system", s.sys_s) +
         " in the ranks during wireup, " +
         fmt("%.2f ms per connection", (s.user_s + s.sys_s) * 1e3 / double(s.connections)) + "\n";
  if (s.job.verified) {
    o += "checks       QPN cross-check " + std::to_string(s.check.qpn_ok) + "/" + std::to_string(s.connections + s.lost_after) +
         " ok";
    if (s.check.qpn_bad) o += ", " + std::to_string(s.check.qpn_bad) + " crossed wrong";
    if (s.check.half_open) o += ", " + std::to_string(s.check.half_open) + " half-open";
    if (s.check.data_checked)
      o += "; SEND both ways: " + std::to_string(s.check.send_ok) + "/" + std::to_string(2 * s.connections) +
           " sent, " + std::to_string(s.check.recv_ok) + "/" + std::to_string(2 * s.connections) + " received";
    if (s.check.data_bad) o += ", " + std::to_string(s.check.data_bad) + " bad";
    o += checks_failed(s) ? "  FAILED\n" : "\n";
    const std::string both = "/" + std::to_string(2 * s.connections);
    if (s.check.one_sided_checked) {
      o += "one-sided    RDMA WRITE both ways: " + std::to_string(s.check.write_ok) + both + " completed, " +
           std::to_string(s.check.write_landed) + both + " landed; RDMA READ both ways: " +
           std::to_string(s.check.read_ok) + both + " read back";
      if (s.check.one_sided_bad) o += ", " + std::to_string(s.check.one_sided_bad) + " bad  FAILED";
      o += "\n";
      std::string pairs;
      for (auto& [rp, n] : s.one_sided_bad_pairs)
        pairs += (pairs.empty() ? "" : ", ") + std::to_string(rp.first) + "->" + std::to_string(rp.second) + " x" +
                 std::to_string(n);
      if (!pairs.empty()) o += "one-sided    bad WRITE/READ by rank->peer: " + pairs + "\n";
    } else {
      o += "one-sided    NOT RUN: " + (s.check.one_sided_skipped.empty() ? std::string("no rank ran it")
                                                                          : s.check.one_sided_skipped) +
           " (no RDMA WRITE or READ was checked)\n";
    }
  } else {
    o += "checks       skipped (--no-verify)\n";
  }
  o += "phase (us)        n        p50        p99        max\n";
  for (size_t p = 0; p < s.phases.size(); ++p) {
    const PhaseStats& ph = s.phases[p];
    if (ph.n == 0) continue;
    char line[128];
    std::snprintf(line, sizeof line, "  %-13s %6zu %10.1f %10.1f %10.1f\n", wireup_phase_name(static_cast<wireup_phase_t>(p)), ph.n,
                  ph.p50_us, ph.p99_us, ph.max_us);
    o += line;
  }
  o += "attempts     " + std::to_string(s.connects_started) + " connects started, " + std::to_string(s.retries) +
       " retries, " + std::to_string(s.superseded) + " superseded, " + std::to_string(s.strangers) +
       " strangers turned away\n";
  std::string rr, rs, ece, fails;
  for (auto& [k, v] : s.rejects_received) rr += (rr.empty() ? "" : ", ") + reject_reason_name(k) + " x" + std::to_string(v);
  for (auto& [k, v] : s.rejects_sent) rs += (rs.empty() ? "" : ", ") + k + " x" + std::to_string(v);
  for (auto& [k, v] : s.ece_outcomes) ece += (ece.empty() ? "" : ", ") + k + " " + std::to_string(v);
  for (auto& [k, v] : s.failures) fails += (fails.empty() ? "" : ", ") + k + " " + std::to_string(v);
  o += "rejects      received: " + (rr.empty() ? "none" : rr) + "; sent: " + (rs.empty() ? "none" : rs) + "\n";
  o += "ECE          " + (ece.empty() ? "no connection" : ece) + " (connection endpoints)\n";
  if (!fails.empty()) o += "failures     " + fails + " (attempts, both sides)\n";
  if (!s.job.dead.empty()) o += "killed       rank " + join_ranks(s.job.dead) + " (--kill-rank)\n";
  for (auto& [peer, fp] : s.failed_peers) {
    uint64_t lanes = 0;
    std::string kinds;
    for (auto& [k, v] : fp.second) lanes += v, kinds += (kinds.empty() ? "" : ", ") + k + " " + std::to_string(v);
    o += "failed peer  rank " + std::to_string(peer) + ": " + std::to_string(lanes) + " lanes reported by rank" +
         (fp.first.size() == 1 ? " " : "s ") + join_ranks(fp.first) + " (" + kinds + ")\n";
  }
  for (const std::string& p : s.check.problems) o += "problem      " + p + "\n";
  return o;
}

std::string to_json(const Summary& s) {
  nlohmann::ordered_json o;
  o["ranks"] = s.job.ranks;
  o["lanes"] = s.job.lanes;
  if (s.job.into >= 0) o["into"] = s.job.into;
  o["planned"] = s.planned;
  o["connections"] = s.connections;
  o["failed"] = s.failed;
  o["lost"] = s.lost;
  o["wall_s"] = round_to(s.job.wall_s, 1e6);
  o["conn_per_s"] = round_to(s.conn_per_s, 100);
  o["cpu_user_s"] = round_to(s.user_s, 1e6);
  o["cpu_sys_s"] = round_to(s.sys_s, 1e6);
  o["provider"] = s.job.provider;
  o["mode"] = s.job.mode;
  o["device"] = s.device;
  o["lanes_by_rail"] = json_counts(s.lanes_by_rail);
  o["lost_by_rail"] = json_counts(s.lost_by_rail);
  o["lost_after"] = s.lost_after;
  // Per rail: counts over the ranks, window peaks the most one rank reached (each rail has its
  // own windows).
  nlohmann::ordered_json rails = nlohmann::ordered_json::array();
  for (auto& [k, t] : s.rails)
    rails.push_back({{"rail", k},
                     {"connects_started", t.connects_started},
                     {"retries", t.retries},
                     {"established", t.established},
                     {"rejects_received", t.rejects_received},
                     {"connect_window_peak", t.connect_peak},
                     {"qp_window_peak_active", t.qp_peak_active},
                     {"qp_window_peak_passive", t.qp_peak_passive}});
  o["rails"] = rails;
  o["connect_window_peak"] = s.connect_peak_total;
  // Which out-of-band channel carried the addresses and the checks: "mpi" or "pmix" (rdma).
  o["bootstrap"] = s.job.provider == "sim" ? "none" : s.job.mode;
  o["slowest_rank"] = {{"rank", s.slowest_rank}, {"wireup_s", round_to(s.slowest_rank_s, 1e6)}};
  const CheckCounts& c = s.check;
  o["verified"] = s.job.verified && !checks_failed(s);
  o["check"] = {{"ran", s.job.verified},        {"qpn_ok", c.qpn_ok},           {"qpn_bad", c.qpn_bad},
                {"half_open", c.half_open},     {"send_ok", c.send_ok},         {"recv_ok", c.recv_ok},
                {"data_bad", c.data_bad},       {"errors", c.errors},           {"pattern_dup", c.pattern_dup},
                {"pattern_extra", c.pattern_extra}};
  // The one-sided check: "ran" false with "skipped" saying why on a path without WRITE/READ;
  // bad_by_pair: "rank->peer" -> bad WRITEs/READs that rank counted on its lanes to the peer.
  std::map<std::string, uint64_t> pairs;
  for (auto& [rp, n] : s.one_sided_bad_pairs) pairs[std::to_string(rp.first) + "->" + std::to_string(rp.second)] = n;
  nlohmann::ordered_json& one = o["one_sided"];
  one["ran"] = s.job.verified && c.one_sided_checked;
  if (!c.one_sided_checked) one["skipped"] = c.one_sided_skipped.empty() ? "not run" : c.one_sided_skipped;
  one["write_ok"] = c.write_ok;
  one["write_landed"] = c.write_landed;
  one["read_ok"] = c.read_ok;
  one["bad"] = c.one_sided_bad;
  one["bad_by_pair"] = json_counts(pairs);
  add_on_demand(o, s);
  nlohmann::ordered_json& phases = o["phases_us"] = nlohmann::ordered_json::object();
  for (size_t p = 0; p < s.phases.size(); ++p) {
    const PhaseStats& ph = s.phases[p];
    if (ph.n == 0) continue;
    phases[wireup_phase_name(static_cast<wireup_phase_t>(p))] = {{"n", ph.n},
                                                                 {"p50", round_to(ph.p50_us, 10)},
                                                                 {"p99", round_to(ph.p99_us, 10)},
                                                                 {"max", round_to(ph.max_us, 10)}};
  }
  o["connects_started"] = s.connects_started;
  o["retries"] = s.retries;
  o["superseded"] = s.superseded;
  o["strangers"] = s.strangers;
  o["events"] = s.events;
  o["rejects_received"] = json_counts(s.rejects_received);
  o["rejects_sent"] = json_counts(s.rejects_sent);
  o["failures"] = json_counts(s.failures);
  o["ece_outcomes"] = json_counts(s.ece_outcomes);
  o["dead_ranks"] = s.job.dead;
  nlohmann::ordered_json& failed = o["failed_peers"] = nlohmann::ordered_json::array();
  for (auto& [peer, fp] : s.failed_peers) {
    uint64_t lanes = 0;
    for (auto& [k, v] : fp.second) lanes += v;
    failed.push_back({{"rank", peer}, {"lanes", lanes}, {"reported_by", fp.first}, {"kinds", json_counts(fp.second)}});
  }
  o["problems"] = c.problems;
  return o.dump();
}

void print_summary(const Summary& s, bool json) {
  if (json) {
    std::fputs(human(s).c_str(), stderr);
    std::fputs((to_json(s) + "\n").c_str(), stdout);
  } else {
    std::fputs(human(s).c_str(), stdout);
  }
  std::fflush(nullptr);
}

void progress_line(uint64_t established, uint64_t planned, uint64_t retries, double seconds) {
  std::fprintf(stderr, "[a2a] %llu/%llu connections, %llu retries, %.1f s\n", (unsigned long long)established,
               (unsigned long long)planned, (unsigned long long)retries, seconds);
}

}  // namespace wireup::a2a
