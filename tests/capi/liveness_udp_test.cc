// The liveness service over real UDP sockets on loopback (127.0.0.x: one address per "node"):
// heartbeats keep everyone alive, a node whose ranks stop (as in a power cut: their sockets
// stay, nothing is sent) is known dead by every other rank within the deadline, and bad
// datagrams are counted by reason and dropped.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "capi/liveness_service.h"

namespace wireup::capi {
namespace {

using namespace std::chrono_literals;

Nanos now() { return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch()); }

liveness::Params fast() {
  liveness::Params p;
  p.period = 100ms;
  p.deadline = 600ms;
  return p;
}

struct Job {
  std::vector<std::unique_ptr<LivenessService>> ranks;
  std::vector<std::vector<uint32_t>> deaths;
  std::vector<bool> stopped;
  // Progresses every rank not stopped for `span`, every 5 ms.
  void run(Nanos span) {
    for (const Nanos until = now() + span; now() < until; std::this_thread::sleep_for(5ms))
      for (size_t r = 0; r < ranks.size(); ++r) {
        if (stopped[r]) continue;
        auto w = ranks[r]->progress(now(), deaths[r]);
        ASSERT_TRUE(w) << w.error().message();
      }
  }
};

// `later`: rank r's key through set_job_key before start (wireup_set_job_key), if non-zero;
// with `later`, rank r is created with key + r (a stand-in of its own, as the C API's).
Job make_job(uint32_t nodes, uint32_t per_node, uint64_t key, std::vector<uint64_t> later = {}) {
  Job j;
  const uint32_t n = nodes * per_node;
  std::vector<prov::SockAddr> eps;
  for (uint32_t r = 0; r < n; ++r) {
    const uint64_t at_create = later.empty() ? key : key + r;
    auto s = LivenessService::create(r, at_create, fast(), prov::SockAddr::ipv4(0x7f000001 + r / per_node, 0));
    EXPECT_TRUE(s) << s.error().message();
    if (!s) return j;
    if (r < later.size() && later[r] != 0) {
      EXPECT_TRUE((*s)->set_job_key(later[r]));
    }
    eps.push_back((*s)->address());
    j.ranks.push_back(std::move(s).value());
  }
  for (auto& s : j.ranks) EXPECT_TRUE(s->start(eps, now()));
  j.deaths.resize(n);
  j.stopped.assign(n, false);
  return j;
}

TEST(LivenessUdp, ASilentNodeIsKnownByEveryoneWithinTheDeadline) {
  Job j = make_job(4, 3, 0x5eed);
  ASSERT_EQ(j.ranks.size(), 12u);
  j.run(1s);
  for (size_t r = 0; r < 12; ++r) EXPECT_TRUE(j.deaths[r].empty()) << "rank " << r;
  for (uint32_t r = 6; r < 9; ++r) j.stopped[r] = true;  // node 2 goes silent
  const Nanos cut = now();
  std::vector<Nanos> knew(12, Nanos::max());
  for (const Nanos until = cut + 2s; now() < until;) {
    j.run(5ms);
    for (size_t r = 0; r < 12; ++r)
      if (!j.stopped[r] && knew[r] == Nanos::max() && j.deaths[r].size() == 3) knew[r] = now();
  }
  Nanos last{0};
  for (size_t r = 0; r < 12; ++r) {
    if (j.stopped[r]) continue;
    std::vector<uint32_t> d = j.deaths[r];
    std::sort(d.begin(), d.end());
    EXPECT_EQ(d, (std::vector<uint32_t>{6, 7, 8})) << "rank " << r;
    last = std::max(last, knew[r] - cut);
    EXPECT_GT(j.ranks[r]->stats().sent, 0u);
    EXPECT_EQ(j.ranks[r]->stats().bad_total(), 0u);
  }
  std::printf("[liveness] 4 nodes x 3 ranks on loopback, node 2 silent: every survivor knew after %.0f ms "
              "(deadline 600 ms)\n", last.count() / 1e6);
  // The deadline plus one period of slack: this host's scheduler is shared.
  EXPECT_LE(last, 700ms);
}

TEST(LivenessUdp, BadDatagramsAreCountedAndDropped) {
  Job j = make_job(1, 4, 0x5eed);
  ASSERT_EQ(j.ranks.size(), 4u);
  LivenessService& target = *j.ranks[1];
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  auto send = [&](const std::vector<uint8_t>& b) {
    ASSERT_EQ(::sendto(fd, b.data(), b.size(), 0, target.address().get(), target.address().len()),
              static_cast<ssize_t>(b.size()));
  };
  liveness::Msg dead;
  dead.kind = liveness::Kind::dead;
  dead.from = 0;
  dead.subject = 2;
  dead.root = 2;
  auto other = MacKey::derive(0xbad);
  ASSERT_TRUE(other);
  auto mine = MacKey::derive(0x5eed);
  ASSERT_TRUE(mine);
  send(liveness::seal(dead, *other));                 // another job's key: tag
  std::vector<uint8_t> b = liveness::seal(dead, *mine);
  b[0] = 'X';
  send(b);                                            // magic
  send(std::vector<uint8_t>(7, 0));                   // length
  send(std::vector<uint8_t>(4000, 0));                // length (oversized)
  b = liveness::seal(dead, *mine);
  b[30] ^= 1;
  send(b);                                            // tag (flipped bit)
  liveness::Msg far = dead;
  far.subject = 1000;
  send(liveness::seal(far, *mine));                   // rank out of range
  ::close(fd);
  j.run(300ms);
  const auto& s = target.stats();
  using liveness::Bad;
  EXPECT_EQ(s.bad[static_cast<size_t>(Bad::tag)], 2u);
  EXPECT_EQ(s.bad[static_cast<size_t>(Bad::magic)], 1u);
  EXPECT_EQ(s.bad[static_cast<size_t>(Bad::short_or_long)], 2u);
  EXPECT_EQ(s.bad[static_cast<size_t>(Bad::rank)], 1u);
  EXPECT_TRUE(j.deaths[1].empty()) << "nothing forged or broken buries anyone";
  EXPECT_FALSE(target.detector()->dead(2));
}

// A key set before start replaces the one the service was created with (the C API's stand-in
// while wireup_set_job_key has not come): every datagram is sealed and opened with it. Ranks
// that set the same key hear each other; a rank that set another one is heard as a bad tag.
TEST(LivenessUdp, AJobKeySetBeforeStartSealsEveryDatagram) {
  // Each rank is created with a key of its own (0xbad + rank), then sets the job's.
  std::vector<uint64_t> later(4, 0x5eed);
  Job j = make_job(2, 2, 0xbad, later);
  ASSERT_EQ(j.ranks.size(), 4u);
  j.run(1s);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(j.deaths[r].empty()) << "rank " << r;
    EXPECT_GT(j.ranks[r]->stats().received, 0u) << "rank " << r;
    EXPECT_EQ(j.ranks[r]->stats().bad_total(), 0u) << "rank " << r;
  }

  later[3] = 0x5eed ^ 1;  // rank 3 set another job's key
  Job k = make_job(2, 2, 0xbad, later);
  ASSERT_EQ(k.ranks.size(), 4u);
  k.run(1s);
  uint64_t bad_tags = 0;
  for (size_t r = 0; r < 3; ++r) bad_tags += k.ranks[r]->stats().bad[static_cast<size_t>(liveness::Bad::tag)];
  EXPECT_GT(bad_tags, 0u) << "rank 3's datagrams are sealed with its own key";
}

TEST(LivenessUdp, BadParametersAreRefusedByName) {
  liveness::Params p = fast();
  p.deadline = p.period;
  auto s = LivenessService::create(0, 1, p, prov::SockAddr::ipv4(0x7f000001, 0));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("liveness.deadline_ms"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace wireup::capi
