// The ECE matrix through the engine on the simulated fabric: the three device profiles (mlx5
// with ECE, mlx5 without it, rxe) on either side under every mode, the firmware taking fewer
// options than asked, same and different vendors, required bits missing on either side.
// (The rdma provider's side of it — EOPNOTSUPP on rxe, values carried by the CM, reject_ece —
// is in tests/conformance and the engine's VM tests.)
#include "tests/engine/sim_engine_fabric.h"
#include "testsupport/sim_drive.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::sim::SimDeviceSpec;

struct Side {
  SimDeviceSpec dev = SimDeviceSpec::mlx5();
  ece::Policy policy{ece::Mode::auto_, 0, 0, 0};
};

struct Outcome {
  const ConnResult* active = nullptr;   // rank 0's result (rank 0 initiates in a 2-rank job)
  const ConnResult* passive = nullptr;  // rank 1's
  const ece::Report* active_ece = nullptr;   // their ECE (Engine::link)
  const ece::Report* passive_ece = nullptr;
  const PeerError* active_error = nullptr;
  const PeerError* passive_error = nullptr;
  Nanos end{0};  // virtual time when both engines were done
};

class EceRig : public ::testing::Test {
 protected:
  Outcome run(const Side& a, const Side& p) {
    TearDown();  // a second run in one test: the engines go before the fabric they use
    fab_ = std::make_unique<prov::sim::SimFabric>(prov::sim::SimConfig{});
    fab_->add_node(prov::sim::SimNodeSpec{{a.dev}});
    fab_->add_node(prov::sim::SimNodeSpec{{p.dev}});
    std::vector<Peer> table;
    for (uint32_t i = 0; i < 2; ++i) {
      EngineOptions o = engine_defaults();
      o.rank = i;
      o.nranks = 2;
      o.job_key = 9;
      o.listen_addr = fab_->address(i);
      o.ece = i == 0 ? a.policy : p.policy;
      o.wireup_timeout = 30s;
      o.max_attempts = 2;
      factories_[i] = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
      auto e = Engine::create(fab_->provider(i), o, factories_[i]->hook());
      EXPECT_TRUE(e) << e.error().message();
      engines_[i] = std::move(e).value();
      table.push_back(Peer{i, engines_[i]->local_address()});
    }
    for (auto& e : engines_) {
      EXPECT_TRUE(e->set_peers(table));
      EXPECT_TRUE(e->start());
    }
    const Nanos t0 = fab_->now();
    auto r = sim_drive(*fab_, {engines_[0].get(), engines_[1].get()}, 120s);
    EXPECT_TRUE(r) << r.error().message();
    Outcome out;
    if (r) out.end = r->virtual_end - t0;
    if (!engines_[1]->errors().empty()) out.passive_error = &engines_[1]->errors()[0];
    if (!engines_[0]->results().empty()) {
      out.active = &engines_[0]->results()[0];
      out.active_ece = &engines_[0]->link(*out.active).ece;
    }
    if (!engines_[1]->results().empty()) {
      out.passive = &engines_[1]->results()[0];
      out.passive_ece = &engines_[1]->link(*out.passive).ece;
    }
    if (!engines_[0]->errors().empty()) out.active_error = &engines_[0]->errors()[0];
    return out;
  }
  void TearDown() override {
    for (auto& e : engines_) e.reset();
    for (auto& f : factories_) f.reset();
  }
  std::unique_ptr<prov::sim::SimFabric> fab_;
  std::unique_ptr<qp::DefaultQpFactory> factories_[2];
  std::unique_ptr<Engine> engines_[2];
};

class EceMatrix : public EceRig {};

SimDeviceSpec vendor(uint32_t v, uint32_t options) {
  SimDeviceSpec d = SimDeviceSpec::mlx5();
  d.vendor_id = v;
  d.ece_options = options;
  return d;
}

TEST_F(EceMatrix, SameVendorNegotiatesTheIntersection) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  p.dev = vendor(0x15b3, 0x5);  // the passive device masks bit 1
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::negotiated);
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::negotiated);
  EXPECT_EQ(o.active_ece->accepted, 0x5u);
  EXPECT_EQ(o.passive_ece->accepted, 0x5u);
  EXPECT_EQ(o.passive_ece->remote, (prov::Ece{0x15b3, 0x7})) << "the passive side saw the offer";
  EXPECT_EQ(o.active_ece->remote, (prov::Ece{0x15b3, 0x5})) << "the active side saw the answer";
}

// mlx5's ibv_set_ece writes nothing back: the passive firmware decides at INIT->RTR and takes
// fewer options than asked for (bit 0 of 0x7). What it took (ibv_query_ece after RTR) is what
// the REP carries and what the active side sets on its QP.
TEST_F(EceMatrix, TheRepCarriesWhatTheFirmwareTook) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  p.dev = vendor(0x15b3, 0x7);
  p.dev.ece_fw_takes = 0x1;
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.passive_ece->remote, (prov::Ece{0x15b3, 0x7})) << "the offer asked for 0x7";
  EXPECT_EQ(o.passive_ece->accepted, 0x1u) << "the firmware took 0x1";
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::negotiated);
  EXPECT_EQ(o.active_ece->remote, (prov::Ece{0x15b3, 0x1})) << "the REP carried the firmware's answer";
  EXPECT_EQ(o.active_ece->accepted, 0x1u);
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::negotiated);
}

// A required bit the passive firmware did not take: refused with reason 35 after RTR.
TEST_F(EceMatrix, ARequiredBitTheFirmwareDroppedIsRefused) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  p.dev = vendor(0x15b3, 0x7);
  p.dev.ece_fw_takes = 0x1;
  p.policy.required = 0x2;
  auto o = run(a, p);
  EXPECT_FALSE(o.active);
  ASSERT_TRUE(o.active_error);
  EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::rejected) << o.active_error->describe();
  EXPECT_EQ(o.active_error->failure.status, prov::reject_reason::vendor_option);
  ASSERT_TRUE(o.passive_error);
  EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::ece_rejected) << o.passive_error->describe();
  EXPECT_NE(o.passive_error->describe().find("took options 0x1 of 0x7"), std::string::npos)
      << o.passive_error->describe();
}

// The active side sets the REP's options before its own RTR; its firmware may take fewer.
// What it took is in force on its QP (and `required` is checked against that).
TEST_F(EceMatrix, TheActiveFirmwareDecidesAtItsRtr) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  a.dev.ece_fw_takes = 0x3;
  p.dev = vendor(0x15b3, 0x7);
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.active_ece->remote, (prov::Ece{0x15b3, 0x7}));
  EXPECT_EQ(o.active_ece->accepted, 0x3u) << "what the active firmware took";
  a.policy.required = 0x4;
  auto r = run(a, p);
  EXPECT_FALSE(r.active);
  ASSERT_TRUE(r.active_error);
  EXPECT_EQ(r.active_error->failure.kind, cm::FailKind::ece_rejected) << r.active_error->describe();
  EXPECT_NE(r.active_error->describe().find("took options 0x3 of 0x7"), std::string::npos)
      << r.active_error->describe();
  ASSERT_TRUE(r.passive_error);
  EXPECT_EQ(r.passive_error->failure.status, prov::reject_reason::vendor_option) << r.passive_error->describe();
}

// An mlx5 without the ECE capability answers query {0x15b3, 0} and set EOPNOTSUPP: `auto`
// connects without ECE; the REP echoes the offer's vendor with options 0.
TEST_F(EceMatrix, PassiveMlx5WithoutEceGoesOnInAuto) {
  Side a, p;
  p.dev = SimDeviceSpec::mlx5_no_ece();
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive) << (o.passive_error ? o.passive_error->describe() : "");
  EXPECT_EQ(o.passive_ece->local, (prov::Ece{0x15b3, 0})) << "query answered";
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::unsupported);
  EXPECT_EQ(o.passive_ece->accepted, 0u);
  EXPECT_EQ(o.active_ece->remote, (prov::Ece{0x15b3, 0}));
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::unsupported);
}

TEST_F(EceMatrix, WantedMaskNarrowsTheOffer) {
  Side a, p;
  a.policy.mode = ece::Mode::on;
  a.policy.wanted = 0x1;
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.passive_ece->remote.options, 0x1u);
  EXPECT_EQ(o.active_ece->accepted, 0x1u);
}

TEST_F(EceMatrix, DifferentVendorsConnectWithoutOptions) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  p.dev = vendor(0x8086, 0x7);
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::vendor_mismatch);
  EXPECT_EQ(o.passive_ece->accepted, 0u);
  // The REP echoes the REQ's vendor id with options 0: nothing is in force.
  EXPECT_EQ(o.active_ece->remote, (prov::Ece{0x15b3, 0}));
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::unsupported);
}

TEST_F(EceMatrix, PassiveWithoutEceGoesOnInAuto) {
  Side a, p;
  p.dev = SimDeviceSpec::rxe();
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::unsupported);
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::unsupported);
}

TEST_F(EceMatrix, ActiveWithoutEceSendsNone) {
  Side a, p;
  a.dev = SimDeviceSpec::rxe();
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.passive_ece->remote.vendor_id, 0u);
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::unsupported);
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::unsupported);
}

TEST_F(EceMatrix, OffIsDisabled) {
  Side a, p;
  a.policy.mode = ece::Mode::off;
  p.policy.mode = ece::Mode::off;
  auto o = run(a, p);
  ASSERT_TRUE(o.active && o.passive);
  EXPECT_EQ(o.active_ece->outcome, ece::Outcome::disabled);
  EXPECT_EQ(o.passive_ece->outcome, ece::Outcome::disabled);
}

TEST_F(EceMatrix, PassiveRequiredBitMissingIsRejected35AtTheActiveSide) {
  Side a, p;
  p.policy.required = 0x8;  // a bit no device has
  p.dev = vendor(0x15b3, 0xf);
  a.dev = vendor(0x15b3, 0x7);
  auto o = run(a, p);
  EXPECT_FALSE(o.active);
  EXPECT_FALSE(o.passive);
  ASSERT_TRUE(o.active_error);
  EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::rejected);
  EXPECT_EQ(o.active_error->failure.status, prov::reject_reason::vendor_option);
  EXPECT_EQ(o.active_error->attempts, 1u) << "an ECE refusal is not retried";
  // Final on both sides at once: the passive side does not wait out its wireup timeout (30 s).
  ASSERT_TRUE(o.passive_error);
  EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::ece_rejected) << o.passive_error->describe();
  EXPECT_LT(o.end, 1s) << "both sides settled at the refusal";
}

TEST_F(EceMatrix, ActiveRequiredBitDroppedByThePassiveSideIsRefused) {
  Side a, p;
  a.dev = vendor(0x15b3, 0x7);
  a.policy.required = 0x4;
  p.dev = vendor(0x15b3, 0x3);  // cannot accept bit 2
  auto o = run(a, p);
  EXPECT_FALSE(o.active);
  ASSERT_TRUE(o.active_error);
  EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::ece_rejected);
  EXPECT_NE(o.active_error->failure.describe().find("0x4"), std::string::npos) << o.active_error->describe();
  // Our reject_ece reached the passive side as REJ 35 to its REP: final there too, at once.
  ASSERT_TRUE(o.passive_error);
  EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::rejected) << o.passive_error->describe();
  EXPECT_EQ(o.passive_error->failure.status, prov::reject_reason::vendor_option);
  EXPECT_LT(o.end, 1s) << "both sides settled at the refusal";
}

TEST_F(EceMatrix, RequiredModeWithoutEceFailsLoudly) {
  Side a, p;
  a.policy.mode = ece::Mode::required;
  a.dev = SimDeviceSpec::rxe();
  auto o = run(a, p);
  EXPECT_FALSE(o.active);
  ASSERT_TRUE(o.active_error);
  EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::local_error);
  EXPECT_NE(o.active_error->failure.describe().find("required"), std::string::npos) << o.active_error->describe();
  // No REQ ever left (the QP could not offer ECE): the abandon notice tells the passive side,
  // which settles at once instead of at its 30 s wireup timeout.
  ASSERT_TRUE(o.passive_error);
  EXPECT_EQ(o.passive_error->cause, PeerError::Cause::peer_gave_up) << o.passive_error->describe();
  EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::abandoned);
  EXPECT_LT(o.end, 1s) << "both sides settled at the refusal";
  EXPECT_EQ(engines_[0]->stats()[Counter::abandons_sent], 1u);
  EXPECT_EQ(engines_[1]->stats()[Counter::abandons_received], 1u);
}

// --- the three device profiles x the modes, on both sides -----------------------------------

enum class Profile { mlx5, mlx5_no_ece, rxe };
const char* name(Profile p) {
  switch (p) {
    case Profile::mlx5: return "mlx5";
    case Profile::mlx5_no_ece: return "mlx5_no_ece";
    case Profile::rxe: return "rxe";
  }
  return "?";
}
SimDeviceSpec spec_of(Profile p) {
  switch (p) {
    case Profile::mlx5: return SimDeviceSpec::mlx5();
    case Profile::mlx5_no_ece: return SimDeviceSpec::mlx5_no_ece();
    case Profile::rxe: return SimDeviceSpec::rxe();
  }
  return {};
}

struct Case {
  Profile active, passive;
  ece::Mode active_mode, passive_mode;
};

// What each case must give, from the contract (policy.h): only mlx5 with ECE on both ends
// negotiates; a side without ECE refuses in `required` mode (the active side before any REQ,
// a local error; the passive side with reason 35); the active side in `required` mode refuses
// a REP without options with reason 35; everything else connects without ECE.
enum class Expect { negotiated, disabled, unsupported, active_local_error, passive_refuses_35, active_refuses_35 };
Expect expected(const Case& c) {
  using ece::Mode;
  if (c.active_mode == Mode::off && c.passive_mode == Mode::off) return Expect::disabled;
  const bool a_ece = c.active == Profile::mlx5, p_ece = c.passive == Profile::mlx5;
  if (!a_ece) {
    if (c.active_mode == Mode::required) return Expect::active_local_error;
    return c.passive_mode == Mode::required ? Expect::passive_refuses_35 : Expect::unsupported;
  }
  if (!p_ece) {
    if (c.passive_mode == Mode::required) return Expect::passive_refuses_35;
    return c.active_mode == Mode::required ? Expect::active_refuses_35 : Expect::unsupported;
  }
  return Expect::negotiated;
}

class EceProfiles : public EceRig, public ::testing::WithParamInterface<Case> {};

TEST_P(EceProfiles, AsTheHardwareAnswers) {
  const Case c = GetParam();
  Side a, p;
  a.dev = spec_of(c.active);
  p.dev = spec_of(c.passive);
  a.policy.mode = c.active_mode;
  p.policy.mode = c.passive_mode;
  auto o = run(a, p);
  auto says = [&] {
    return std::string("active: ") + (o.active_error ? o.active_error->describe() : "ok") +
           "; passive: " + (o.passive_error ? o.passive_error->describe() : "ok");
  };
  switch (expected(c)) {
    case Expect::negotiated:
    case Expect::disabled:
    case Expect::unsupported: {
      ASSERT_TRUE(o.active && o.passive) << says();
      const ece::Outcome want = expected(c) == Expect::negotiated ? ece::Outcome::negotiated
                                : expected(c) == Expect::disabled ? ece::Outcome::disabled
                                                                  : ece::Outcome::unsupported;
      EXPECT_EQ(o.active_ece->outcome, want) << ece::to_string(o.active_ece->outcome);
      EXPECT_EQ(o.passive_ece->outcome, want) << ece::to_string(o.passive_ece->outcome);
      const uint32_t in_force = want == ece::Outcome::negotiated ? SimDeviceSpec::mlx5().ece_options : 0;
      EXPECT_EQ(o.active_ece->accepted, in_force);
      EXPECT_EQ(o.passive_ece->accepted, in_force);
      break;
    }
    case Expect::active_local_error:
      EXPECT_FALSE(o.active);
      ASSERT_TRUE(o.active_error && o.passive_error) << says();
      EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::local_error) << says();
      EXPECT_EQ(o.passive_error->cause, PeerError::Cause::peer_gave_up) << says();
      break;
    case Expect::passive_refuses_35:
      EXPECT_FALSE(o.active);
      ASSERT_TRUE(o.active_error && o.passive_error) << says();
      EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::ece_rejected) << says();
      EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::rejected) << says();
      EXPECT_EQ(o.active_error->failure.status, prov::reject_reason::vendor_option) << says();
      break;
    case Expect::active_refuses_35:
      EXPECT_FALSE(o.active);
      ASSERT_TRUE(o.active_error && o.passive_error) << says();
      EXPECT_EQ(o.active_error->failure.kind, cm::FailKind::ece_rejected) << says();
      EXPECT_EQ(o.passive_error->failure.kind, cm::FailKind::rejected) << says();
      EXPECT_EQ(o.passive_error->failure.status, prov::reject_reason::vendor_option) << says();
      break;
  }
  EXPECT_LT(o.end, 1s) << "every case settles at once: " << says();
}

std::vector<Case> all_cases() {
  using ece::Mode;
  std::vector<Case> v;
  for (Profile a : {Profile::mlx5, Profile::mlx5_no_ece, Profile::rxe})
    for (Profile p : {Profile::mlx5, Profile::mlx5_no_ece, Profile::rxe}) {
      for (Mode m : {Mode::off, Mode::auto_, Mode::on, Mode::required}) v.push_back({a, p, m, m});
      v.push_back({a, p, Mode::required, Mode::auto_});
      v.push_back({a, p, Mode::auto_, Mode::required});
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Matrix, EceProfiles, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(name(i.param.active)) + "_" + ece::to_string(i.param.active_mode) +
                                  "__" + name(i.param.passive) + "_" + ece::to_string(i.param.passive_mode);
                         });

// The active side's QP factory fails (a transport out of QPs; a local error is final in the
// retry policy): it tells the passive side, which settles at once.
TEST(FinalAnswers, ActiveFactoryFailureSettlesBothSides) {
  prov::sim::SimFabric fab{prov::sim::SimConfig{}};
  fab.add_node();
  fab.add_node();
  std::vector<std::unique_ptr<qp::DefaultQpFactory>> qps;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < 2; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = 2;
    o.job_key = 9;
    o.listen_addr = fab.address(i);
    o.wireup_timeout = 60s;
    o.max_attempts = 3;
    o.rtu_linger = Nanos{0};
    qps.push_back(std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64));
    qp::QpFactory hook = qps.back()->hook();
    if (i == 0)
      hook = [](const qp::QpRequest&) -> Result<std::unique_ptr<prov::Qp>> {
        return Error::make(ErrorCode::resource_exhausted, "transport QP pool", "no QP left");
      };
    auto e = Engine::create(fab.provider(i), o, hook);
    ASSERT_TRUE(e) << e.error().message();
    engines.push_back(std::move(e).value());
    table.push_back(Peer{i, engines.back()->local_address()});
  }
  for (auto& e : engines) {
    ASSERT_TRUE(e->set_peers(table));
    ASSERT_TRUE(e->start());
  }
  const Nanos t0 = fab.now();
  auto r = sim_drive(fab, {engines[0].get(), engines[1].get()}, 120s);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(engines[0]->errors().size(), 1u);
  EXPECT_EQ(engines[0]->errors()[0].failure.kind, cm::FailKind::local_error);
  ASSERT_EQ(engines[1]->errors().size(), 1u);
  const PeerError& pe = engines[1]->errors()[0];
  EXPECT_EQ(pe.cause, PeerError::Cause::peer_gave_up) << pe.describe();
  EXPECT_LT(r->virtual_end - t0, 10s) << "the passive side did not wait out its 60 s timeout";
  for (auto& e : engines) ASSERT_TRUE(e->close(0s));
}

}  // namespace
}  // namespace wireup::etest
