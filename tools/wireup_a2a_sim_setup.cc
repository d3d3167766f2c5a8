// The sim driver's setup: configuration and one rank's engine with a default QP factory (the
// runner owns its QPs as a transport would); make_report and the SEND check's verbs on it.
#include <algorithm>

#include "common/log.h"
#include "wireup/options.h"
#include "wireup_a2a_sim.h"

namespace wireup::a2a {
namespace {

// "rejected(35)", "local_error(not_supported)", "timed_out": the kind, and what tells its cases apart.
std::string failure_kind(const cm::Failure& f) {
  if (f.kind == cm::FailKind::rejected) return "rejected(" + std::to_string(f.status) + ")";
  if (f.kind == cm::FailKind::local_error) {
    std::string code = to_string(f.error.code);  // "not supported": no blanks in a report field
    std::replace(code.begin(), code.end(), ' ', '_');
    return "local_error(" + code + ")";
  }
  return cm::to_string(f.kind);
}

}  // namespace


Result<config::Config> load_config(const Options& o) {
  config::LoadOptions lo;
  lo.file = o.config_file;
  lo.env = config::process_environment();
  for (const std::string& kv : o.overrides) {  // parse_options checked the '='
    const size_t eq = kv.find('=');
    lo.overrides.push_back(config::Override{kv.substr(0, eq), kv.substr(eq + 1)});
  }
  auto c = config::load(lo);
  if (!c) return c.error();
  log::set_level(c->settings().log.level);
  return c;
}

Result<RankEngine> make_engine(prov::Provider& p, const config::Settings& s, uint32_t rank, uint32_t nranks,
                               const prov::SockAddr& listen, uint64_t job_key) {
  EngineOptions eo = engine_options(s, rank, nranks, listen, job_key);
  const prov::QpCaps caps = qp_caps(s);
  // One shared CQ: a SEND and a RECV completion per connection during the check, plus slack.
  const uint64_t conns = uint64_t(nranks - 1) * eo.lanes;
  RankEngine r;
  r.factory = std::make_unique<qp::DefaultQpFactory>(caps, static_cast<int>(std::max<uint64_t>(256, 2 * conns + 64)));
  auto e = Engine::create(p, std::move(eo), r.factory->hook());
  if (!e) return Error(e.error()).with_peer("rank " + std::to_string(rank));
  r.engine = std::move(e).value();
  r.engine->on_steady_event([set = r.disconnected](const SteadyEvent& ev) {
    if (ev.type == prov::CmEventType::disconnected) set->insert({ev.peer, ev.lane});
  });
  return r;
}

RankReport make_report(uint32_t rank, const RankEngine& re, double wireup_s, const std::set<uint32_t>& dead) {
  const Engine& e = *re.engine;
  RankReport r;
  r.rank = rank;
  r.wireup_s = wireup_s;
  for (const ConnResult& c : e.results()) {
    if (c.withdrawn) continue;  // taken back by an RTU repair: never a connection
    if (r.device.empty()) r.device = e.link(c).device;
    ++r.lanes_by_rail[std::to_string(e.link(c).rail) + ":" + e.link(c).device];
    if (dead.count(c.peer)) {
      ++r.lost;
      r.errors_by_peer[c.peer][re.disconnected->count({c.peer, c.lane}) ? "disconnected" : "lost"]++;
    } else if (c.role == cm::Role::active) {
      ++r.active_to_live;
    }
  }
  r.planned = e.connected() + e.errors().size();
  const Stats& s = e.stats();
  r.connects_started = s[Counter::connects_started];
  r.retries = s[Counter::retries];
  r.failed = s[Counter::failed];
  r.superseded = s[Counter::superseded];
  r.strangers = s[Counter::strangers];
  r.events = s[Counter::events];
  read_rail_stats(s.to_json(), r);
  r.rejects_received = s.rejects_received_by_reason();
  r.rejects_sent = s.rejects_sent_by_name();
  r.failures = s.failures_by_name();
  r.ece_outcomes = s.ece_outcomes_by_name();
  for (size_t p = 0; p < r.samples.size(); ++p) r.samples[p] = s.samples(static_cast<Phase>(p));
  for (const PeerError& pe : e.errors()) r.errors_by_peer[pe.peer][failure_kind(pe.failure)]++;
  return r;
}

EngineDataPath::EngineDataPath(RankEngine& re, const std::set<uint32_t>& skip) : factory_(*re.factory) {
  const std::vector<ConnResult>& rs = re.engine->results();
  for (uint32_t i = 0; i < rs.size(); ++i) {
    const ConnResult& c = rs[i];
    prov::Qp* qp = re.engine->qp(i);
    if (!c.withdrawn && qp != nullptr && !skip.count(c.peer)) {
      conns_.push_back(&c);
      qps_.push_back(qp);
      lanes_.push_back(DataLane{c.peer, c.lane, c.local_qpn});
    }
  }
}

Problem EngineDataPath::register_buffer(char* buf, size_t len) {
  if (conns_.empty()) return {};
  prov::Device& dev = qps_[0]->device();
  prov::Pd* pd = factory_.pd(dev);
  cq_ = factory_.cq(dev);
  if (pd == nullptr || cq_ == nullptr) return "the QP factory has no PD/CQ on " + dev.info().name;
  auto mr = pd->reg_mr(buf, len, prov::access::local_write);
  if (!mr) return mr.error().message();
  mr_ = std::move(mr).value();
  return {};
}

Problem EngineDataPath::post_recv(size_t i, uint64_t wr_id, char* addr, uint32_t len) {
  prov::Sge sge{reinterpret_cast<uint64_t>(addr), len, mr_->lkey()};
  Status s = qps_[i]->post_recv(wr_id, sge);
  return s ? Problem{} : Error(s.error()).with_peer("rank " + std::to_string(conns_[i]->peer)).message();
}

Problem EngineDataPath::post_send(size_t i, uint64_t wr_id, const char* addr, uint32_t len) {
  prov::Sge sge{reinterpret_cast<uint64_t>(addr), len, mr_->lkey()};
  Status s = qps_[i]->post_send(wr_id, sge, true);
  return s ? Problem{} : Error(s.error()).with_peer("rank " + std::to_string(conns_[i]->peer)).message();
}

int EngineDataPath::poll(Completion* wc, int n, Problem& error) {
  prov::WorkCompletion got[64];
  auto r = cq_->poll(std::span<prov::WorkCompletion>(got, size_t(std::min(n, 64))));
  if (!r) return error = r.error().message(), -1;
  for (int k = 0; k < *r; ++k) wc[k] = Completion{got[k].wr_id, got[k].status, got[k].byte_len, got[k].qp_num};
  return *r;
}

}  // namespace wireup::a2a
