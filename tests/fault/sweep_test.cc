// The fault sweep (sweep.h) over each scenario: every call kind the scenario makes, the n-th
// call failed for n = 1 .. its count (or an even spread of WIREUP_FAULT_SWEEP_MAX_N of them),
// each run judged. The table printed at the end is what notes/fault-sweep.md records.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/fault/sweep.h"

namespace wireup::fsweep {
namespace {

using Scenario = Outcome (*)(SweepFabric&, fault::Plan&);

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : dflt;
}

// The n of one kind to run: all of 1..calls, or `cap` of them spread evenly, first and last
// always in (cap 1: the first).
std::vector<uint64_t> picks(uint64_t calls, uint64_t cap) {
  std::vector<uint64_t> out;
  if (cap == 0 || calls <= cap) {
    for (uint64_t n = 1; n <= calls; ++n) out.push_back(n);
    return out;
  }
  if (cap == 1) return {1};
  for (uint64_t i = 0; i < cap; ++i) {
    uint64_t n = 1 + i * (calls - 1) / (cap - 1);
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

void sweep(const char* name, uint32_t nodes, Scenario run) {
  auto counting = std::make_shared<fault::Plan>();
  {
    auto f = make_sweep_fabric(counting, nodes);
    if (!f) {
      if (std::getenv("WIREUP_IN_VM") != nullptr) FAIL() << f.error().message();
      GTEST_SKIP() << "SKIPPED LOUDLY: " << f.error().message();
    }
    Outcome base = run(**f, *counting);
    ASSERT_TRUE(base.connected_all) << name << " without a fault: " << base.failure << " " << base.problem;
    ASSERT_TRUE(base.problem.empty()) << base.problem;
  }
  const uint64_t cap = env_u64("WIREUP_FAULT_SWEEP_MAX_N", 0);
  std::printf("%-8s %-15s %6s %6s %6s %9s %9s %9s\n", "scenario", "kind", "calls", "sites", "runs", "absorbed",
              "reported", "problems");
  uint64_t kinds = 0, sites = 0, runs = 0, injected = 0, problems = 0;
  for (const fault::KindInfo& ki : fault::kinds()) {
    const uint64_t calls = counting->calls(ki.kind);
    if (calls == 0) continue;
    ++kinds;
    sites += counting->sites(ki.kind);
    uint64_t k_runs = 0, absorbed = 0, reported = 0, k_problems = 0;
    for (uint64_t n : picks(calls, cap)) {
      auto plan = std::make_shared<fault::Plan>(fault::Target{ki.kind, n});
      auto f = make_sweep_fabric(plan, nodes);
      ASSERT_TRUE(f) << f.error().message();
      Outcome o = run(**f, *plan);
      ++k_runs;
      if (plan->injected()) ++injected;
      if (o.connected_all) ++absorbed;
      else ++reported;
      if (!o.problem.empty()) {
        ++k_problems;
        ADD_FAILURE() << name << " with " << plan->describe() << ": " << o.problem;
      }
    }
    runs += k_runs;
    problems += k_problems;
    std::printf("%-8s %-15s %6llu %6zu %6llu %9llu %9llu %9llu\n", name, std::string(ki.name).c_str(),
                static_cast<unsigned long long>(calls), counting->sites(ki.kind),
                static_cast<unsigned long long>(k_runs), static_cast<unsigned long long>(absorbed),
                static_cast<unsigned long long>(reported), static_cast<unsigned long long>(k_problems));
    std::fflush(stdout);  // a row as each kind ends: a long sweep shows where it is
  }
  std::printf("%s: %llu call kinds, %llu call sites, %llu runs, %llu faults injected, %llu problems\n", name,
              static_cast<unsigned long long>(kinds), static_cast<unsigned long long>(sites),
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(injected),
              static_cast<unsigned long long>(problems));
  std::fflush(stdout);
}

TEST(FaultSweep, ConformancePair) { sweep("pair", 2, run_pair); }
TEST(FaultSweep, Engine) { sweep("engine", 3, run_engine); }

// A read that finds nothing is a would-block, never a fault, and is not counted.
TEST(FaultProvider, WouldBlockIsNeverAFault) {
  auto plan = std::make_shared<fault::Plan>(fault::Target{fault::Kind::get_event, 1});
  auto f = make_sweep_fabric(plan, 2);
  if (!f) GTEST_SKIP() << "SKIPPED LOUDLY: " << f.error().message();
  prov::Provider& p = (*f)->conformance().provider(0);
  auto ch = p.create_channel();
  ASSERT_TRUE(ch) << ch.error().message();
  for (int i = 0; i < 3; ++i) {
    auto ev = (*ch)->get_event();
    ASSERT_FALSE(ev);
    EXPECT_EQ(ev.code(), ErrorCode::would_block);
  }
  EXPECT_EQ(plan->calls(fault::Kind::get_event), 0u);
  EXPECT_FALSE(plan->injected());
}

// A failed read leaves its event first in line: the next read returns it.
TEST(FaultProvider, FailedReadKeepsTheEvent) {
  auto plan = std::make_shared<fault::Plan>(fault::Target{fault::Kind::get_event, 1});
  auto f = make_sweep_fabric(plan, 2);
  if (!f) GTEST_SKIP() << "SKIPPED LOUDLY: " << f.error().message();
  conf::TestFabric& cf = (*f)->conformance();
  auto l = conf::Listener::create(cf);
  ASSERT_TRUE(l) << l.error().message();
  auto a = conf::Active::resolve(cf, l->addr);
  // Active::resolve reads ADDR_RESOLVED: the first read fails, naming the call and errno.
  ASSERT_FALSE(a);
  EXPECT_TRUE(names_injected(*plan, a.error().message())) << a.error().message();
  EXPECT_EQ(plan->calls(fault::Kind::get_event), 1u);
}

}  // namespace
}  // namespace wireup::fsweep

namespace wireup::fsweep {
namespace {

// The passive side's last calls come after ESTABLISHED (its QP to RTS, the migration): the
// active side already holds the lane. A failure there must reach the active side (the RTU-lost
// notice): the lane it has handed over is reported lost on its steady channel, the passive
// side's PeerError names the call and errno, nothing is half-open. Before the fix the passive
// side waited for a retry that never came, until the deadline, and the active side kept a lane
// with nothing behind it.
TEST(FaultSweep, PassiveFailureAfterEstablishedReachesThePeer) {
  auto counting = std::make_shared<fault::Plan>();
  {
    auto f = make_sweep_fabric(counting, 3);
    if (!f) GTEST_SKIP() << "SKIPPED LOUDLY: " << f.error().message();
    ASSERT_TRUE(run_engine(**f, *counting).connected_all);
  }
  for (fault::Kind k : {fault::Kind::modify_qp, fault::Kind::init_qp_attr, fault::Kind::migrate}) {
    const uint64_t calls = counting->calls(k);
    ASSERT_GE(calls, 6u);
    for (uint64_t n = calls - 5; n <= calls; ++n) {  // the passive RTS / migration of each pair
      auto plan = std::make_shared<fault::Plan>(fault::Target{k, n});
      auto f = make_sweep_fabric(plan, 3);
      ASSERT_TRUE(f);
      Outcome o = run_engine(**f, *plan);
      EXPECT_TRUE(plan->injected());
      EXPECT_TRUE(o.problem.empty()) << plan->describe() << ": " << o.problem;
      EXPECT_FALSE(o.connected_all) << plan->describe();
      EXPECT_TRUE(names_injected(*plan, o.failure)) << plan->describe() << ": " << o.failure;
      EXPECT_NE(o.failure.find("rtu_lost"), std::string::npos) << o.failure;
    }
  }
}

}  // namespace
}  // namespace wireup::fsweep
