// The sweep's scenarios (sweep.h) and the rules each run is judged by.
#include <cstring>
#include <set>
#include <tuple>

#include "fault/kinds.h"
#include "tests/conformance/data_util.h"
#include "tests/fault/sweep.h"

namespace wireup::fsweep {
namespace {

using namespace std::chrono_literals;

// A WRITE then a READ of 64 bytes from the active side, each checked at the other end.
Status one_sided(conf::Pair& p) {
  conf::AppQp& a = p.active_qp;
  conf::AppQp& b = p.passive_qp;
  conf::fill(a, conf::kLocal, 64, 7);
  prov::SendWr w = conf::wr(prov::WrOpcode::rdma_write, 20, a, conf::kLocal, 64);
  conf::to_remote(w, b, conf::kRemote);
  WIREUP_TRY(a.qp->post(w));
  auto wc = a.wait_completion(prov::wc_opcode_rdma_write);
  if (!wc) return wc.error();
  if (std::memcmp(&a.buf[conf::kLocal], &b.buf[conf::kRemote], 64) != 0)
    return Error::make(ErrorCode::protocol_error, "rdma_write", "the peer's buffer differs after the WRITE");
  conf::fill(b, conf::kRemote + 64, 64, 99);
  prov::SendWr r = conf::wr(prov::WrOpcode::rdma_read, 21, a, conf::kLocal + 64, 64);
  conf::to_remote(r, b, conf::kRemote + 64);
  WIREUP_TRY(a.qp->post(r));
  auto rc = a.wait_completion(prov::wc_opcode_rdma_read);
  if (!rc) return rc.error();
  if (std::memcmp(&a.buf[conf::kLocal + 64], &b.buf[conf::kRemote + 64], 64) != 0)
    return Error::make(ErrorCode::protocol_error, "rdma_read", "the local buffer differs after the READ");
  return Status::ok();
}

// The rules that hold whatever the scenario did: a reported failure names the injected one;
// nothing fails when nothing was injected.
void judge(const fault::Plan& plan, Outcome& o) {
  if (!o.failure.empty() && !plan.injected())
    o.problem += "failed with nothing injected: " + o.failure + "; ";
  if (!o.failure.empty() && plan.injected() && !names_injected(plan, o.failure))
    o.problem += "the failure does not name the injected " + plan.describe() + ": " + o.failure + "; ";
}

}  // namespace

bool names_injected(const fault::Plan& plan, const std::string& text) {
  if (!plan.target()) return false;
  const fault::KindInfo& ki = fault::info(plan.target()->kind);
  if (ki.kind == fault::Kind::addr_event || ki.kind == fault::Kind::route_event) {
    // The event's own name (to_string(CmEventType)) and its status.
    const char* ev = ki.kind == fault::Kind::addr_event ? to_string(prov::CmEventType::addr_error)
                                                         : to_string(prov::CmEventType::route_error);
    const std::string status = std::to_string(-ki.err);
    return text.find(ev) != std::string::npos && text.find(status) != std::string::npos;
  }
  return text.find(ki.call) != std::string::npos && text.find(std::strerror(ki.err)) != std::string::npos;
}

Outcome run_pair(SweepFabric& f, fault::Plan& plan) {
  Outcome o;
  {
    conf::TestFabric& cf = f.conformance();
    auto l = conf::Listener::create(cf);
    if (!l) {
      o.failure = l.error().message();
    } else {
      auto p = conf::connect_pair(cf, *l);
      if (!p) {
        o.failure = p.error().message();
      } else if (Status s = one_sided(*p); !s) {
        o.failure = s.message();
      } else {
        o.connected_all = true;
      }
      plan.set_armed(false);  // the teardown is not under test here: every call of it is real
    }
  }
  plan.set_armed(false);
  judge(plan, o);
  if (std::string left = f.leftovers(); !left.empty()) o.problem += "left behind: " + left + "; ";
  return o;
}

namespace {

// (rank, peer, lane) of a lane the steady channel reported gone (DISCONNECTED, RTU lost).
using Lost = std::set<std::tuple<uint32_t, uint32_t, uint32_t>>;

// Every established (peer, lane) matched on the peer with crossed QPNs, or reported lost to
// its transport; "" or what is neither.
std::string half_open(const etest::Job& job, const Lost& lost) {
  std::string out;
  for (size_t r = 0; r < job.ranks.size(); ++r)
    for (const ConnResult& c : job.ranks[r].engine->results()) {
      if (c.withdrawn || lost.count({static_cast<uint32_t>(r), c.peer, c.lane}) != 0) continue;
      bool matched = false;
      for (const ConnResult& d : job.ranks[c.peer].engine->results())
        matched = matched || (!d.withdrawn && d.peer == r && d.lane == c.lane && d.local_qpn == c.remote_qpn &&
                              d.remote_qpn == c.local_qpn);
      if (!matched)
        out += "rank " + std::to_string(r) + " has " + std::to_string(c.peer) + "/" + std::to_string(c.lane) +
               " (qpn " + std::to_string(c.local_qpn) + ") that the peer does not; ";
    }
  return out;
}

bool any_withdrawn(const etest::Job& job) {
  for (const auto& r : job.ranks)
    for (const ConnResult& c : r.engine->results())
      if (c.withdrawn) return true;
  return false;
}

}  // namespace

Outcome run_engine(SweepFabric& f, fault::Plan& plan) {
  constexpr uint32_t kRanks = 3, kLanes = 2;
  Outcome o;
  {
    etest::EngineFabric& ef = f.engine();
    auto job = etest::make_job(ef, kRanks, kLanes);
    if (!job) {
      o.failure = job.error().message();
    } else {
      Lost lost;
      for (uint32_t r = 0; r < kRanks; ++r)
        job->ranks[r].engine->on_steady_event([&lost, r](const SteadyEvent& e) {
          if (e.scope == SteadyEvent::Scope::connection) lost.insert({r, e.peer, e.lane});
        });
      Status run = etest::run_to_completion(ef, *job, std::chrono::seconds(120));
      plan.set_armed(false);  // the checks below post their own SENDs: not under test
      if (!run) o.failure = run.message();
      size_t connected = 0;
      for (const auto& r : job->ranks) {
        connected += r.engine->connected();
        for (const PeerError& e : r.engine->errors()) o.failure += e.describe() + "; ";
      }
      o.connected_all = run && connected == kRanks * (kRanks - 1) * kLanes;
      if (run && !o.connected_all && o.failure.empty())
        o.problem += "a connection is missing and no peer error says why; ";
      const std::string h = half_open(*job, lost);
      if (!h.empty()) o.problem += "half-open: " + h;
      // Nothing already connected is lost: every connection left still carries a SEND each way.
      if (run && h.empty() && lost.empty() && !any_withdrawn(*job)) {
        const int before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
        etest::expect_messages_flow(*job);
        if (::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() != before)
          o.problem += "a SEND on a connection left failed (above); ";
      }
    }
  }
  plan.set_armed(false);
  judge(plan, o);
  if (std::string left = f.leftovers(); !left.empty()) o.problem += "left behind: " + left + "; ";
  return o;
}

}  // namespace wireup::fsweep
