#include "tests/engine/data_plane_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

namespace wireup::etest {
namespace {

using prov::WrOpcode;

// A rank's buffer: one slot per result (offsets below), then a pool of receive buffers.
constexpr size_t kSlot = 4096;
constexpr size_t kSendSrc = 0;        // 16: the SEND's payload; +16: the SEND with immediate's
constexpr size_t kWriteSrc = 64;      // 64: the WRITE's source; +64: the WRITE with immediate's
constexpr size_t kWriteDst = 192;     // 64: where the peer's WRITE lands
constexpr size_t kWriteImmDst = 256;  // 32: where the peer's WRITE with immediate lands
constexpr size_t kCasDst = 320;       // 8: the peer's compare-and-swap target
constexpr size_t kFaaDst = 328;       // 8: the peer's fetch-and-add target
constexpr size_t kCasOld = 336;       // 8: what our compare-and-swap found
constexpr size_t kFaaOld = 344;       // 8: what our fetch-and-add found
constexpr size_t kReadSrc = 1024;     // 8 per READ: what the peer reads
constexpr size_t kReadDst = 2560;     // 8 per READ: what our READs bring back
constexpr uint32_t kMaxReads = 128;   // rxe's max_qp_rd_atom; (kReadDst - kReadSrc) / 8 >= this
constexpr uint32_t kSendLen = 16;
constexpr uint32_t kWriteLen = 64;
constexpr uint32_t kWriteImmLen = 32;
constexpr size_t kRecvLen = 64;
constexpr uint32_t kRecvsPerQp = 3;  // SEND, SEND with immediate, WRITE with immediate
static_assert(kReadSrc + 8 * kMaxReads <= kReadDst && kReadDst + 8 * kMaxReads <= kSlot);

// What a work request was for: the top 32 bits of its wr_id (the result index below them).
// The receives are counted on the receiving result under the last three.
enum class Kind : uint64_t {
  send = 1,
  send_imm,
  write,
  write_imm,
  read,
  cas,
  faa,
  recv,
  got_send,
  got_send_imm,
  got_write_imm
};
const char* name(Kind k) {
  static const char* names[] = {"?",   "SEND", "SEND_IMM", "WRITE",         "WRITE_IMM",         "READ",
                                "CAS", "FAA",  "RECV",     "SEND received", "SEND_IMM received", "WRITE_IMM received"};
  return names[static_cast<uint64_t>(k) <= 11 ? static_cast<uint64_t>(k) : 0];
}
uint64_t wr_id(Kind k, size_t index) { return (static_cast<uint64_t>(k) << 32) | index; }
Kind kind_of(uint64_t id) { return static_cast<Kind>(id >> 32); }
size_t index_of(uint64_t id) { return static_cast<size_t>(id & 0xffffffffu); }

uint32_t imm_of(uint32_t rank, size_t index, Kind k) {
  return (rank << 20) | (static_cast<uint32_t>(index) << 8) | static_cast<uint32_t>(k);
}
uint64_t cas_initial(uint32_t rank, size_t index) { return 0x1100000000000000ULL | (uint64_t{rank} << 20) | index; }
uint64_t cas_swap(uint32_t rank, size_t index) { return 0x2200000000000000ULL | (uint64_t{rank} << 20) | index; }
uint64_t faa_initial(uint32_t rank, size_t index) { return 0x3300000000000000ULL | (uint64_t{rank} << 20) | index; }
uint64_t faa_add(uint32_t rank, size_t index) { return 0x1000000ULL + (uint64_t{rank} << 8) + index; }

struct RankState {
  RankVerbs v;
  std::vector<uint64_t> words;  // the buffer, 8-aligned for the atomics
  std::unique_ptr<prov::Mr> mr;
  std::vector<size_t> live;                                 // result indexes checked
  std::map<std::pair<uint32_t, uint32_t>, size_t> by_link;  // (peer, lane) -> result index
  std::map<uint32_t, size_t> by_qpn;                        // local QPN -> result index
  std::vector<uint32_t> depth;                              // per result: READs in flight

  uint8_t* at(size_t index, size_t off) { return reinterpret_cast<uint8_t*>(words.data()) + index * kSlot + off; }
  uint64_t addr(size_t index, size_t off) { return reinterpret_cast<uint64_t>(at(index, off)); }
  uint64_t& word(size_t index, size_t off) { return *reinterpret_cast<uint64_t*>(at(index, off)); }
};

std::string where(uint32_t rank, const ConnResult& c) {
  return "rank " + std::to_string(rank) + " (" + (c.role == cm::Role::active ? "active" : "passive") + ") -> " +
         std::to_string(c.peer) + " lane " + std::to_string(c.lane) + " qpn " + std::to_string(c.local_qpn);
}

// Polls every rank's CQ until each has `want[r]` completions or the bound passes.
std::vector<std::vector<prov::WorkCompletion>> drain(std::vector<RankState>& st, const std::vector<size_t>& want) {
  std::vector<std::vector<prov::WorkCompletion>> got(st.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  prov::WorkCompletion wc[64];
  for (;;) {
    bool all = true;
    int polled = 0;
    for (size_t r = 0; r < st.size(); ++r) {
      if (got[r].size() >= want[r]) continue;
      all = false;
      auto n = st[r].v.cq->poll(wc);
      EXPECT_TRUE(n) << "rank " << r << ": " << n.error().message();
      if (!n) return got;
      got[r].insert(got[r].end(), wc, wc + *n);
      polled += *n;
    }
    if (all) return got;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (size_t r = 0; r < st.size(); ++r)
        EXPECT_GE(got[r].size(), want[r]) << "rank " << r << ": completions missing after 20 s";
      return got;
    }
    if (polled == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Every completion of `got` succeeded on the QP of its result, with the opcode its kind has;
// counts[r][index][kind] counts them.
using Counts = std::vector<std::map<std::pair<size_t, Kind>, uint32_t>>;
void check_requests(Job& job, std::vector<RankState>& st, const std::vector<std::vector<prov::WorkCompletion>>& got,
                    Counts& counts) {
  for (size_t r = 0; r < got.size(); ++r) {
    const auto& res = job.ranks[r].engine->results();
    for (const prov::WorkCompletion& wc : got[r]) {
      const Kind k = kind_of(wc.wr_id);
      if (k == Kind::recv) {
        auto it = st[r].by_qpn.find(wc.qp_num);
        ASSERT_NE(it, st[r].by_qpn.end()) << "rank " << r << ": a receive on unknown qpn " << wc.qp_num;
        const size_t j = it->second;
        EXPECT_EQ(wc.status, prov::wc_status::success) << where(static_cast<uint32_t>(r), res[j]) << ": RECV";
        if (wc.status != prov::wc_status::success) continue;
        // The sender: the peer's result with the crossed link.
        const uint32_t p = res[j].peer;
        auto s = st[p].by_link.find({static_cast<uint32_t>(r), res[j].lane});
        ASSERT_NE(s, st[p].by_link.end());
        const size_t i = s->second;
        const uint8_t* data = st[r].at(res.size(), 0) + index_of(wc.wr_id) * kRecvLen;
        Kind what = Kind::send;
        if (wc.opcode == prov::wc_opcode_recv_rdma_with_imm) {
          what = Kind::write_imm;
          EXPECT_EQ(wc.byte_len, kWriteImmLen) << where(static_cast<uint32_t>(r), res[j]);
        } else {
          EXPECT_EQ(wc.opcode, prov::wc_opcode_recv) << where(static_cast<uint32_t>(r), res[j]);
          what = (wc.wc_flags & prov::wc_flag_with_imm) != 0 ? Kind::send_imm : Kind::send;
          EXPECT_EQ(wc.byte_len, kSendLen) << where(static_cast<uint32_t>(r), res[j]);
          const size_t off = kSendSrc + (what == Kind::send_imm ? kSendLen : 0);
          EXPECT_EQ(std::memcmp(data, st[p].at(i, off), kSendLen), 0)
              << where(static_cast<uint32_t>(r), res[j]) << ": " << name(what) << " payload";
        }
        if (what != Kind::send) {
          EXPECT_NE(wc.wc_flags & prov::wc_flag_with_imm, 0u) << where(static_cast<uint32_t>(r), res[j]);
          EXPECT_EQ(ntohl(wc.imm_data), imm_of(p, i, what))
              << where(static_cast<uint32_t>(r), res[j]) << ": " << name(what) << " immediate";
        }
        const Kind got = what == Kind::send       ? Kind::got_send
                         : what == Kind::send_imm ? Kind::got_send_imm
                                                  : Kind::got_write_imm;
        ++counts[r][{j, got}];
        continue;
      }
      const size_t i = index_of(wc.wr_id);
      ASSERT_LT(i, res.size()) << "rank " << r << ": wr_id " << wc.wr_id;
      EXPECT_EQ(wc.status, prov::wc_status::success)
          << where(static_cast<uint32_t>(r), res[i]) << ": " << name(k) << " completed with status " << wc.status;
      EXPECT_EQ(wc.qp_num, res[i].local_qpn) << where(static_cast<uint32_t>(r), res[i]) << ": " << name(k);
      if (wc.status != prov::wc_status::success) continue;
      int op = prov::wc_opcode_send;
      if (k == Kind::write || k == Kind::write_imm) op = prov::wc_opcode_rdma_write;
      if (k == Kind::read) op = prov::wc_opcode_rdma_read;
      if (k == Kind::cas) op = prov::wc_opcode_comp_swap;
      if (k == Kind::faa) op = prov::wc_opcode_fetch_add;
      EXPECT_EQ(wc.opcode, op) << where(static_cast<uint32_t>(r), res[i]) << ": " << name(k);
      ++counts[r][{i, k}];
    }
  }
}

prov::SendWr make_wr(Kind k, RankState& me, size_t i, size_t off, uint32_t len, RankState& peer, size_t j,
                     size_t peer_off) {
  prov::SendWr w;
  w.wr_id = wr_id(k, i);
  w.sge = prov::Sge{me.addr(i, off), len, me.mr->lkey()};
  w.remote_addr = peer.addr(j, peer_off);
  w.rkey = peer.mr->rkey();
  return w;
}

}  // namespace

RankVerbs factory_verbs(Job& job, uint32_t rank) {
  Engine& e = *job.ranks[rank].engine;
  for (uint32_t i = 0; i < e.results().size(); ++i) {
    if (prov::Qp* q = e.qp(i))
      return RankVerbs{job.ranks[rank].factory->pd(q->device()), job.ranks[rank].factory->cq(q->device()), nullptr};
  }
  return {};
}

size_t expect_every_verb(Job& job, const RankVerbsOf& verbs_of) {
  const size_t n = job.ranks.size();
  std::vector<RankState> st(n);
  size_t checked = 0;
  // Memory, receives and depths.
  for (uint32_t r = 0; r < n; ++r) {
    Engine& e = *job.ranks[r].engine;
    const auto& res = e.results();
    for (size_t i = 0; i < res.size(); ++i) {
      if (res[i].withdrawn || e.qp(static_cast<uint32_t>(i)) == nullptr) continue;
      st[r].live.push_back(i);
      st[r].by_link[{res[i].peer, res[i].lane}] = i;
      st[r].by_qpn[res[i].local_qpn] = i;
    }
    if (st[r].live.empty()) continue;
    st[r].v = verbs_of(r);
    EXPECT_TRUE(st[r].v.pd != nullptr && st[r].v.cq != nullptr) << "rank " << r << ": no PD/CQ";
    if (st[r].v.pd == nullptr || st[r].v.cq == nullptr) return 0;
    const size_t bytes = res.size() * kSlot + res.size() * kRecvsPerQp * kRecvLen;
    st[r].words.assign(bytes / 8, 0);
    for (size_t i = 0; i < res.size(); ++i) {
      for (size_t k = 0; k < kSlot; ++k) *st[r].at(i, k) = static_cast<uint8_t>((r * 131 + i * 29 + k * 7) ^ 0x5a);
      std::memset(st[r].at(i, kWriteDst), 0, kCasDst - kWriteDst);
      std::memset(st[r].at(i, kReadDst), 0, 8 * kMaxReads);
      st[r].word(i, kCasDst) = cas_initial(r, i);
      st[r].word(i, kFaaDst) = faa_initial(r, i);
      st[r].word(i, kCasOld) = ~0ULL;
      st[r].word(i, kFaaOld) = ~0ULL;
    }
    auto mr = st[r].v.pd->reg_mr(st[r].words.data(), bytes, prov::access::local_write | prov::access::remote_all);
    EXPECT_TRUE(mr) << "rank " << r << ": " << mr.error().message();
    if (!mr) return 0;
    st[r].mr = std::move(mr).value();
    st[r].depth.assign(res.size(), 0);
    size_t slot = 0;
    for (size_t i : st[r].live) {
      prov::Qp* q = e.qp(static_cast<uint32_t>(i));
      EXPECT_EQ(q->has_srq(), st[r].v.srq != nullptr) << where(r, res[i]);
      for (uint32_t k = 0; k < kRecvsPerQp; ++k, ++slot) {
        prov::Sge sge{reinterpret_cast<uint64_t>(st[r].at(res.size(), 0) + slot * kRecvLen), kRecvLen,
                      st[r].mr->lkey()};
        Status s = st[r].v.srq != nullptr ? st[r].v.srq->post_recv(wr_id(Kind::recv, slot), sge)
                                          : q->post_recv(wr_id(Kind::recv, slot), sge);
        EXPECT_TRUE(s) << where(r, res[i]) << ": " << s.message();
        if (!s) return 0;
      }
      auto a = q->query(prov::qp_mask::state | prov::qp_mask::max_qp_rd_atomic | prov::qp_mask::access_flags);
      EXPECT_TRUE(a) << where(r, res[i]) << ": " << a.error().message();
      if (!a) return 0;
      EXPECT_EQ(a->qp_state, prov::QpState::rts) << where(r, res[i]) << " before the verbs";
      EXPECT_EQ(a->qp_access_flags & prov::access::remote_all, prov::access::remote_all)
          << where(r, res[i]) << ": qp_access_flags 0x" << std::hex << a->qp_access_flags;
      EXPECT_GE(a->max_rd_atomic, 1) << where(r, res[i]);
      EXPECT_LE(a->max_rd_atomic, kMaxReads) << where(r, res[i]);
      st[r].depth[i] = std::min<uint32_t>(std::max<uint32_t>(a->max_rd_atomic, 1), kMaxReads);
    }
  }
  // The responder of every READ accepts as many as its requester may send.
  for (uint32_t r = 0; r < n; ++r) {
    const auto& res = job.ranks[r].engine->results();
    for (size_t i : st[r].live) {
      auto s = st[res[i].peer].by_link.find({r, res[i].lane});
      EXPECT_NE(s, st[res[i].peer].by_link.end()) << where(r, res[i]) << ": the peer has no live match";
      if (s == st[res[i].peer].by_link.end()) return 0;
      auto b =
          job.ranks[res[i].peer].engine->qp(static_cast<uint32_t>(s->second))->query(prov::qp_mask::max_dest_rd_atomic);
      EXPECT_TRUE(b);
      if (b) {
        EXPECT_GE(b->max_dest_rd_atomic, st[r].depth[i]) << where(r, res[i]) << ": the peer's max_dest_rd_atomic";
      }
    }
  }

  // Phase 1: SEND, SEND with immediate, WRITE, WRITE with immediate, READs as deep as negotiated.
  std::vector<size_t> want(n, 0);
  for (uint32_t r = 0; r < n; ++r) {
    Engine& e = *job.ranks[r].engine;
    const auto& res = e.results();
    for (size_t i : st[r].live) {
      prov::Qp* q = e.qp(static_cast<uint32_t>(i));
      RankState& peer = st[res[i].peer];
      const size_t j = peer.by_link.at({r, res[i].lane});
      prov::SendWr s = make_wr(Kind::send, st[r], i, kSendSrc, kSendLen, peer, j, 0);
      s.opcode = WrOpcode::send;
      prov::SendWr si = make_wr(Kind::send_imm, st[r], i, kSendSrc + kSendLen, kSendLen, peer, j, 0);
      si.opcode = WrOpcode::send_with_imm;
      si.imm_data = htonl(imm_of(r, i, Kind::send_imm));
      prov::SendWr w = make_wr(Kind::write, st[r], i, kWriteSrc, kWriteLen, peer, j, kWriteDst);
      w.opcode = WrOpcode::rdma_write;
      prov::SendWr wi = make_wr(Kind::write_imm, st[r], i, kWriteSrc + kWriteLen, kWriteImmLen, peer, j, kWriteImmDst);
      wi.opcode = WrOpcode::rdma_write_with_imm;
      wi.imm_data = htonl(imm_of(r, i, Kind::write_imm));
      for (const prov::SendWr* x : {&s, &si, &w, &wi}) {
        Status ok = q->post(*x);
        EXPECT_TRUE(ok) << where(r, res[i]) << ": post " << name(kind_of(x->wr_id)) << ": " << ok.message();
        if (!ok) return 0;
      }
      for (uint32_t k = 0; k < st[r].depth[i]; ++k) {
        prov::SendWr rd = make_wr(Kind::read, st[r], i, kReadDst + 8 * k, 8, peer, j, kReadSrc + 8 * k);
        rd.opcode = WrOpcode::rdma_read;
        Status ok = q->post(rd);
        EXPECT_TRUE(ok) << where(r, res[i]) << ": post READ " << k << " of " << st[r].depth[i] << ": " << ok.message();
        if (!ok) return 0;
      }
      want[r] += 4 + st[r].depth[i] + kRecvsPerQp;
    }
  }
  Counts counts(n);
  check_requests(job, st, drain(st, want), counts);

  // Phases 2 and 3: compare-and-swap, then fetch-and-add (each alone in flight: depth 1 is enough).
  for (Kind k : {Kind::cas, Kind::faa}) {
    std::fill(want.begin(), want.end(), 0);
    for (uint32_t r = 0; r < n; ++r) {
      Engine& e = *job.ranks[r].engine;
      const auto& res = e.results();
      for (size_t i : st[r].live) {
        RankState& peer = st[res[i].peer];
        const size_t j = peer.by_link.at({r, res[i].lane});
        prov::SendWr a = k == Kind::cas ? make_wr(k, st[r], i, kCasOld, 8, peer, j, kCasDst)
                                        : make_wr(k, st[r], i, kFaaOld, 8, peer, j, kFaaDst);
        if (k == Kind::cas) {
          a.opcode = WrOpcode::atomic_cmp_and_swp;
          a.compare_add = cas_initial(res[i].peer, j);
          a.swap = cas_swap(r, i);
        } else {
          a.opcode = WrOpcode::atomic_fetch_and_add;
          a.compare_add = faa_add(r, i);
        }
        Status ok = e.qp(static_cast<uint32_t>(i))->post(a);
        EXPECT_TRUE(ok) << where(r, res[i]) << ": post " << name(k) << ": " << ok.message();
        if (!ok) return 0;
        ++want[r];
      }
    }
    check_requests(job, st, drain(st, want), counts);
  }

  // Every operation once (READs: depth times), every receive once; the memory as expected.
  for (uint32_t r = 0; r < n; ++r) {
    Engine& e = *job.ranks[r].engine;
    const auto& res = e.results();
    for (size_t i : st[r].live) {
      const std::string at = where(r, res[i]);
      for (Kind k : {Kind::send, Kind::send_imm, Kind::write, Kind::write_imm, Kind::cas, Kind::faa})
        EXPECT_EQ((counts[r][{i, k}]), 1u) << at << ": " << name(k) << " completions";
      EXPECT_EQ((counts[r][{i, Kind::read}]), st[r].depth[i]) << at << ": READ completions";
      for (Kind k : {Kind::got_send, Kind::got_send_imm, Kind::got_write_imm})
        EXPECT_EQ((counts[r][{i, k}]), 1u) << at << ": " << name(k);
      const uint32_t p = res[i].peer;
      RankState& peer = st[p];
      const size_t j = peer.by_link.at({r, res[i].lane});
      EXPECT_EQ(std::memcmp(peer.at(j, kWriteDst), st[r].at(i, kWriteSrc), kWriteLen), 0) << at << ": WRITE data";
      EXPECT_EQ(std::memcmp(peer.at(j, kWriteImmDst), st[r].at(i, kWriteSrc + kWriteLen), kWriteImmLen), 0)
          << at << ": WRITE_IMM data";
      EXPECT_EQ(std::memcmp(st[r].at(i, kReadDst), peer.at(j, kReadSrc), 8 * st[r].depth[i]), 0) << at << ": READ data";
      EXPECT_EQ(st[r].word(i, kCasOld), cas_initial(p, j)) << at << ": CAS original";
      EXPECT_EQ(peer.word(j, kCasDst), cas_swap(r, i)) << at << ": CAS swapped";
      EXPECT_EQ(st[r].word(i, kFaaOld), faa_initial(p, j)) << at << ": FAA original";
      EXPECT_EQ(peer.word(j, kFaaDst), faa_initial(p, j) + faa_add(r, i)) << at << ": FAA sum";
      prov::Qp* q = e.qp(static_cast<uint32_t>(i));
      auto a = q->query(prov::qp_mask::state);
      EXPECT_TRUE(a) << at;
      if (a) {
        EXPECT_EQ(a->qp_state, prov::QpState::rts) << at << ": left RTS";
      }
      ++checked;
    }
  }
  uint32_t lo = kMaxReads, hi = 0;
  size_t active = 0;
  for (uint32_t r = 0; r < n; ++r)
    for (size_t i : st[r].live) {
      lo = std::min(lo, st[r].depth[i]);
      hi = std::max(hi, st[r].depth[i]);
      active += job.ranks[r].engine->results()[i].role == cm::Role::active ? 1 : 0;
    }
  std::printf("[engine-data] %zu QPs (%zu initiating, %zu accepting): every verb, READ depth %u..%u%s\n", checked,
              active, checked - active, lo, hi, st.empty() || st[0].v.srq == nullptr ? "" : ", receives via SRQ");
  return checked;
}

}  // namespace wireup::etest
