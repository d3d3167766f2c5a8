// wireup_churn's parts shared by its backends (the live stack, wireup_churn.cc; the simulated
// fabric, wireup_churn_sim.cc): options, counts, a rank's transport, the backend interface.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "wireup/wireup.h"

namespace wireup_churn {

struct Options {
  uint32_t ranks = 4;
  uint64_t cycles = 200;
  uint64_t phase = 50;
  uint64_t restart_every = 25;     // 0: never
  uint64_t rss_growth_kib = 4096;  // allowed RSS growth after the first phase
  const char* config = nullptr;
  std::string provider = "rdma";  // or "sim": the simulated fabric, one node per rank
  uint32_t node = 0;              // 1 or 2: this process holds that node's ranks (PairLink)
  std::string pair_dir, pair_tag = "churn";
};
// Fills `o` from the command line; false (with the reason on stderr) on a bad argument.
bool parse(int argc, char** argv, Options& o);

// Failures of the run: each printed once, counted; the exit status says whether any came.
inline int failures = 0;
[[gnu::format(printf, 1, 2)]] inline void fail(const char* fmt, ...) {
  std::fputs("wireup_churn: FAILED: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  ++failures;
}

// What the provider holds for the process (the kernel's counts by pid; the sim's live
// objects), its open fds and its RSS.
struct Counts {
  long cm_id = 0, qp = 0, cq = 0, pd = 0, mr = 0;
  long fds = 0;
  long rss_kib = 0;
  double virtual_s = -1;  // sim: the fabric's virtual clock (time-bound state ages by it)
  std::string str() const;
  bool same_objects(const Counts& o) const {
    return cm_id == o.cm_id && qp == o.qp && cq == o.cq && pd == o.pd && mr == o.mr;
  }
};
// Open fds and RSS of this process, into `c`.
void measure_process(Counts& c);

// One rank's transport: every QP it owns (made by the factory), each destroyed once: when
// handed back unused (release) or when its lane closes.
struct Transport {
  std::set<ibv_qp*> live;
  std::map<uint64_t, ibv_qp*> lanes;  // (peer << 16 | lane) -> its handed-over QP
  uint64_t created = 0, destroyed = 0, double_release = 0;

  virtual ~Transport() = default;
  virtual ibv_qp* make_qp() = 0;           // errno set when null
  virtual int destroy_qp(ibv_qp* q) = 0;  // 0 or an errno

  void destroy(ibv_qp* q, const char* why);
  static int create(void* arg, const wireup_qp_request_t* req, ibv_qp** out);
  static void release(void* arg, const wireup_qp_request_t* req, ibv_qp* qp);
};

// Where the ranks run: the contexts, each rank's transport, the drive loop, and the counts.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool open(const Options& o) = 0;
  virtual wireup_context_t* context(uint32_t rank) = 0;
  virtual std::unique_ptr<Transport> transport(uint32_t rank) = 0;
  // Progresses every handle until `until()` holds; false (a failure counted) when its bound
  // passes first.
  virtual bool drive(const std::vector<wireup_t*>& ws, const std::function<bool()>& until) = 0;
  virtual Counts measure() = 0;
  virtual void close() = 0;
};

// The ranks split over the two guests of scripts/vm/pair.sh (wireup_churn_pair.cc): node 1
// holds the even ranks, node 2 the odd ones, so every ring pair crosses the link; one process
// per node. They meet through files in the pair directory: D/T.addr.N, node N's ranks'
// addresses with a generation (written again after a restart), and D/T.step.N, the last step
// node N reached (each cycle's start, READY and IDLE are steps both reach before either goes on).
struct PairLink {
  std::string dir, tag;
  uint32_t node = 0;  // 1 or 2; 0: one process holds every rank
  bool local(uint32_t rank) const { return node == 0 || rank % 2 == node - 1; }
  bool publish(const std::map<uint32_t, std::vector<uint8_t>>& addrs, uint64_t gen) const;
  // The other node's addresses once its file is complete with generation >= gen.
  bool read(std::map<uint32_t, std::vector<uint8_t>>& addrs, uint64_t gen) const;
  void arrive(uint64_t step) const;
  bool reached(uint64_t step) const;  // the other node arrived at `step` (or past it)
  std::string file(const char* what, uint32_t n) const;
};

std::unique_ptr<Backend> make_rdma_backend();
std::unique_ptr<Backend> make_sim_backend();  // null where the build has no simulator

}  // namespace wireup_churn
