// Checking what the engine built: the QPN cross-check and a SEND both ways on every connection.
// Both are per rank; the drivers exchange what they need (MPI_Alltoall, or in-process).
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

bool cross_check(uint32_t me, uint32_t peer, uint32_t lane, QpnPair mine, QpnPair theirs, CheckCounts& c) {
  const bool lost = ((mine.local | theirs.local) & kLostBit) != 0;
  mine.local &= ~kLostBit;
  theirs.local &= ~kLostBit;
  // Both sides run this for every pair; the lower rank counts, so a connection counts once.
  const bool counts = me < peer;
  const bool here = mine.local != 0, there = theirs.local != 0;
  const std::string what = "rank " + std::to_string(me) + " <-> rank " + std::to_string(peer) + " lane " +
                           std::to_string(lane);
  if (!here && !there) return lost;  // a failed connection: reported by the engines, not a mismatch
  if (here != there) {
    // Lost since it connected on the end that has it, given up on the other: the lane went
    // with its rail before this end settled it (the engine reports both), not a half-open one.
    if (lost) return lost;
    if (counts) {
      ++c.half_open;
      c.problem(what + ": established on rank " + std::to_string(here ? me : peer) + " only");
    }
    return lost;
  }
  if (mine.remote == theirs.local && theirs.remote == mine.local) {
    if (counts) ++c.qpn_ok;
    return lost;
  }
  if (counts) {
    ++c.qpn_bad;
    c.problem(what + ": QPNs do not cross (here local " + hex(mine.local) + " remote " + hex(mine.remote) +
              ", there local " + hex(theirs.local) + " remote " + hex(theirs.remote) + ")");
  }
  return lost;
}

DataCheck::DataCheck(std::vector<DataLane> lanes, DataPath& path, uint32_t my_rank)
    : lanes_(std::move(lanes)), path_(path), me_(my_rank) {
  got_recv_.assign(lanes_.size(), 0);
  got_send_.assign(lanes_.size(), 0);
}

Problem DataCheck::post_recvs() {
  if (lanes_.empty()) return {};
  buf_.assign(lanes_.size() * kSlot, 0);
  if (Problem p = path_.register_buffer(buf_.data(), buf_.size()); !p.empty()) return p;
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (Problem p = path_.post_recv(i, i, buf_.data() + i * kSlot + kRecvOffset, kSlot - kRecvOffset); !p.empty())
      return p;
  return {};
}

Problem DataCheck::post_sends() {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    char* slot = buf_.data() + i * kSlot;
    const int len = std::snprintf(slot, kRecvOffset, "%u:%u", me_, lanes_[i].lane);
    if (Problem p = path_.post_send(i, kSendBase + i, slot, static_cast<uint32_t>(len)); !p.empty()) return p;
  }
  return {};
}

Expected<bool> DataCheck::poll(CheckCounts& c) {
  c.data_checked = true;
  if (recvs_ == lanes_.size() && sends_ == lanes_.size()) return true;
  Completion wc[64];
  Problem error;
  const int got = path_.poll(wc, 64, error);
  if (got < 0) return Expected<bool>::failure(error);
  for (int k = 0; k < got; ++k) {
    const bool is_send = wc[k].wr_id >= kSendBase;
    const size_t i = is_send ? wc[k].wr_id - kSendBase : wc[k].wr_id;
    if (i >= lanes_.size()) {
      ++c.data_bad;
      c.problem("rank " + std::to_string(me_) + ": completion with unknown wr_id " + std::to_string(wc[k].wr_id));
      continue;
    }
    const DataLane& r = lanes_[i];
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
  return recvs_ == lanes_.size() && sends_ == lanes_.size();
}

Problem DataCheck::wait(double timeout_s, CheckCounts& c) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    auto r = poll(c);
    if (!r) return r.error();
    if (*r) return {};
    if (Clock::now() >= deadline) {
      give_up(c);
      return {};
    }
    usleep(100);
  }
}

void DataCheck::give_up(CheckCounts& c) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    for (bool is_send : {false, true}) {
      if ((is_send ? got_send_ : got_recv_)[i]) continue;
      ++c.data_bad;
      c.problem("rank " + std::to_string(me_) + " <- rank " + std::to_string(lanes_[i].peer) + " lane " +
                std::to_string(lanes_[i].lane) + ": no " + (is_send ? "send" : "receive") +
                " completion before the deadline");
    }
  }
}

}  // namespace wireup::a2a
