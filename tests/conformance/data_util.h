// Helpers of the data-plane conformance cases: which side requests, work requests over the
// AppQp buffer layout, completion checks.
#pragma once

#include <cstring>
#include <string>

#include "tests/conformance/harness.h"

namespace wireup::conf {

// The side that posts (the requester); the other side responds.
enum class Side { from_active, from_passive };
inline std::string side_name(const ::testing::TestParamInfo<Side>& i) {
  return i.param == Side::from_active ? "FromActive" : "FromPassive";
}

struct Ends {
  AppQp& req;
  AppQp& resp;
};
inline Ends ends(Pair& p, Side s) {
  return s == Side::from_active ? Ends{p.active_qp, p.passive_qp} : Ends{p.passive_qp, p.active_qp};
}

// Offsets into AppQp::buf of the one-sided operations: local data, remote target.
inline constexpr size_t kLocal = 1024;
inline constexpr size_t kRemote = 2048;

// A signaled work request with one SGE over [offset, offset + len) of `q`'s buffer.
inline prov::SendWr wr(prov::WrOpcode op, uint64_t id, AppQp& q, size_t offset, uint32_t len) {
  prov::SendWr w;
  w.wr_id = id;
  w.opcode = op;
  w.sge = prov::Sge{q.addr(offset), len, q.mr->lkey()};
  return w;
}

// Aims `w` at [offset, ...) of the peer's buffer.
inline void to_remote(prov::SendWr& w, AppQp& peer, size_t offset) {
  w.remote_addr = peer.addr(offset);
  w.rkey = peer.mr->rkey();
}

inline void fill(AppQp& q, size_t offset, size_t len, uint8_t first) {
  for (size_t i = 0; i < len; ++i) q.buf[offset + i] = static_cast<uint8_t>(first + i);
}

inline void expect_wc(const prov::WorkCompletion& wc, uint64_t wr_id, int status, int opcode) {
  EXPECT_EQ(wc.wr_id, wr_id);
  EXPECT_EQ(wc.status, status) << "wr_id " << wc.wr_id;
  // The opcode of an error completion is undefined (verbs): only a success's is checked.
  if (status == prov::wc_status::success) {
    EXPECT_EQ(wc.opcode, opcode) << "wr_id " << wc.wr_id;
  }
}

}  // namespace wireup::conf
