#include "tests/engine/engine_harness.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

namespace wireup::etest {

bool in_vm() {
  const char* v = std::getenv("WIREUP_IN_VM");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

Job::~Job() {
  // Engines (ids, QPs) before the factories that own their PDs and CQs.
  for (auto& r : ranks) r.engine.reset();
}

Result<Job> make_job(EngineFabric& f, uint32_t n, uint32_t lanes, const OptionsHook& hook,
                     const FactoryHook& factory_hook, prov::QpCaps caps) {
  Job job;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < n; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = n;
    o.lanes = lanes;
    o.job_key = 0x5eed5eed12345678ULL;
    o.listen_addr = f.address(i);
    if (hook) hook(o);
    Rank r;
    r.factory = std::make_unique<qp::DefaultQpFactory>(caps, 4096);
    qp::QpFactory factory = r.factory->hook();
    if (factory_hook) factory = factory_hook(i, std::move(factory));
    auto e = Engine::create(f.provider(i), o, std::move(factory));
    if (!e) return Error(e.error()).with_peer("rank " + std::to_string(i));
    r.engine = std::move(e).value();
    table.push_back(Peer{i, r.engine->local_address()});
    job.ranks.push_back(std::move(r));
  }
  for (auto& r : job.ranks) {
    WIREUP_TRY(r.engine->set_peers(table));
    WIREUP_TRY(r.engine->start());
  }
  return job;
}

Status run_to_completion(EngineFabric& f, Job& job, Nanos bound) {
  prov::Provider& p = f.provider(0);
  const Nanos until = p.clock().now() + bound;
  for (;;) {
    int work = 0;
    bool all_done = true;
    for (auto& r : job.ranks) {
      auto w = r.engine->progress();
      if (!w) return w.error();
      work += *w;
      all_done = all_done && r.engine->done();
    }
    if (all_done) return Status::ok();
    if (p.clock().now() >= until) {
      std::string open;  // which pairs are still open, so that a hang says where it is
      for (size_t i = 0; i < job.ranks.size(); ++i)
        for (const Pair& q : job.ranks[i].engine->pairs())
          if (q.state() != PairState::established && q.state() != PairState::failed)
            open += " rank " + std::to_string(i) + "->" + std::to_string(q.peer) + "/" + std::to_string(q.lane) + " " +
                    to_string(q.state()) + " attempt " + std::to_string(q.attempt) + ";";
      return Error::make(ErrorCode::timed_out, "run_to_completion", "engines not done within the bound:" + open);
    }
    if (work == 0) {
      std::vector<prov::EventChannel*> chans;
      for (auto& r : job.ranks)
        for (auto* c : r.engine->channels()) chans.push_back(c);
      WIREUP_TRY(p.wait(chans, std::chrono::milliseconds(5)));
    }
  }
}

Status run_until(EngineFabric& f, Job& job, const std::function<bool()>& until, Nanos bound,
                 const std::vector<uint32_t>& skip) {
  prov::Provider& p = f.provider(0);
  const Nanos end = p.clock().now() + bound;
  const std::set<uint32_t> skipped(skip.begin(), skip.end());
  for (;;) {
    int work = 0;
    for (uint32_t i = 0; i < job.ranks.size(); ++i) {
      if (skipped.count(i) || !job.ranks[i].engine) continue;
      auto w = job.ranks[i].engine->progress();
      if (!w) return w.error();
      work += *w;
    }
    if (until()) return Status::ok();
    if (p.clock().now() >= end) return Error::make(ErrorCode::timed_out, "run_until", "condition not met in time");
    if (work == 0) {
      std::vector<prov::EventChannel*> chans;
      for (uint32_t i = 0; i < job.ranks.size(); ++i)
        if (!skipped.count(i) && job.ranks[i].engine)
          for (auto* c : job.ranks[i].engine->channels()) chans.push_back(c);
      WIREUP_TRY(p.wait(chans, std::chrono::milliseconds(5)));
    }
  }
}

void expect_consistent(const Job& job, uint32_t lanes, const std::vector<uint32_t>& dead) {
  std::set<uint32_t> dead_set(dead.begin(), dead.end());
  const uint32_t n = static_cast<uint32_t>(job.ranks.size());
  // (me, peer, lane) -> (local qpn, remote qpn)
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> seen;
  for (uint32_t me = 0; me < n; ++me) {
    if (dead_set.count(me)) continue;
    for (const ConnResult& c : job.ranks[me].engine->results()) {
      if (c.withdrawn) continue;
      auto [it, fresh] = seen.emplace(std::make_tuple(me, c.peer, c.lane), std::make_pair(c.local_qpn, c.remote_qpn));
      EXPECT_TRUE(fresh) << "rank " << me << " connected to " << c.peer << " lane " << c.lane << " twice";
      EXPECT_NE(c.local_qpn, 0u);
    }
  }
  for (uint32_t me = 0; me < n; ++me) {
    if (dead_set.count(me)) continue;
    const Engine& e = *job.ranks[me].engine;
    std::set<std::pair<uint32_t, uint32_t>> failed;
    for (const PeerError& pe : e.errors()) failed.insert({pe.peer, pe.lane});
    for (uint32_t peer = 0; peer < n; ++peer) {
      if (peer == me) continue;
      for (uint32_t lane = 0; lane < lanes; ++lane) {
        auto mine = seen.find({me, peer, lane});
        bool peer_dead = dead_set.count(peer) != 0;
        if (peer_dead) {
          EXPECT_TRUE(failed.count({peer, lane})) << "rank " << me << ": dead rank " << peer << " lane " << lane
                                                  << " not reported as failed";
          continue;
        }
        ASSERT_NE(mine, seen.end()) << "rank " << me << " has no connection to live rank " << peer << " lane "
                                    << lane;
        auto theirs = seen.find({peer, me, lane});
        ASSERT_NE(theirs, seen.end());
        EXPECT_EQ(mine->second.second, theirs->second.first) << "remote QPN of " << me << "->" << peer;
        EXPECT_EQ(mine->second.first, theirs->second.second) << "remote QPN of " << peer << "->" << me;
      }
    }
  }
}

void expect_messages_flow(Job& job) {
  struct Buf {
    std::vector<char> mem;
    std::unique_ptr<prov::Mr> mr;
  };
  std::vector<Buf> bufs(job.ranks.size());
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    Engine& e = *job.ranks[r].engine;
    const auto& res = e.results();
    if (res.empty()) continue;
    prov::Device& dev = e.qp(0)->device();
    bufs[r].mem.assign(res.size() * 128, 0);
    auto mr = job.ranks[r].factory->pd(dev)->reg_mr(bufs[r].mem.data(), bufs[r].mem.size(), prov::access::local_write);
    ASSERT_TRUE(mr) << mr.error().message();
    bufs[r].mr = std::move(mr).value();
    for (size_t i = 0; i < res.size(); ++i) {
      prov::Sge sge{reinterpret_cast<uint64_t>(bufs[r].mem.data() + i * 128 + 64), 64, bufs[r].mr->lkey()};
      ASSERT_TRUE(e.qp(static_cast<uint32_t>(i))->post_recv(i, sge));
    }
  }
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const auto& res = job.ranks[r].engine->results();
    for (size_t i = 0; i < res.size(); ++i) {
      char* slot = bufs[r].mem.data() + i * 128;
      int len = std::snprintf(slot, 64, "%zu:%u", r, res[i].lane);
      prov::Sge sge{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(len), bufs[r].mr->lkey()};
      ASSERT_TRUE(job.ranks[r].engine->qp(static_cast<uint32_t>(i))->post_send(1000 + i, sge, true));
    }
  }
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const auto& res = job.ranks[r].engine->results();
    if (res.empty()) continue;
    prov::Cq* cq = job.ranks[r].factory->cq(job.ranks[r].engine->qp(0)->device());
    size_t recvs = 0, sends = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    prov::WorkCompletion wc[32];
    while ((recvs < res.size() || sends < res.size()) && std::chrono::steady_clock::now() < deadline) {
      auto got = cq->poll(wc);
      ASSERT_TRUE(got) << got.error().message();
      for (int k = 0; k < *got; ++k) {
        ASSERT_EQ(wc[k].status, 0) << "rank " << r << " completion error on qpn " << wc[k].qp_num;
        if (wc[k].opcode == prov::wc_opcode_recv) {
          size_t i = wc[k].wr_id;
          ASSERT_LT(i, res.size());
          EXPECT_EQ(wc[k].qp_num, res[i].local_qpn);
          std::string text(bufs[r].mem.data() + i * 128 + 64, wc[k].byte_len);
          EXPECT_EQ(text, std::to_string(res[i].peer) + ":" + std::to_string(res[i].lane))
              << "rank " << r << " got a message meant for someone else";
          ++recvs;
        } else {
          ++sends;
        }
      }
      if (*got == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    EXPECT_EQ(recvs, res.size()) << "rank " << r;
    EXPECT_EQ(sends, res.size()) << "rank " << r;
  }
}

}  // namespace wireup::etest
