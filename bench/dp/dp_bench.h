// dp_bench: the data path on a QP wireup handed over, measured the way perftest measures it
// (ib_write_bw, ib_write_lat, ib_read_lat), so the two compare in the same VM boot
// (bench/scripts/dp-vs-perftest.sh).
//
// Files:
//   dp_bench.cc     main(): options, MPI (the out-of-band channel only), the report lines
//   dp_connect.cc   one RC connection between the two ranks through wireup's C API, on this
//                   process's own PD, CQ and QP (as a transport makes them)
//   dp_tests.cc     the three measurements on that QP, perftest's loops and statistics
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "wireup/wireup.h"

namespace dp {

// What a test needs to reach the peer's buffer: exchanged out of band before each test.
struct RemoteBuffer {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

// Wire settings as perftest's defaults have them (perftest_parameters.h): DEF_TX_BW 128,
// DEF_CQ_MOD 100, DEF_INLINE_WRITE 220 for the latency tests and no inline for bandwidth.
struct Settings {
  uint32_t tx_depth = 128;  // WRs in flight in write_bw
  uint32_t cq_mod = 100;    // one signalled WR every cq_mod in write_bw
  uint32_t lat_inline = 220;  // write_lat: inline up to this size
};

// This rank's connection to the other: what wireup handed over, and the verbs objects it lives on.
struct Link {
  wireup_context_t* ctx = nullptr;
  wireup_t* w = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;  // from wireup's results; ours to destroy
  bool active = false;   // this side initiated the connection
  uint32_t send_depth = 0;  // the factory's max_send_wr
  uint32_t max_inline = 0;  // asked of the factory; then what ibv_create_qp gave
};

// The QP as ibv_query_qp answers after wireup: the attributes that decide the wire.
struct QpFacts {
  int path_mtu_bytes = 0;
  unsigned timeout = 0, retry_cnt = 0, rnr_retry = 0, max_rd_atomic = 0, max_dest_rd_atomic = 0;
  unsigned access = 0, min_rnr_timer = 0;
  std::string text() const;
};

// The out-of-band channel between the two ranks (MPI in dp_bench.cc).
struct Oob {
  virtual ~Oob() = default;
  virtual std::vector<uint8_t> swap(const std::vector<uint8_t>& mine) = 0;  // ours out, the peer's in
  virtual void barrier() = 0;                                               // without spinning on a CPU
  RemoteBuffer swap(RemoteBuffer mine);
};

// dp_connect.cc. Throws std::runtime_error naming the failing call.
// `overrides`: "section.key=value" strings for the wireup context (kept alive by the caller).
void connect(Link& l, Oob& oob, int rank, uint64_t job_key, const std::string& config_file,
             const std::vector<std::string>& overrides, uint32_t send_depth,
             uint32_t max_inline);
QpFacts query(const Link& l);
void close(Link& l);

// dp_tests.cc
struct BwResult {
  size_t size = 0;
  uint64_t iters = 0;
  double mib_per_s = 0;   // size * iters / (last completion - first post), MiB = 2^20 B
  double mpps = 0;
};
struct LatResult {
  size_t size = 0;
  uint64_t iters = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_p99 = 0;  // us
};

// `client`: the side that posts (and, in write_lat, posts first). Throws std::runtime_error
// on a failed post or a completion in error (with its status), naming the test.
BwResult write_bw(Link& l, Oob& oob, bool client, size_t size, uint64_t iters, const Settings& s);
LatResult write_lat(Link& l, Oob& oob, bool client, size_t size, uint64_t iters, const Settings& s);
LatResult read_lat(Link& l, Oob& oob, bool client, size_t size, uint64_t iters);

}  // namespace dp
