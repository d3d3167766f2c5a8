// 10,000 strangers' requests during a real wireup of 32 ranks (sim): four extra nodes send,
// through hand-made active ids, requests with a wrong job key, a wrong version, an unknown
// source rank, or a replay of an attempt already connected. Each is rejected before the
// engine allocates anything, with a reason the flooder decodes; it is counted per reason and
// logged once per source; the fabric's QP/PD/CQ/MR counts never move because of it; and the
// real wireup completes. Rank 31 is progressed only after the flood, so every other rank's
// listener is still open (wiring up) while the flood runs.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "common/log.h"
#include "tests/engine/counted_qp.h"
#include "tests/engine/sim_engine_fabric.h"
#include "wireup/address.h"
#include "wireup/wire.h"
#include "wireup/stranger_log.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::CmEventType;

constexpr uint32_t kRanks = 32;
constexpr uint32_t kLate = kRanks - 1;    // progressed only once the flood is over
constexpr uint32_t kTargets = kRanks - 1;  // ranks 0..30 are flooded
constexpr uint32_t kPerFlooder = 2500;     // x 4 kinds = 10,000 requests
constexpr uint32_t kWindow = 64;           // requests in flight per flooder
constexpr uint64_t kKey = 0x5eed5eed12345678ULL;

enum class Kind { wrong_key, bad_version, unknown_rank, replay };
constexpr RejectCode kExpected[] = {RejectCode::wrong_job_key, RejectCode::bad_version, RejectCode::unknown_rank,
                                    RejectCode::stale_attempt};

// One stranger node: create id -> resolve addr -> resolve route -> connect with crafted
// private data (and a QPN that belongs to no QP) -> REJECTED -> ack -> destroy, kWindow at once.
// One request in flight. Each carries a QPN of its own: the receiving CM refuses a REQ whose
// sender QPN one of its ids still holds (REJ 10, cm_match_req), before any engine sees it.
struct Request {
  std::unique_ptr<prov::CmId> id;
  std::vector<uint8_t> pd;
  uint32_t qpn = 0;
};

struct Flooder {
  uint32_t node = 0;
  Kind kind = Kind::wrong_key;
  std::unique_ptr<prov::EventChannel> ch;
  std::map<prov::CmId*, Request> inflight;
  uint32_t quota = kPerFlooder;  // requests this flooder sends
  int fixed_target = -1;         // >= 0: every request goes to this rank
  uint32_t sent = 0, decoded = 0;
  std::vector<std::string> surprises;  // anything but REJECTED(28) with the expected code
  std::set<uint32_t> targets;

  bool finished() const { return sent == quota && inflight.empty(); }
};

class Flood {
 public:
  Flood(SimEngineFabric& f, Job& job) : f_(f), job_(job) {}

  void add(uint32_t node, Kind kind, uint32_t quota = kPerFlooder, int fixed_target = -1) {
    Flooder fl;
    fl.node = node;
    fl.kind = kind;
    fl.quota = quota;
    fl.fixed_target = fixed_target;
    auto ch = f_.provider(node).create_channel();
    ASSERT_TRUE(ch) << ch.error().message();
    fl.ch = std::move(ch).value();
    fl_.push_back(std::move(fl));
  }
  bool finished() const {
    for (auto& fl : fl_)
      if (!fl.finished()) return false;
    return true;
  }
  std::vector<Flooder>& flooders() { return fl_; }

  // Starts what the window allows and handles every pending event; returns work done.
  int pump(Flooder& fl) {
    int work = 0;
    while (fl.inflight.size() < kWindow && fl.sent < fl.quota) {
      uint32_t target = 0;
      std::vector<uint8_t> pd;
      if (!craft(fl, target, pd)) break;  // a replay needs a connected pair: not yet
      auto id = f_.provider(fl.node).create_id(*fl.ch, prov::PortSpace::tcp, nullptr);
      if (!id) {
        fl.surprises.push_back(id.error().message());
        return work;
      }
      prov::SockAddr src = f_.address(fl.node);
      auto dst = decode_address(job_.ranks[target].engine->local_address());
      Status st = (*id)->resolve_addr(&src, *dst, 2000);
      if (!st) fl.surprises.push_back(st.message());
      prov::CmId* raw = id->get();
      fl.inflight.emplace(raw, Request{std::move(id).value(), std::move(pd), 0xabc00 + fl.sent});
      fl.targets.insert(target);
      ++fl.sent;
      ++work;
    }
    for (;;) {
      auto ev = fl.ch->get_event();
      if (!ev) break;
      ++work;
      auto it = fl.inflight.find(ev->id);
      if (it == fl.inflight.end()) {
        fl.surprises.push_back("event for an unknown id: " + ev->describe());
        continue;
      }
      prov::CmId& id = *it->second.id;
      bool over = true;
      if (ev->type == CmEventType::addr_resolved) {
        over = !id.resolve_route(2000);
      } else if (ev->type == CmEventType::route_resolved) {
        prov::ConnParam cp;
        cp.qp_num = it->second.qpn;  // nobody's QP: the request must die before it matters
        cp.private_data = it->second.pd;
        over = !id.connect(cp);
      } else if (ev->type == CmEventType::rejected && ev->status == prov::reject_reason::consumer) {
        auto h = decode(ev->private_data);
        if (h && h->kind == WireKind::reject && h->reason == kExpected[static_cast<int>(fl.kind)]) ++fl.decoded;
        else fl.surprises.push_back("undecodable or unexpected reject: " + ev->describe());
      } else {
        fl.surprises.push_back("unexpected " + ev->describe());
      }
      if (over) {
        ev->ack();  // before the id goes
        fl.inflight.erase(it);
      }
    }
    return work;
  }

 private:
  // The private data of the next request and its target rank.
  bool craft(Flooder& fl, uint32_t& target, std::vector<uint8_t>& out) {
    WireHeader h;
    uint64_t key = kKey;
    h.lane = 0;
    h.attempt = 1;
    target = fl.fixed_target >= 0 ? static_cast<uint32_t>(fl.fixed_target) : (fl.sent + 7 * fl.node) % kTargets;
    h.dst_rank = target;
    h.src_rank = (target + 1) % kTargets;
    switch (fl.kind) {
      case Kind::wrong_key: key = 0xbadbadbadULL; break;
      case Kind::bad_version: break;  // byte 4 patched below
      case Kind::unknown_rank: h.src_rank = 1000 + fl.sent % 100; break;
      case Kind::replay: {
        // Exactly what a real peer sent for a pair that is now connected: same ranks, lane
        // and attempt. Taken from the passive side's results, rotating over the targets.
        const ConnResult* pick = nullptr;
        for (uint32_t k = 0; k < kTargets && !pick; ++k) {
          uint32_t t = (fl.sent + k) % kTargets;
          for (const ConnResult& r : job_.ranks[t].engine->results())
            if (r.role == cm::Role::passive && r.peer != kLate) {
              pick = &r;
              target = t;
              break;
            }
        }
        if (!pick) return false;
        h.dst_rank = target;
        h.src_rank = pick->peer;
        h.lane = static_cast<uint16_t>(pick->lane);
        h.attempt = pick->attempts;
        break;
      }
    }
    h.nonce = fl.sent;
    auto b = Wire::create(key, h.src_rank, 1)->seal(h);
    if (fl.kind == Kind::bad_version) b[4] = kWireVersion + 1;
    out.assign(b.begin(), b.end());
    return true;
  }

  SimEngineFabric& f_;
  Job& job_;
  std::vector<Flooder> fl_;
};

TEST(EngineStrangers, FloodOfTenThousandLeavesResourcesAndWireupAlone) {
  prov::sim::SimConfig cfg;
  cfg.seed = 8;
  SimEngineFabric f(kRanks + 4, cfg);
  auto& fab = f.fabric();
  int64_t live_qps = 0;
  std::vector<uint64_t> made(kRanks, 0);
  Job job;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < kRanks; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = kRanks;
    o.job_key = kKey;
    o.listen_addr = f.address(i);
    Rank rk;
    rk.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    qp::DefaultQpFactory* dq = rk.factory.get();
    auto hook = [dq, &live_qps, &made, i](const qp::QpRequest& r) -> Result<std::unique_ptr<prov::Qp>> {
      auto q = dq->create(r);
      if (!q) return q.error();
      ++made[i];
      return std::unique_ptr<prov::Qp>(new CountedQp(std::move(q).value(), live_qps));
    };
    auto e = Engine::create(f.provider(i), o, hook);
    ASSERT_TRUE(e) << e.error().message();
    rk.engine = std::move(e).value();
    table.push_back(Peer{i, rk.engine->local_address()});
    job.ranks.push_back(std::move(rk));
  }
  for (auto& rk : job.ranks) {
    ASSERT_TRUE(rk.engine->set_peers(table));
    ASSERT_TRUE(rk.engine->start());
  }
  Flood flood(f, job);
  for (uint32_t k = 0; k < 4; ++k) flood.add(kRanks + k, static_cast<Kind>(k));

  const log::Level saved = log::level();
  log::set_level(log::Level::warn);  // the once-per-source line is a warning
  testing::internal::CaptureStderr();
  // Progress every engine (but the late one, until the flood is over) and every flooder;
  // when nobody has work, advance the fabric to its next event or the next engine timer.
  uint64_t samples = 0;
  Nanos flood_end = Nanos::max();
  for (uint64_t iter = 0;; ++iter) {
    const bool flood_over = flood.finished();
    if (flood_over && flood_end == Nanos::max()) flood_end = fab.now();
    int work = 0;
    bool all_done = true;
    for (uint32_t r = 0; r < kRanks; ++r) {
      if (r == kLate && !flood_over) {
        all_done = false;
        continue;
      }
      auto w = job.ranks[r].engine->progress();
      ASSERT_TRUE(w) << w.error().message();
      work += *w;
      all_done = all_done && job.ranks[r].engine->done();
    }
    for (auto& fl : flood.flooders()) work += flood.pump(fl);
    // The fabric's QPs are exactly the engines' live QPs; PDs and CQs are the factories'
    // (one each per rank); no MR exists. Checked at every step of the run.
    const auto& s = fab.stats();
    ASSERT_EQ(s.qps_alive, static_cast<uint64_t>(live_qps)) << "at " << fab.now().count() << " ns";
    ASSERT_LE(s.pds_alive, kRanks);
    ASSERT_LE(s.cqs_alive, kRanks);
    ASSERT_EQ(s.mrs_alive, 0u);
    ++samples;
    if (all_done && flood_over) break;
    ASSERT_LT(fab.now(), 600s) << "wireup or flood stuck";
    if (work > 0) continue;
    Nanos next = fab.next_time();
    for (uint32_t r = 0; r < kRanks; ++r)
      if (r != kLate || flood_over) next = std::min(next, job.ranks[r].engine->next_wakeup());
    ASSERT_NE(next, Nanos::max()) << "nothing scheduled";
    if (next <= fab.now()) fab.step();
    else fab.run_until(next);
  }
  const std::string log_text = testing::internal::GetCapturedStderr();
  log::set_level(saved);

  // Every request was refused with the code its flooder expected, decodably.
  for (auto& fl : flood.flooders()) {
    EXPECT_EQ(fl.sent, kPerFlooder);
    EXPECT_EQ(fl.decoded, kPerFlooder) << "flooder " << fl.node << " saw " << fl.surprises.size()
                                       << " surprises, first: " << (fl.surprises.empty() ? "" : fl.surprises[0]);
  }
  // Counted per reason; strangers (identity problems) apart from the replays.
  std::map<std::string, uint64_t> sent;
  uint64_t strangers = 0;
  for (auto& rk : job.ranks) {
    strangers += rk.engine->stats()[Counter::strangers];
    for (auto& [why, n] : rk.engine->stats().rejects_sent_by_name()) sent[why] += n;
  }
  EXPECT_EQ(sent["wrong_job_key"], kPerFlooder);
  EXPECT_EQ(sent["bad_version"], kPerFlooder);
  EXPECT_EQ(sent["unknown_rank"], kPerFlooder);
  EXPECT_EQ(sent["stale_attempt"], kPerFlooder);
  EXPECT_EQ(strangers, 3u * kPerFlooder);
  // The real wireup: complete, consistent, and every QP the factories made is a connection.
  for (uint32_t r = 0; r < kRanks; ++r) {
    const Engine& e = *job.ranks[r].engine;
    EXPECT_EQ(e.results().size(), kRanks - 1) << "rank " << r;
    EXPECT_TRUE(e.errors().empty()) << "rank " << r << ": " << e.errors()[0].describe();
    EXPECT_EQ(made[r], e.results().size()) << "rank " << r << " made a QP that is not a connection";
  }
  expect_consistent(job, 1);
  // One log line per (rank, source address): the flood's sources are 4 nodes.
  std::map<std::string, int> lines;
  std::istringstream in(log_text);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("rejected request from ");
    if (at == std::string::npos) continue;
    auto rank_at = line.rfind("rank ", at);
    std::string from = line.substr(at + 22);
    from = from.substr(0, from.find_first_of(": "));  // the address without its port
    lines[line.substr(rank_at, at - rank_at) + from]++;
  }
  size_t expected_lines = 0;
  for (auto& fl : flood.flooders()) expected_lines += fl.targets.size();
  EXPECT_EQ(lines.size(), expected_lines);
  for (auto& [who, n] : lines) EXPECT_EQ(n, 1) << who << " logged " << n << " times";
  std::printf("[engine] sim stranger flood: %u requests (4 kinds) from 4 nodes, over at %.3f s virtual; "
              "wireup of %u ranks done at %.3f s; %llu resource samples; %zu log lines\n",
              4 * kPerFlooder, flood_end.count() / 1e9, kRanks, fab.now().count() / 1e9,
              (unsigned long long)samples, lines.size());

  for (auto& rk : job.ranks) ASSERT_TRUE(rk.engine->close(0s));
  for (auto& rk : job.ranks) {
    rk.engine.reset();
    rk.factory.reset();
  }
  flood.flooders().clear();
  const auto& s = fab.stats();
  EXPECT_EQ(s.ids_alive, 0u);
  EXPECT_EQ(s.qps_alive, 0u);
  EXPECT_EQ(s.pds_alive, 0u);
  EXPECT_EQ(s.cqs_alive, 0u);
  EXPECT_EQ(s.events_unacked, 0u);
  EXPECT_EQ(s.destroyed_with_unacked, 0u);
}

// A flood from ever-new source addresses (600 hosts, one request each) during a wireup: the
// log keeps one line per host for the first 256 only, the rest are counted, not remembered.
TEST(EngineStrangers, EverNewSourcesGrowNeitherMemoryNorTheLog) {
  constexpr uint32_t kHosts = 600;
  prov::sim::SimConfig cfg;
  cfg.seed = 9;
  SimEngineFabric f(2 + kHosts, cfg);
  auto& fab = f.fabric();
  // Rank 0 initiates to rank 1, which is not progressed until the flood is over: rank 0 is
  // wiring up (its listener open) all along.
  Job job;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < 2; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = 2;
    o.job_key = kKey;
    o.listen_addr = f.address(i);
    o.rtu_linger = Nanos{0};
    Rank rk;
    rk.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    auto e = Engine::create(f.provider(i), o, rk.factory->hook());
    ASSERT_TRUE(e) << e.error().message();
    rk.engine = std::move(e).value();
    table.push_back(Peer{i, rk.engine->local_address()});
    job.ranks.push_back(std::move(rk));
  }
  for (auto& rk : job.ranks) {
    ASSERT_TRUE(rk.engine->set_peers(table));
    ASSERT_TRUE(rk.engine->start());
  }
  Flood flood(f, job);
  for (uint32_t k = 0; k < kHosts; ++k) flood.add(2 + k, Kind::wrong_key, 1, 0);
  const log::Level saved = log::level();
  log::set_level(log::Level::warn);
  testing::internal::CaptureStderr();
  for (;;) {
    const bool over = flood.finished();
    int work = 0;
    for (uint32_t r = 0; r < 2; ++r) {
      if (r == 1 && !over) continue;
      auto w = job.ranks[r].engine->progress();
      ASSERT_TRUE(w) << w.error().message();
      work += *w;
    }
    for (auto& fl : flood.flooders()) work += flood.pump(fl);
    if (over && job.ranks[0].engine->done() && job.ranks[1].engine->done()) break;
    ASSERT_LT(fab.now(), 600s) << "stuck";
    if (work > 0) continue;
    Nanos next = fab.next_time();
    for (uint32_t r = 0; r < 2; ++r)
      if (r == 0 || over) next = std::min(next, job.ranks[r].engine->next_wakeup());
    ASSERT_NE(next, Nanos::max());
    if (next <= fab.now()) fab.step();
    else fab.run_until(next);
  }
  const std::string log_text = testing::internal::GetCapturedStderr();
  log::set_level(saved);
  size_t lines = 0;
  std::istringstream in(log_text);
  for (std::string line; std::getline(in, line);) lines += line.find("rejected request from ") != std::string::npos;
  const Stats& st = job.ranks[0].engine->stats();
  for (auto& fl : flood.flooders()) EXPECT_EQ(fl.decoded, 1u) << "host " << fl.node << " was not told why";
  EXPECT_EQ(st[Counter::strangers], kHosts);
  EXPECT_EQ(lines, StrangerLog::kDefaultCapacity) << "one line per host, for the first 256 hosts only";
  EXPECT_EQ(st[Counter::strangers_unlogged], kHosts - StrangerLog::kDefaultCapacity);
  EXPECT_EQ(job.ranks[0].engine->connected(), 1u) << "the real wireup completed";
  std::printf("[engine] sim stranger flood from %u hosts: %zu log lines, %llu counted unlogged\n", kHosts, lines,
              (unsigned long long)st[Counter::strangers_unlogged]);
  for (auto& rk : job.ranks) ASSERT_TRUE(rk.engine->close(0s));
}

}  // namespace
}  // namespace wireup::etest
