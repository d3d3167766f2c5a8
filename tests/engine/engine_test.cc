// The engine end to end, on any fabric: all-to-all, strangers, bad tables.
#include "tests/engine/engine_harness.h"
#include "wireup/address.h"
#include "wireup/private_data.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

TEST(Engine, AllToAllEightRanksTwoLanes) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 8);
  // No linger: the setup channel closes the moment wireup ends (RtuGap tests the linger).
  auto job = make_job(f, 8, 2, [](EngineOptions& o) { o.rtu_linger = Nanos{0}; });
  ASSERT_TRUE(job) << job.error().message();
  auto t0 = std::chrono::steady_clock::now();
  Status s = run_to_completion(f, *job, 120s);
  ASSERT_TRUE(s) << s.message();
  auto dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[engine] %s: 8 ranks x 2 lanes wired in %.3f s; rank 0 stats %s\n", f.name().c_str(), dt,
              job->ranks[0].engine->stats().to_json().c_str());
  size_t total = 0;
  for (auto& r : job->ranks) {
    EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors()[0].describe();
    EXPECT_EQ(r.engine->results().size(), 7u * 2);
    EXPECT_FALSE(r.engine->setup_channel_open()) << "setup channel must close when wireup ends";
    total += r.engine->results().size();
  }
  EXPECT_EQ(total, 8u * 7 * 2);
  expect_consistent(*job, 2);
  if (f.has_data_path()) expect_messages_flow(*job);
  // Roles are balanced: every rank initiated 3 or 4 of its 7 pairs (x2 lanes).
  for (auto& r : job->ranks) {
    uint64_t act = r.engine->stats()[Counter::established_active];
    EXPECT_GE(act, 6u);
    EXPECT_LE(act, 8u);
  }
  // Sequential closes cannot wait for DREPs (the peers are not progressing): drain 0.
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

TEST(Engine, StrangerWithWrongJobKeyIsRejected) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 3);
  // Rank 2 believes in another job key: ranks 0 and 1 must refuse it before any QP exists,
  // and still connect to each other.
  auto job = make_job(f, 3, 1, [](EngineOptions& o) {
    if (o.rank == 2) o.job_key = 0xbad;
    o.max_attempts = 2;
    o.wireup_timeout = 5s;
  });
  ASSERT_TRUE(job) << job.error().message();
  Status s = run_to_completion(f, *job, 60s);
  ASSERT_TRUE(s) << s.message();
  const Engine& e0 = *job->ranks[0].engine;
  const Engine& e1 = *job->ranks[1].engine;
  const Engine& e2 = *job->ranks[2].engine;
  ASSERT_EQ(e0.results().size(), 1u);
  EXPECT_EQ(e0.results()[0].peer, 1u);
  ASSERT_EQ(e1.results().size(), 1u);
  EXPECT_GE(e0.stats()[Counter::strangers] + e1.stats()[Counter::strangers], 1u);
  // The stranger reads why (its key was wrong), but cannot trust it: the refusal is not
  // authenticated (it does not hold our key, so nothing we send can prove itself to it),
  // so it is taken as transient, retried to the last attempt, and then reported with the
  // claimed reason in the message, never as a peer_reason.
  size_t told = 0;
  for (const PeerError& pe : e2.errors()) {
    if (pe.role != cm::Role::active) continue;  // the pairs it accepts just never came
    ++told;
    EXPECT_EQ(pe.peer_reason, RejectCode::none) << pe.describe();
    EXPECT_EQ(pe.attempts, 2u) << pe.describe();
    EXPECT_NE(pe.describe().find("its reason \"wrong_job_key\" not taken"), std::string::npos) << pe.describe();
  }
  EXPECT_GE(told, 1u);
}

TEST(Engine, BadPeerTableIsRefusedWithEveryProblemNamed) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 1);
  qp::DefaultQpFactory factory(prov::QpCaps{}, 64);
  EngineOptions o = engine_defaults();
  o.rank = 0;
  o.nranks = 4;
  o.job_key = 1;
  o.listen_addr = f.address(0);
  auto e = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_TRUE(e) << e.error().message();
  std::vector<Peer> table = {
      {1, {1, 4, 0x12}},                                       // truncated
      {9, encode_address(*prov::SockAddr::parse("10.0.0.9:1"))},  // rank out of range
      {2, encode_address(*prov::SockAddr::parse("10.0.0.2:5"))},
      {2, encode_address(*prov::SockAddr::parse("10.0.0.2:5"))},  // twice
  };
  Status s = (*e)->set_peers(table);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("entry 0 (rank 1)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("entry 1 (rank 9): rank >= nranks 4"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("entry 3 (rank 2): rank listed twice"), std::string::npos) << s.message();
}

TEST(Engine, BadOptionsAreNamed) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 1);
  qp::DefaultQpFactory factory(prov::QpCaps{}, 64);
  EngineOptions o = engine_defaults();
  o.rank = 5;
  o.nranks = 4;
  o.job_key = 1;
  o.listen_addr = f.address(0);
  auto e = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("rank 5 >= nranks 4"), std::string::npos);
  o.rank = 0;
  o.job_key = 0;
  e = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("job_key is 0"), std::string::npos);
  o.job_key = 1;
  o.nranks = 4097;  // 4,096 peers x 65,535 lanes: past a pair index's 27 bits
  o.lanes = 65535;
  e = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("4097 ranks x 65535 lanes: more than 134217728 pairs"), std::string::npos)
      << e.error().message();
  o.nranks = 4;
  o.lanes = engine_defaults().lanes;
  o.max_attempts = 65536;
  e = Engine::create(f.provider(0), o, factory.hook());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("max_attempts 65536 above 65535"), std::string::npos) << e.error().message();
  o.max_attempts = 65535;
  EXPECT_TRUE(Engine::create(f.provider(0), o, factory.hook())) << "the largest count a result holds is allowed";
}

}  // namespace
}  // namespace wireup::etest
