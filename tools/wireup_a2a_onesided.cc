// The one-sided check: an RDMA WRITE and an RDMA READ each way on every connection, beside
// the SEND check. A transport puts into and reads from the QPs wireup hands over (rendezvous,
// RMA), so each side's QP must answer both as a responder: a QP whose access flags lack
// remote write or read fails the peer's request ("remote invalid request error" at the
// requester, both QPs then in ERR), which this check counts for the (peer, lane).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

// Per lane: [0, 32) the peer WRITEs here, [32, 64) the peer READs from here, [64, 96) our
// READ lands here, [96, 128) what we WRITE from.
constexpr size_t kSlot = 128;
constexpr size_t kWriteTarget = 0, kReadSource = 32, kReadInto = 64, kWriteFrom = 96, kText = 32;
constexpr uint64_t kWriteBase = 2ull << 32, kReadBase = 3ull << 32;  // wr_id: base + lane index

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

std::string text(char tag, uint32_t rank, uint32_t lane) {
  return std::string(1, tag) + std::to_string(rank) + ":" + std::to_string(lane);
}

}  // namespace

OneSidedCheck::OneSidedCheck(std::vector<DataLane> lanes, DataPath& path, uint32_t my_rank)
    : lanes_(std::move(lanes)), path_(path), me_(my_rank) {
  peer_.assign(lanes_.size(), RemoteSlot{});
  done_write_.assign(lanes_.size(), 0);
  done_read_.assign(lanes_.size(), 0);
}

Problem OneSidedCheck::prepare() {
  if (lanes_.empty()) return {};
  buf_.assign(lanes_.size() * kSlot, 0);
  if (Problem p = path_.register_buffer(buf_.data(), buf_.size()); !p.empty()) return p;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const std::string r = text('R', me_, lanes_[i].lane), w = text('W', me_, lanes_[i].lane);
    std::memcpy(buf_.data() + i * kSlot + kReadSource, r.data(), r.size());
    std::memcpy(buf_.data() + i * kSlot + kWriteFrom, w.data(), w.size());
  }
  return {};
}

RemoteSlot OneSidedCheck::slot(size_t i) const { return path_.remote_slot(i, buf_.data() + i * kSlot); }

std::string OneSidedCheck::what(size_t i) const {
  const DataLane& l = lanes_[i];
  return "rank " + std::to_string(me_) + " -> rank " + std::to_string(l.peer) + " lane " + std::to_string(l.lane) +
         " (qpn " + hex(l.local_qpn) + ", " + (l.active ? "this side initiated" : "this side accepted") + ")";
}

void OneSidedCheck::bad(size_t i, CheckCounts& c, const std::string& why) {
  ++c.one_sided_bad;
  ++c.one_sided_bad_by_peer[lanes_[i].peer];
  c.problem(what(i) + ": " + why);
}

Problem OneSidedCheck::run(double timeout_s, CheckCounts& c) {
  c.one_sided_checked = true;
  size_t expected = 0;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (peer_[i].addr == 0) {  // the peer has no such connection: the QPN cross-check names it
      bad(i, c, "the peer sent no slot for this lane: no WRITE or READ");
      done_write_[i] = done_read_[i] = 1;
      continue;
    }
    char* s = buf_.data() + i * kSlot;
    const RemoteSlot target{peer_[i].addr + kWriteTarget, peer_[i].rkey, 0};
    const RemoteSlot source{peer_[i].addr + kReadSource, peer_[i].rkey, 0};
    const uint32_t wlen = uint32_t(text('W', me_, lanes_[i].lane).size());
    if (Problem p = path_.post_write(i, kWriteBase + i, s + kWriteFrom, wlen, target); !p.empty()) return p;
    if (Problem p = path_.post_read(i, kReadBase + i, s + kReadInto, kText, source); !p.empty()) return p;
    expected += 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  size_t got = 0;
  while (got < expected) {
    Completion wc[64];
    Problem error;
    const int n = path_.poll(wc, 64, error);
    if (n < 0) return error;
    for (int k = 0; k < n; ++k) {
      const bool is_write = wc[k].wr_id >= kWriteBase && wc[k].wr_id < kReadBase;
      const uint64_t base = is_write ? kWriteBase : kReadBase;
      const size_t i = wc[k].wr_id >= kWriteBase ? size_t(wc[k].wr_id - base) : lanes_.size();
      if (i >= lanes_.size()) {  // a late completion of the SEND check, say
        ++c.one_sided_bad;
        c.problem("rank " + std::to_string(me_) + ": one-sided check: completion with unknown wr_id " +
                  std::to_string(wc[k].wr_id));
        continue;
      }
      std::vector<uint8_t>& seen = is_write ? done_write_ : done_read_;
      const char* op = is_write ? "RDMA WRITE" : "RDMA READ";
      if (seen[i]++) {
        bad(i, c, std::string("a second ") + op + " completion");
        continue;
      }
      ++got;
      if (wc[k].status != 0) {
        bad(i, c, std::string(op) + " completed with status " + std::to_string(wc[k].status) + " (" +
                      path_.status_text(wc[k].status) + ")");
        continue;
      }
      if (is_write) {
        ++c.write_ok;
        continue;
      }
      const char* into = buf_.data() + i * kSlot + kReadInto;
      const std::string got_text(into, strnlen(into, kText));
      const std::string want = text('R', lanes_[i].peer, lanes_[i].lane);
      if (got_text != want) {
        bad(i, c, "RDMA READ brought \"" + got_text + "\", expected \"" + want + "\"");
        continue;
      }
      ++c.read_ok;
    }
    if (got < expected && Clock::now() >= deadline) {
      for (size_t i = 0; i < lanes_.size(); ++i) {
        if (!done_write_[i]) bad(i, c, "no RDMA WRITE completion before the deadline");
        if (!done_read_[i]) bad(i, c, "no RDMA READ completion before the deadline");
      }
      return {};
    }
    if (n == 0) usleep(100);
  }
  return {};
}

void OneSidedCheck::check_landed(CheckCounts& c) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const std::string got(buf_.data() + i * kSlot + kWriteTarget, strnlen(buf_.data() + i * kSlot + kWriteTarget, kText));
    const std::string want = text('W', lanes_[i].peer, lanes_[i].lane);
    if (got == want) {
      ++c.write_landed;
      continue;
    }
    bad(i, c, "the peer's RDMA WRITE is not in this rank's buffer (found \"" + got + "\", expected \"" + want + "\")");
  }
}

}  // namespace wireup::a2a
