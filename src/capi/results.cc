// What wireup built (results), what it could not (errors), and the statistics. Events are in
// events.cc.
#include <cstring>

#include <nlohmann/json.hpp>

#include "capi/enums.h"
#include "capi/handles.h"
#include "capi/layouts.h"
#include "capi/struct_io.h"
#include "wireup/private_data.h"
#include "wireup/stats.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

wireup_status_t null_handle(const char* fn) {
  return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the wireup handle is NULL");
}

// The engine's stats JSON with the liveness service's part ("liveness": datagrams, dropped
// ones by reason, decisions): the service lives beside the engine, in this layer.
std::string with_liveness(const std::string& engine_json, const capi::LivenessService& l) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(engine_json);
  const capi::LivenessStats& s = l.stats();
  nlohmann::ordered_json bad = nlohmann::ordered_json::object();
  for (size_t i = 0; i < s.bad.size(); ++i)
    if (s.bad[i] != 0) bad[liveness::to_string(static_cast<liveness::Bad>(i))] = s.bad[i];
  nlohmann::ordered_json& o = j["liveness"] = {{"sent", s.sent},
                                               {"send_dropped", s.send_again},
                                               {"send_errors", s.send_errors},
                                               {"received", s.received},
                                               {"bad", bad}};
  if (const liveness::Detector* d = l.detector()) {
    const liveness::Counters& k = d->counters();
    o["suspicions"] = k.suspicions;
    o["refuted"] = k.refuted;
    o["declared"] = k.declared;
    o["learnt"] = k.learnt;
    o["stale"] = k.stale;
    o["refused"] = k.refused;
  }
  return j.dump();
}

wireup_status_t bad_index(const wireup_t* w, const char* fn, size_t i, size_t n) {
  return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
              "index " + std::to_string(i) + " out of range (count is " + std::to_string(n) + ")");
}

// A phase's span in ns, 0 where it was not reached.
uint64_t ns(const std::array<Nanos, kPhases>& d, Phase p) {
  const Nanos v = d[static_cast<size_t>(p)];
  return v == cm::kUnset ? 0 : static_cast<uint64_t>(v.count());
}

// The status a transport would see for a failure of this kind.
wireup_status_t kind_status(cm::FailKind k) {
  switch (k) {
    case cm::FailKind::rejected: return WIREUP_ERR_REJECTED;
    case cm::FailKind::unreachable:
    case cm::FailKind::connect_error: return WIREUP_ERR_UNREACHABLE;
    case cm::FailKind::address_error:
    case cm::FailKind::route_error: return WIREUP_ERR_ADDRESS;
    case cm::FailKind::timed_out: return WIREUP_ERR_TIMED_OUT;
    case cm::FailKind::device_removal: return WIREUP_ERR_DEVICE_REMOVED;
    default: return WIREUP_ERR_PROTOCOL;
  }
}

static_assert(int(WIREUP_PHASE_COUNT) == int(kSampledPhases), "wireup_phase_t mirrors the sampled wireup::Phase");
static_assert(int(WIREUP_PHASE_RESOLVE_ADDR) == int(Phase::resolve_addr) &&
                  int(WIREUP_PHASE_RESOLVE_ROUTE) == int(Phase::resolve_route) &&
                  int(WIREUP_PHASE_QP_CREATE) == int(Phase::qp_create) &&
                  int(WIREUP_PHASE_REQ_TO_REP) == int(Phase::req_to_rep) &&
                  int(WIREUP_PHASE_RTR_RTS) == int(Phase::rtr_rts) &&
                  int(WIREUP_PHASE_ESTABLISH) == int(Phase::establish) && int(WIREUP_PHASE_TOTAL) == int(Phase::total),
              "wireup_phase_t mirrors wireup::Phase, value by value");

// Copies `x` into the caller's struct by the struct_size rule (struct_io.h).
template <class T>
wireup_status_t write(const wireup_t* w, const char* fn, T* out, const T& x, size_t first, const char* name) {
  if (Status s = capi::write_struct(out, x, first, name); !s) return fail(&w->last_error, fn, s.error());
  return WIREUP_OK;
}

}  // namespace

extern "C" {

size_t wireup_result_count(const wireup_t* w) {
  if (w == nullptr) return null_handle("wireup_result_count"), 0;
  return w->handed.size();
}

wireup_status_t wireup_result_get(const wireup_t* w, size_t i, wireup_result_t* out) {
  const char* fn = "wireup_result_get";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (out == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    if (i >= w->handed.size()) return bad_index(w, fn, i, w->handed.size());
    const capi::HandedOver::Entry& h = w->handed[i];
    const ConnResult& r = w->engine->results().at(h.result);
    switch (capi::HandedOver::standing(r, w->engine->qp(h.result), h)) {
      case capi::HandedOver::Standing::same: break;
      case capi::HandedOver::Standing::connected_again:
        return fail(&w->last_error, WIREUP_ERR_INVALID_STATE, fn,
                    "index " + std::to_string(i) + " (" + capi::HandedOver::identity(h) +
                        "): the lane was closed and connected again; its new connection shows here once "
                        "wireup_progress() returns (its READY lane event)");
      case capi::HandedOver::Standing::lost:
        return fail(&w->last_error, WIREUP_ERR_INTERNAL, fn,
                    "internal: the result handed over as " + capi::HandedOver::identity(h) +
                        " is no longer that connection in the engine");
    }
    wireup_result_t x;
    std::memset(&x, 0, sizeof x);
    x.peer = r.peer;
    x.lane = r.lane;
    x.active = r.role == cm::Role::active ? 1 : 0;
    x.qp = h.qp;
    x.local_qpn = r.local_qpn;
    x.remote_qpn = r.remote_qpn;
    x.attempts = r.attempts;
    const LinkInfo& link = w->engine->link(r);
    x.ece_local_vendor = link.ece.local.vendor_id;
    x.ece_local_options = link.ece.local.options;
    x.ece_remote_vendor = link.ece.remote.vendor_id;
    x.ece_remote_options = link.ece.remote.options;
    x.ece_accepted = link.ece.accepted;
    x.ece_outcome = capi::to_public(link.ece.outcome);
    x.device = w->device_names.insert(std::string(link.device)).first->c_str();
    x.qp_access_flags = link.qp.access_flags;
    x.qp_path_mtu = link.qp.path_mtu;
    x.qp_max_rd_atomic = link.qp.max_rd_atomic;
    x.qp_max_dest_rd_atomic = link.qp.max_dest_rd_atomic;
    x.qp_timeout = link.qp.timeout;
    x.qp_retry_cnt = link.qp.retry_cnt;
    x.qp_rnr_retry = link.qp.rnr_retry;
    x.qp_min_rnr_timer = link.qp.min_rnr_timer;
    x.rail = link.rail;
    x.lost = r.lost == cm::FailKind::none ? wireup_error_kind_t(0) : capi::to_public(r.lost);
    // The same phase boundaries as the stats (one function cuts both), so they add up.
    const auto d = phase_spans(r.timings.get(), r.role, cm::kUnset);
    x.resolve_addr_ns = ns(d, Phase::resolve_addr);
    x.resolve_route_ns = ns(d, Phase::resolve_route);
    x.qp_create_ns = ns(d, Phase::qp_create);
    x.req_to_rep_ns = ns(d, Phase::req_to_rep);
    x.rtr_rts_ns = ns(d, Phase::rtr_rts);
    x.establish_ns = ns(d, Phase::establish);
    x.attempt_ns = ns(d, Phase::attempt);
    return write(w, fn, out, x, capi::kFirstResult, "wireup_result_t");
  });
}

size_t wireup_error_count(const wireup_t* w) {
  if (w == nullptr) return null_handle("wireup_error_count"), 0;
  return w->engine->errors().size();
}

wireup_status_t wireup_error_get(const wireup_t* w, size_t i, wireup_peer_error_t* out) {
  const char* fn = "wireup_error_get";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (out == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    const auto& all = w->engine->errors();
    if (i >= all.size()) return bad_index(w, fn, i, all.size());
    const PeerError& e = all[i];
    // One error per (peer, lane), the latest: its text is cached at the same index and made
    // again only when the lane was given up again since (a pointer handed out earlier stays
    // valid until then).
    if (w->error_messages.size() < all.size()) w->error_messages.resize(all.size());
    if (std::string m = e.describe(); m != w->error_messages[i]) w->error_messages[i] = std::move(m);
    wireup_peer_error_t x;
    std::memset(&x, 0, sizeof x);
    x.peer = e.peer;
    x.lane = e.lane;
    x.active = e.role == cm::Role::active ? 1 : 0;
    x.attempts = e.attempts;
    x.kind = capi::to_public(e.failure.kind);
    x.reject_reason = e.failure.kind == cm::FailKind::rejected ? e.failure.status : 0;
    x.peer_reason = capi::peer_reason_of(e);
    x.message = w->error_messages[i].c_str();
    x.status = e.failure.kind == cm::FailKind::local_error ? capi::to_status(e.failure.error.code)
                                                            : kind_status(e.failure.kind);
    return write(w, fn, out, x, capi::kFirstPeerError, "wireup_peer_error_t");
  });
}

wireup_status_t wireup_counters_get(const wireup_t* w, wireup_counters_t* out) {
  const char* fn = "wireup_counters_get";
  if (w == nullptr) return null_handle(fn);
  if (out == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
  const Stats& s = w->engine->stats();
  wireup_counters_t c;
  std::memset(&c, 0, sizeof c);
  c.connects_started = s[Counter::connects_started];
  c.retries = s[Counter::retries];
  c.established_active = s[Counter::established_active];
  c.established_passive = s[Counter::established_passive];
  c.failed = s[Counter::failed];
  c.superseded = s[Counter::superseded];
  c.strangers = s[Counter::strangers];
  c.disconnects = s[Counter::disconnects];
  c.events = s[Counter::events];
  c.connects_paced = s[Counter::connects_paced];
  c.strangers_unlogged = s[Counter::strangers_unlogged];
  c.rtu_lost_sent = s[Counter::rtu_lost_sent];
  c.rtu_lost_received = s[Counter::rtu_lost_received];
  c.repairs = s[Counter::repairs];
  c.repairs_refused = s[Counter::repairs_refused];
  c.abandons_sent = s[Counter::abandons_sent];
  c.abandons_received = s[Counter::abandons_received];
  c.device_events = s[Counter::device_events];
  c.comm_est_notified = s[Counter::comm_est_notified];
  c.device_removals = s[Counter::device_removals];
  c.addr_changes = s[Counter::addr_changes];
  c.asks = s[Counter::asks];
  c.crossed_won = s[Counter::crossed_won];
  c.crossed_yielded = s[Counter::crossed_yielded];
  c.lanes_closed = s[Counter::lanes_closed];
  c.peers_down = s[Counter::peers_down];
  // Every engine counter has its field above (count_ grows with the enum: add it there too).
  static_assert(static_cast<size_t>(Counter::count_) == 26, "a Counter without its wireup_counters_t field");
  if (w->liveness) {
    const capi::LivenessStats& l = w->liveness->stats();
    c.liveness_sent = l.sent;
    c.liveness_send_dropped = l.send_again;
    c.liveness_send_errors = l.send_errors;
    c.liveness_received = l.received;
    c.liveness_bad = l.bad_total();
    if (const liveness::Detector* d = w->liveness->detector()) {
      const liveness::Counters& k = d->counters();
      c.liveness_suspicions = k.suspicions;
      c.liveness_refuted = k.refuted;
      c.liveness_declared = k.declared;
      c.liveness_learnt = k.learnt;
      c.liveness_stale = k.stale;
      c.liveness_refused = k.refused;
    }
  }
  return write(w, fn, out, c, capi::kFirstCounters, "wireup_counters_t");
}

size_t wireup_tally_count(const wireup_t* w) {
  if (w == nullptr) return null_handle("wireup_tally_count"), 0;
  wireup_status_t st = guarded("wireup_tally_count", &w->last_error, [&] {
    const Stats& s = w->engine->stats();
    auto& t = w->tallies;
    t.clear();
    for (const auto& [k, v] : s.rejects_received_by_reason())
      t.push_back({WIREUP_TALLY_REJECTS_RECEIVED, static_cast<uint32_t>(k), std::to_string(k), v});
    for (size_t i = 0; i <= static_cast<size_t>(kLastRejectCode); ++i)
      if (const auto c = static_cast<RejectCode>(i); s.rejects_sent(c) != 0)
        t.push_back({WIREUP_TALLY_REJECTS_SENT, static_cast<uint32_t>(capi::to_public(c)), to_string(c), s.rejects_sent(c)});
    for (size_t i = 0; i < cm::kFailKinds; ++i)
      if (const auto k = static_cast<cm::FailKind>(i); k != cm::FailKind::none && s.failures(k) != 0)
        t.push_back({WIREUP_TALLY_FAILURES, static_cast<uint32_t>(capi::to_public(k)), cm::to_string(k), s.failures(k)});
    for (size_t i = 0; i <= static_cast<size_t>(ece::Outcome::rejected); ++i)
      if (const auto o = static_cast<ece::Outcome>(i); s.ece_outcomes(o) != 0)
        t.push_back({WIREUP_TALLY_ECE_OUTCOMES, static_cast<uint32_t>(capi::to_public(o)), ece::to_string(o), s.ece_outcomes(o)});
    return WIREUP_OK;
  });
  return st == WIREUP_OK ? w->tallies.size() : 0;
}

wireup_status_t wireup_tally_get(const wireup_t* w, size_t i, wireup_tally_t* out) {
  const char* fn = "wireup_tally_get";
  if (w == nullptr) return null_handle(fn);
  if (out == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "out is NULL");
  if (i >= w->tallies.size()) return bad_index(w, fn, i, w->tallies.size());
  const wireup_t::Tally& t = w->tallies[i];
  wireup_tally_t x;
  std::memset(&x, 0, sizeof x);
  x.group = t.group;
  x.key = t.key;
  x.count = t.count;
  x.key_name = t.key_name.c_str();
  return write(w, fn, out, x, capi::kFirstTally, "wireup_tally_t");
}

const char* wireup_phase_name(wireup_phase_t phase) {
  if (int(phase) < 0 || int(phase) >= int(WIREUP_PHASE_COUNT)) return nullptr;
  return to_string(static_cast<Phase>(phase));
}

wireup_status_t wireup_phase_samples(const wireup_t* w, wireup_phase_t phase, uint64_t* buf, size_t* n) {
  const char* fn = "wireup_phase_samples";
  if (w == nullptr) return null_handle(fn);
  if (n == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "n is NULL");
  if (int(phase) < 0 || int(phase) >= int(WIREUP_PHASE_COUNT))
    return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                "phase " + std::to_string(int(phase)) + " is out of range (0.." +
                    std::to_string(int(WIREUP_PHASE_COUNT) - 1) + ")");
  const std::vector<int64_t>& v = w->engine->stats().samples(static_cast<Phase>(phase));
  if (buf == nullptr || *n < v.size()) {
    const size_t have = *n;
    *n = v.size();
    return fail(&w->last_error, WIREUP_ERR_BUFFER_TOO_SMALL, fn,
                std::to_string(v.size()) + " samples, the buffer holds " + std::to_string(have));
  }
  for (size_t i = 0; i < v.size(); ++i) buf[i] = v[i] > 0 ? static_cast<uint64_t>(v[i]) : 0;
  *n = v.size();
  return WIREUP_OK;
}

wireup_status_t wireup_stats_json(const wireup_t* w, char* buf, size_t* len) {
  const char* fn = "wireup_stats_json";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (len == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "len is NULL");
    std::string json = w->engine->stats().to_json();
    if (w->liveness) json = with_liveness(json, *w->liveness);
    const size_t need = json.size() + 1;  // with the NUL
    if (buf == nullptr || *len < need) {
      const size_t have = *len;
      *len = need;
      return fail(&w->last_error, WIREUP_ERR_BUFFER_TOO_SMALL, fn,
                  "the JSON takes " + std::to_string(need) + " bytes with its NUL, the buffer has " +
                      std::to_string(have));
    }
    std::memcpy(buf, json.c_str(), need);
    *len = need;
    return WIREUP_OK;
  });
}

}  // extern "C"
