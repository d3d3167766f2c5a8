// What one rank contributes to the job summary, and a text form for gathering it over MPI.
// One record per line, "<tag> <fields...>"; names never contain blanks, problem texts run to
// the end of their line.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

Expected<RankReport> malformed(const std::string& line) {
  return Expected<RankReport>::failure("a2a::deserialize: malformed report line \"" + line + "\"");
}

}  // namespace

void read_rail_stats(const std::string& stats_json, RankReport& r) {
  const nlohmann::json j = nlohmann::json::parse(stats_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  auto num = [](const nlohmann::json& o, const char* k) { return o.contains(k) ? o[k].get<uint64_t>() : 0; };
  if (j.contains("window_peaks")) r.connect_peak_total = num(j["window_peaks"], "connects");
  if (!j.contains("rails")) return;
  for (const nlohmann::json& e : j["rails"]) {
    RailTally& t = r.rails[static_cast<uint32_t>(num(e, "rail"))];
    t.connects_started = num(e, "connects_started");
    t.retries = num(e, "retries");
    t.established = num(e, "established_active") + num(e, "established_passive");
    t.rejects_received = num(e, "rejects_received");
    if (e.contains("window_peaks")) {
      const nlohmann::json& w = e["window_peaks"];
      t.connect_peak = num(w, "connects");
      t.qp_peak_active = num(w, "qps_active");
      t.qp_peak_passive = num(w, "qps_passive");
    }
  }
}

std::string serialize(const RankReport& r) {
  std::ostringstream o;
  o << "rank " << r.rank << "\n";
  if (!r.device.empty()) o << "device " << r.device << "\n";
  for (auto& [k, v] : r.lanes_by_rail) o << "rl " << k << " " << v << "\n";
  for (auto& [k, v] : r.lost_by_rail) o << "rlx " << k << " " << v << "\n";
  if (r.lost_after) o << "la " << r.lost_after << "\n";
  for (auto& [k, t] : r.rails)
    o << "rail " << k << " " << t.connects_started << " " << t.retries << " " << t.established << " "
      << t.rejects_received << " " << t.connect_peak << " " << t.qp_peak_active << " " << t.qp_peak_passive << "\n";
  if (r.connect_peak_total) o << "cpk " << r.connect_peak_total << "\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9f", r.wireup_s);
  o << "wireup_s " << buf << "\n";
  std::snprintf(buf, sizeof buf, "%.6f %.6f", r.user_s, r.sys_s);
  o << "cpu " << buf << "\n";
  o << "n " << r.planned << " " << r.active_to_live << " " << r.lost << " " << r.connects_started << " "
    << r.retries << " " << r.failed << " " << r.superseded << " " << r.strangers << " " << r.events << "\n";
  for (auto& [k, v] : r.rejects_received) o << "rr " << k << " " << v << "\n";
  for (auto& [k, v] : r.rejects_sent) o << "rs " << k << " " << v << "\n";
  for (auto& [k, v] : r.failures) o << "f " << k << " " << v << "\n";
  for (auto& [k, v] : r.ece_outcomes) o << "ece " << k << " " << v << "\n";
  for (size_t p = 0; p < r.samples.size(); ++p) {
    if (r.samples[p].empty()) continue;
    o << "s " << p;
    for (int64_t v : r.samples[p]) o << " " << v;
    o << "\n";
  }
  for (auto& [peer, kinds] : r.errors_by_peer)
    for (auto& [k, v] : kinds) o << "e " << peer << " " << k << " " << v << "\n";
  const CheckCounts& c = r.check;
  o << "c " << c.qpn_ok << " " << c.qpn_bad << " " << c.half_open << " " << c.send_ok << " " << c.recv_ok << " "
    << c.data_bad << " " << c.errors << " " << (c.data_checked ? 1 : 0) << " " << c.pattern_dup << " "
    << c.pattern_extra << "\n";
  o << "os " << c.write_ok << " " << c.write_landed << " " << c.read_ok << " " << c.one_sided_bad << " "
    << (c.one_sided_checked ? 1 : 0) << "\n";
  if (!c.one_sided_skipped.empty()) o << "oss " << c.one_sided_skipped << "\n";
  for (auto& [peer, n] : c.one_sided_bad_by_peer) o << "osp " << peer << " " << n << "\n";
  o << "od " << r.lanes_asked << " " << r.crossed_won << " " << r.crossed_yielded << "\n";
  if (!r.ask_to_ready.empty()) {
    o << "a2r";
    for (int64_t v : r.ask_to_ready) o << " " << v;
    o << "\n";
  }
  for (const std::string& p : c.problems) {
    std::string line = p;
    for (char& ch : line)
      if (ch == '\n') ch = ' ';
    o << "p " << line << "\n";
  }
  return o.str();
}

Expected<RankReport> deserialize(std::string_view text) {
  RankReport r;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream l(line);
    std::string tag;
    l >> tag;
    bool ok = true;
    if (tag == "rank") {
      ok = bool(l >> r.rank);
    } else if (tag == "device") {
      ok = bool(l >> r.device);
    } else if (tag == "rl") {
      std::string k;
      uint64_t v;
      ok = bool(l >> k >> v) && (r.lanes_by_rail[k] = v, true);
    } else if (tag == "rlx") {
      std::string k;
      uint64_t v;
      ok = bool(l >> k >> v) && (r.lost_by_rail[k] = v, true);
    } else if (tag == "la") {
      ok = bool(l >> r.lost_after);
    } else if (tag == "rail") {
      uint32_t k;
      RailTally t;
      ok = bool(l >> k >> t.connects_started >> t.retries >> t.established >> t.rejects_received >> t.connect_peak >>
                t.qp_peak_active >> t.qp_peak_passive) &&
           (r.rails[k] = t, true);
    } else if (tag == "cpk") {
      ok = bool(l >> r.connect_peak_total);
    } else if (tag == "wireup_s") {
      ok = bool(l >> r.wireup_s);
    } else if (tag == "cpu") {
      ok = bool(l >> r.user_s >> r.sys_s);
    } else if (tag == "n") {
      ok = bool(l >> r.planned >> r.active_to_live >> r.lost >> r.connects_started >> r.retries >> r.failed >>
                r.superseded >> r.strangers >> r.events);
    } else if (tag == "rr") {
      int k;
      uint64_t v;
      ok = bool(l >> k >> v) && (r.rejects_received[k] = v, true);
    } else if (tag == "rs" || tag == "f" || tag == "ece") {
      std::string k;
      uint64_t v;
      auto& m = tag == "rs" ? r.rejects_sent : tag == "f" ? r.failures : r.ece_outcomes;
      ok = bool(l >> k >> v) && (m[k] = v, true);
    } else if (tag == "s") {
      size_t p;
      ok = bool(l >> p) && p < r.samples.size();
      for (int64_t v; ok && l >> v;) r.samples[p].push_back(v);
    } else if (tag == "e") {
      uint32_t peer;
      std::string k;
      uint64_t v;
      ok = bool(l >> peer >> k >> v) && (r.errors_by_peer[peer][k] = v, true);
    } else if (tag == "c") {
      CheckCounts& c = r.check;
      int checked = 0;
      ok = bool(l >> c.qpn_ok >> c.qpn_bad >> c.half_open >> c.send_ok >> c.recv_ok >> c.data_bad >> c.errors >> checked >>
                c.pattern_dup >> c.pattern_extra);
      c.data_checked = checked != 0;
    } else if (tag == "os") {
      CheckCounts& c = r.check;
      int checked = 0;
      ok = bool(l >> c.write_ok >> c.write_landed >> c.read_ok >> c.one_sided_bad >> checked);
      c.one_sided_checked = checked != 0;
    } else if (tag == "oss") {
      r.check.one_sided_skipped = line.size() > 4 ? line.substr(4) : std::string("?");
    } else if (tag == "osp") {
      uint32_t peer = 0;
      uint64_t n = 0;
      ok = bool(l >> peer >> n) && (r.check.one_sided_bad_by_peer[peer] += n, true);
    } else if (tag == "od") {
      ok = bool(l >> r.lanes_asked >> r.crossed_won >> r.crossed_yielded);
    } else if (tag == "a2r") {
      for (int64_t v; l >> v;) r.ask_to_ready.push_back(v);
    } else if (tag == "p") {
      r.check.problems.push_back(line.size() > 2 ? line.substr(2) : std::string());
    } else {
      ok = false;
    }
    if (!ok) return malformed(line);
  }
  return r;
}

}  // namespace wireup::a2a
