// The three measurements, each loop the one perftest runs for the test it compares with
// (perftest's perftest_resources.c: run_iter_bw for ib_write_bw, run_iter_lat_write for
// ib_write_lat, run_iter_lat for ib_read_lat), with the same wire settings by default
// (dp_bench.h: Settings), so that a gap between the two is the QP, not the loop.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "dp_bench.h"
#include "ticks.h"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kCycle = 4096;     // small messages go round a 4 KiB buffer, as perftest's
constexpr size_t kCacheLine = 64;   // addresses step by whole cache lines
constexpr double kMiB = 1024.0 * 1024.0;


// A page-aligned buffer registered for everything the tests do to it, local and remote.
class Buffer {
 public:
  Buffer(ibv_pd* pd, size_t len) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, len) != 0) throw std::runtime_error("posix_memalign failed");
    mem_.reset(static_cast<char*>(p));
    std::memset(p, 0, len);
    mr_ = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr_ == nullptr) throw std::runtime_error(std::string("ibv_reg_mr: ") + std::strerror(errno));
  }
  ~Buffer() { (void)ibv_dereg_mr(mr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return mem_.get(); }
  uint32_t lkey() const { return mr_->lkey; }
  RemoteBuffer remote() const { return {reinterpret_cast<uint64_t>(mem_.get()), mr_->rkey}; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> mem_;
  ibv_mr* mr_ = nullptr;
};

// Names the test and this side's QP: which side initiated decides its access flags today.
[[noreturn]] void failed(const Link& l, const char* test, const std::string& what) {
  char qpn[16];
  std::snprintf(qpn, sizeof qpn, "0x%x", l.qp->qp_num);
  throw std::runtime_error(std::string(test) + " on the " + (l.active ? "initiating" : "accepting") + " side's QP " +
                           qpn + ": " + what);
}

void post(const Link& l, const char* test, ibv_send_wr& wr) {
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(l.qp, &wr, &bad); rc != 0) failed(l, test, std::string("ibv_post_send: ") + std::strerror(rc));
}

// Polls until one completion; a completion in error names its status (a WRITE or READ into a
// QP without the remote access flag ends with "remote invalid request error").
void wait_one(const Link& l, const char* test) {
  ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(l.cq, 1, &wc)) == 0) {
  }
  if (n < 0) failed(l, test, "ibv_poll_cq failed");
  if (wc.status != IBV_WC_SUCCESS) failed(l, test, std::string("completion ") + ibv_wc_status_str(wc.status));
}

size_t buffer_size(size_t size) { return std::max(size, kCycle); }
size_t step(size_t size) { return (size + kCacheLine - 1) / kCacheLine * kCacheLine; }

// perftest's latency report: consecutive post times (in ticks), sorted; rtt_factor 2 for a
// ping-pong.
LatResult lat_stats(const std::vector<uint64_t>& t, double us_per_tick, size_t size, double rtt_factor) {
  LatResult r;
  r.size = size;
  r.iters = t.size();
  std::vector<double> d;
  for (size_t i = 0; i + 1 < t.size(); ++i) d.push_back(double(t[i + 1] - t[i]) * us_per_tick / rtt_factor);
  if (d.empty()) return r;
  std::sort(d.begin(), d.end());
  double sum = 0;
  for (double x : d) sum += x;
  r.t_min = d.front();
  r.t_max = d.back();
  r.t_typical = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2;
  r.t_avg = sum / double(d.size());
  r.t_p99 = d[std::min(d.size() - 1, size_t(double(d.size()) * 0.99))];
  return r;
}

}  // namespace

BwResult write_bw(Link& l, Oob& oob, bool client, size_t size, uint64_t iters, const Settings& s) {
  Buffer buf(l.pd, buffer_size(size));
  const RemoteBuffer peer = oob.swap(buf.remote());
  oob.barrier();  // the target's buffer is registered
  BwResult r{size, iters, 0, 0};
  if (client) {
    const bool cycle = size <= kCycle / 2;
    const size_t slots = cycle ? kCycle / step(size) : 1;
    ibv_sge sge{0, uint32_t(size), buf.lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.rkey = peer.rkey;
    uint64_t posted = 0, completed = 0;
    Clock::time_point first{}, last{};
    ibv_wc wc[16];
    while (posted < iters || completed < iters) {
      while (posted < iters && posted - completed < s.tx_depth) {
        const size_t off = cycle ? (posted % slots) * step(size) : 0;
        sge.addr = reinterpret_cast<uint64_t>(buf.data()) + off;
        wr.wr.rdma.remote_addr = peer.addr + off;
        // One completion every cq_mod WRs and one for the last, as perftest signals.
        const bool signal = posted % s.cq_mod == s.cq_mod - 1 || posted == iters - 1;
        wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
        wr.wr_id = posted;
        if (posted == 0) first = Clock::now();
        post(l, "write_bw", wr);
        ++posted;
      }
      const int n = ibv_poll_cq(l.cq, 16, wc);
      if (n < 0) failed(l, "write_bw", "ibv_poll_cq failed");
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != IBV_WC_SUCCESS)
          failed(l, "write_bw", std::string("completion ") + ibv_wc_status_str(wc[k].status));
        completed = std::min<uint64_t>(wc[k].wr_id + 1, iters);  // a signalled WR completes those before it
        if (completed == iters) last = Clock::now();
      }
    }
    const double secs = std::chrono::duration<double>(last - first).count();
    r.mib_per_s = double(size) * double(iters) / secs / kMiB;
    r.mpps = double(iters) / secs / 1e6;
  }
  oob.barrier();  // the target keeps its buffer registered until the last write landed
  return r;
}

LatResult write_lat(Link& l, Oob& oob, bool client, size_t size, uint64_t iters, const Settings& s) {
  // [0, B): what we write from; [B, 2B): where the peer writes, its last byte polled.
  const size_t half = buffer_size(size);
  Buffer buf(l.pd, 2 * half);
  const RemoteBuffer peer = oob.swap(buf.remote());
  oob.barrier();
  volatile char* poll_byte = buf.data() + half + size - 1;
  char* post_byte = buf.data() + size - 1;
  ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), uint32_t(size), buf.lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (size <= s.lat_inline ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = peer.addr + half;
  wr.wr.rdma.rkey = peer.rkey;
  std::vector<uint64_t> t(iters);
  const TickScale scale;
  // The client posts first; each side then waits for the peer's n-th write before its own.
  for (uint64_t n = 1; n <= iters; ++n) {
    if (!(n == 1 && client)) {
      // Spin on memory as perftest does; the clock is read only after 64 Ki turns.
      Clock::time_point give_up{};
      for (uint32_t spins = 1; *poll_byte != char(client ? n - 1 : n); ++spins) {
        if (spins % 65536 != 0) continue;
        if (give_up == Clock::time_point{}) give_up = Clock::now() + std::chrono::seconds(30);
        else if (Clock::now() > give_up) failed(l, "write_lat", "no write from the peer within 30 s");
      }
    }
    t[n - 1] = ticks();
    *post_byte = char(n);
    post(l, "write_lat", wr);
    wait_one(l, "write_lat");
  }
  const double us_per_tick = scale.us_per_tick();
  oob.barrier();
  return lat_stats(t, us_per_tick, size, 2.0);
}

LatResult read_lat(Link& l, Oob& oob, bool client, size_t size, uint64_t iters) {
  Buffer buf(l.pd, 2 * buffer_size(size));
  const RemoteBuffer peer = oob.swap(buf.remote());
  oob.barrier();
  LatResult r{size, iters, 0, 0, 0, 0, 0};
  if (client) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), uint32_t(size), buf.lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_RDMA_READ, wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    std::vector<uint64_t> t(iters);
    const TickScale scale;
    for (uint64_t n = 0; n < iters; ++n) {
      t[n] = ticks();
      post(l, "read_lat", wr);
      wait_one(l, "read_lat");
    }
    r = lat_stats(t, scale.us_per_tick(), size, 1.0);
  }
  oob.barrier();
  return r;
}

}  // namespace dp
