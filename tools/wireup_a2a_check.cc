// Checking what the engine built: the QPN cross-check and a SEND both ways on every connection.
// Both are per rank; the drivers exchange what they need (MPI_Alltoall, or in-process).
#include <cstdio>

#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

constexpr size_t kSlot = 128;          // per connection: [0, 64) our SEND, [64, 128) their SEND
constexpr size_t kRecvOffset = 64;
constexpr uint64_t kSendBase = 1ull << 32;  // wr_id of a SEND: base + index; RECV: index
constexpr size_t kMaxProblems = 8;

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

}  // namespace

void CheckCounts::problem(std::string s) {
  if (problems.size() < kMaxProblems) problems.push_back(std::move(s));
}

std::vector<QpnPair> qpn_table(const Engine& e, uint32_t nranks, uint32_t lanes) {
  std::vector<QpnPair> t(size_t(nranks) * lanes);
  for (const ConnResult& c : e.results())
    if (!c.withdrawn && c.peer < nranks && c.lane < lanes) t[size_t(c.peer) * lanes + c.lane] = {c.local_qpn, c.remote_qpn};
  return t;
}

void cross_check(uint32_t me, uint32_t peer, uint32_t lane, QpnPair mine, QpnPair theirs, CheckCounts& c) {
  // Both sides run this for every pair; the lower rank counts, so a connection counts once.
  const bool counts = me < peer;
  const bool here = mine.local != 0, there = theirs.local != 0;
  const std::string what = "rank " + std::to_string(me) + " <-> rank " + std::to_string(peer) + " lane " +
                           std::to_string(lane);
  if (!here && !there) return;  // a failed connection: reported by the engines, not a mismatch
  if (here != there) {
    if (counts) {
      ++c.half_open;
      c.problem(what + ": established on rank " + std::to_string(here ? me : peer) + " only");
    }
    return;
  }
  if (mine.remote == theirs.local && theirs.remote == mine.local) {
    if (counts) ++c.qpn_ok;
    return;
  }
  if (counts) {
    ++c.qpn_bad;
    c.problem(what + ": QPNs do not cross (here local " + hex(mine.local) + " remote " + hex(mine.remote) +
              ", there local " + hex(theirs.local) + " remote " + hex(theirs.remote) + ")");
  }
}

DataCheck::DataCheck(Engine& e, qp::DefaultQpFactory& f, uint32_t my_rank, const std::set<uint32_t>& skip)
    : factory_(f), me_(my_rank) {
  for (const ConnResult& c : e.results())
    if (c.qp != nullptr && !skip.count(c.peer)) conns_.push_back(&c);
  got_recv_.assign(conns_.size(), 0);
  got_send_.assign(conns_.size(), 0);
}

Status DataCheck::post_recvs() {
  if (conns_.empty()) return Status::ok();
  prov::Device& dev = conns_[0]->qp->device();
  prov::Pd* pd = factory_.pd(dev);
  cq_ = factory_.cq(dev);
  if (pd == nullptr || cq_ == nullptr)
    return Error::make(ErrorCode::invalid_state, "DataCheck", "the QP factory has no PD/CQ on " + dev.info().name);
  buf_.assign(conns_.size() * kSlot, 0);
  auto mr = pd->reg_mr(buf_.data(), buf_.size(), prov::access::local_write);
  if (!mr) return mr.error();
  mr_ = std::move(mr).value();
  for (size_t i = 0; i < conns_.size(); ++i) {
    prov::Sge sge{reinterpret_cast<uint64_t>(buf_.data() + i * kSlot + kRecvOffset), kSlot - kRecvOffset,
                  mr_->lkey()};
    if (Status s = conns_[i]->qp->post_recv(i, sge); !s)
      return Error(s.error()).with_peer("rank " + std::to_string(conns_[i]->peer));
  }
  return Status::ok();
}

Status DataCheck::post_sends() {
  for (size_t i = 0; i < conns_.size(); ++i) {
    char* slot = buf_.data() + i * kSlot;
    const int len = std::snprintf(slot, kRecvOffset, "%u:%u", me_, conns_[i]->lane);
    prov::Sge sge{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(len), mr_->lkey()};
    if (Status s = conns_[i]->qp->post_send(kSendBase + i, sge, true); !s)
      return Error(s.error()).with_peer("rank " + std::to_string(conns_[i]->peer));
  }
  return Status::ok();
}

Result<bool> DataCheck::poll(CheckCounts& c) {
  c.data_checked = true;
  if (recvs_ == conns_.size() && sends_ == conns_.size()) return true;
  prov::WorkCompletion wc[64];
  auto got = cq_->poll(wc);
  if (!got) return got.error();
  for (int k = 0; k < *got; ++k) {
    const bool is_send = wc[k].wr_id >= kSendBase;
    const size_t i = is_send ? wc[k].wr_id - kSendBase : wc[k].wr_id;
    if (i >= conns_.size()) {
      ++c.data_bad;
      c.problem("rank " + std::to_string(me_) + ": completion with unknown wr_id " + std::to_string(wc[k].wr_id));
      continue;
    }
    const ConnResult& r = *conns_[i];
    const std::string what = "rank " + std::to_string(me_) + " <- rank " + std::to_string(r.peer) + " lane " +
                             std::to_string(r.lane) + " (qpn " + hex(r.local_qpn) + ")";
    std::vector<uint8_t>& seen = is_send ? got_send_ : got_recv_;
    if (seen[i]++) {
      ++c.data_bad;
      c.problem(what + ": a second " + (is_send ? "send" : "receive") + " completion");
      continue;
    }
    ++(is_send ? sends_ : recvs_);
    if (wc[k].status != 0) {
      ++c.data_bad;
      c.problem(what + ": " + (is_send ? "SEND" : "RECV") + " completed with status " + std::to_string(wc[k].status));
      continue;
    }
    if (is_send) {
      ++c.send_ok;
      continue;
    }
    const std::string text(buf_.data() + i * kSlot + kRecvOffset, std::min<size_t>(wc[k].byte_len, 64));
    const std::string want = std::to_string(r.peer) + ":" + std::to_string(r.lane);
    if (wc[k].qp_num != r.local_qpn || text != want) {
      ++c.data_bad;
      c.problem(what + ": received \"" + text + "\" on qpn " + hex(wc[k].qp_num) + ", expected \"" + want + "\"");
      continue;
    }
    ++c.recv_ok;
  }
  return recvs_ == conns_.size() && sends_ == conns_.size();
}

void DataCheck::give_up(CheckCounts& c) {
  for (size_t i = 0; i < conns_.size(); ++i) {
    for (bool is_send : {false, true}) {
      if ((is_send ? got_send_ : got_recv_)[i]) continue;
      ++c.data_bad;
      c.problem("rank " + std::to_string(me_) + " <- rank " + std::to_string(conns_[i]->peer) + " lane " +
                std::to_string(conns_[i]->lane) + ": no " + (is_send ? "send" : "receive") +
                " completion before the deadline");
    }
  }
}

}  // namespace wireup::a2a
