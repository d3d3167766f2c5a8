// wireup_a2a, the all-to-all runner: connects every pair of ranks with `lanes` connections
// through the wireup engine, checks every connection, and summarises the job.
//
// This header and the files of the rdma path see include/wireup/ and nothing of src/ (the
// build compiles them without src/ on the include path).
//
// Files:
//   wireup_a2a.cc          main(): options, then the MPI or the sim driver
//   wireup_a2a_options.cc  command line -> Options
//   wireup_a2a_bootstrap.cc  --bootstrap: the PMIx driver, or the MPI one (the fall back)
//   wireup_a2a_mpi.cc      one rank per process under mpirun (provider rdma), through the
//                          public API only (include/wireup/wireup.hpp), as a transport would
//   wireup_a2a_pmix.cc     the same with PMIx as the out-of-band channel and no MPI call
//   wireup_a2a_driver.cc   what those two share (timing, the job key, the victim)
//   wireup_a2a_verbs.cc    that rank's own PD, CQ and QPs (libibverbs) and its report
//   wireup_a2a_sim.cc      N virtual ranks in one process on the sim fabric (internals:
//   wireup_a2a_sim_setup.cc  wireup_a2a_sim.h; the sim is not part of the public API)
//   wireup_a2a_check.cc    the QPN cross-check and the SEND both ways, per rank
//   wireup_a2a_onesided.cc an RDMA WRITE and an RDMA READ each way, per rank (rdma path; the
//                          sim reports it as not run)
//   wireup_a2a_report.cc   what one rank contributes to the summary, and its wire format
//   wireup_a2a_summary.cc  the job summary: human text and --json
//   wireup_a2a_pattern.cc  --mode on-demand: who asks whom (--pattern), one rank's lane ledger
//   wireup_a2a_ondemand.cc   the ledger on the public API: asks, lane events, the check
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "wireup/wireup.h"

namespace wireup::a2a {

// A value, or the sentence saying why there is none.
template <class T>
class Expected {
 public:
  Expected(T v) : v_(std::move(v)) {}  // NOLINT: implicit, as a return value
  static Expected failure(std::string why) {
    Expected e;
    e.why_ = std::move(why);
    return e;
  }
  explicit operator bool() const { return v_.has_value(); }
  T& operator*() { return *v_; }
  const T& operator*() const { return *v_; }
  T* operator->() { return &*v_; }
  const T* operator->() const { return &*v_; }
  const std::string& error() const { return why_; }

 private:
  Expected() = default;
  std::optional<T> v_;
  std::string why_;
};
// "" when a step worked, else why it did not.
using Problem = std::string;

inline constexpr size_t kPhases = WIREUP_PHASE_COUNT;

// ---- options (wireup_a2a_options.cc) ------------------------------------------------------
struct Options {
  std::string provider = "rdma";             // rdma (under mpirun) | sim (one process)
  std::string bootstrap = "auto";            // rdma: auto (pmix if a server is there) | pmix | mpi
  uint32_t sim_ranks = 0;                    // --ranks N: virtual ranks (sim only)
  std::string sim_latency = "hardware";      // --latency: hardware | rxe_vm | zero
  uint64_t sim_seed = 1;
  std::string config_file;                   // --config; empty = WIREUP_CONFIG, search path
  std::vector<std::string> overrides;        // "section.key=value": --lanes, --set, --wireup-timeout-ms
  std::string addr;                          // --addr; empty = found from the device's port
  bool json = false;
  bool verify = true;
  bool progress = true;
  uint64_t job_key = 0;                      // 0 = random, from rank 0
  int kill_rank = -1;                        // fault injection: this rank dies mid-wireup
  int64_t kill_after_ms = -1;                //   ... this long after start
  int64_t kill_after_conns = -1;             //   ... or once it has this many connections
  std::string run_cmd;                       // --run: a command started mid-wireup (wireup_a2a_trigger.h)
  int64_t run_after_conns = 1;               //   ... once the running rank has this many connections
  int run_rank = 0;                          //   ... by this rank
  double verify_timeout_s = 30;              // SEND check: completions must arrive by then
  int hold_s = 0;                            // --hold-s: connections kept this long after the summary
  int into = -1;                             // --into R: every other rank connects to rank R only (an incast)
  bool on_demand = false;                    // --mode on-demand (engine.mode = on_demand)
  bool mode_given = false;                   //   --mode was on the command line
  std::string pattern = "all";               // --pattern: all | ring:K | random:K (on demand)
};

extern const char* const kUsage;
// The options, or the sentence naming the offending option.
Expected<Options> parse_options(int argc, char** argv);
// Whether the run is on demand, from the configured engine.mode (what config_value prints,
// quoted or not), which the environment may have set; an explicit --mode must agree with it.
Expected<bool> engine_mode(const Options& o, const std::string& configured);

// ---- per-rank checks (wireup_a2a_check.cc) ------------------------------------------------
// What a rank recorded for one (peer, lane): its own QPN and the peer's as the CM carried it;
// zeros when the lane is not established.
struct QpnPair {
  uint32_t local = 0;
  uint32_t remote = 0;
};
// QPNs are 24 bits: a lane lost since it connected (wireup_result_t.lost: its rail removed,
// say) carries this bit on its local QPN in the cross-check's tables, so that both ends leave
// it out of the data checks whichever end learnt of the loss first.
inline constexpr uint32_t kLostBit = 1u << 31;

struct CheckCounts {
  uint64_t qpn_ok = 0;        // both sides established, QPNs crossed
  uint64_t qpn_bad = 0;       // both established, QPNs do not cross
  uint64_t half_open = 0;     // established on one side only
  uint64_t send_ok = 0;       // our SEND completed successfully (RC: the peer received it)
  uint64_t recv_ok = 0;       // the peer's SEND arrived on the right QP with the right text
  uint64_t data_bad = 0;      // completion errors, wrong QP or text, or missing by the deadline
  uint64_t errors = 0;        // the engine or a check itself failed on some rank
  uint64_t pattern_dup = 0;   // on demand: a (peer, lane) connected more than once on a rank
  uint64_t pattern_extra = 0; // on demand: connected with a rank neither end asked for
  bool data_checked = false;
  // The one-sided check (RDMA WRITE and READ both ways, wireup_a2a_onesided.cc), per rank:
  uint64_t write_ok = 0;      // our WRITE into the peer completed successfully
  uint64_t write_landed = 0;  // the peer's WRITE is in our buffer with its text
  uint64_t read_ok = 0;       // our READ completed and brought the peer's text
  uint64_t one_sided_bad = 0; // completion errors, wrong text, or missing by the deadline
  bool one_sided_checked = false;
  std::string one_sided_skipped;  // why it did not run on this path ("" if it ran)
  std::map<uint32_t, uint64_t> one_sided_bad_by_peer;  // peer -> bad WRITEs/READs on its lanes
  std::vector<std::string> problems;  // the first few, for the summary
  void problem(std::string s);
};
// Compares what `me` recorded about (peer, lane) with what the peer recorded about (me, lane)
// (the QPNs of a lost lane too: it did connect). Returns whether either end has it lost.
bool cross_check(uint32_t me, uint32_t peer, uint32_t lane, QpnPair mine, QpnPair theirs,
                 CheckCounts& c);

// One established connection as the SEND check sees it.
struct DataLane {
  uint32_t peer = 0, lane = 0, local_qpn = 0;
  bool active = false;  // this rank initiated the connection (unknown on the sim: false)
};
struct Completion {
  uint64_t wr_id = 0;
  int status = 0;  // 0 = success (IBV_WC_SUCCESS)
  uint32_t byte_len = 0;
  uint32_t qp_num = 0;
};
// Where a peer may WRITE into or READ from: an address in its registered buffer and its rkey.
struct RemoteSlot {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t pad = 0;  // a fixed 16-byte form for the exchanges
};
static_assert(sizeof(RemoteSlot) == 16);
// The verbs a DataCheck needs, on whatever owns the QPs: the transport's own (verbs) or the
// sim provider's. Each returns "" or why it failed.
class DataPath {
 public:
  virtual ~DataPath() = default;
  virtual Problem register_buffer(char* buf, size_t len) = 0;
  virtual Problem post_recv(size_t lane_index, uint64_t wr_id, char* addr, uint32_t len) = 0;
  virtual Problem post_send(size_t lane_index, uint64_t wr_id, const char* addr, uint32_t len) = 0;
  // Up to n completions into wc; -1 on failure (error says why).
  virtual int poll(Completion* wc, int n, Problem& error) = 0;
  // One-sided verbs into the peer's registered buffer (register_buffer registers with remote
  // write and read access). A path without them says why in one_sided_missing(): the check
  // is then reported as not run, never as passed.
  virtual std::string status_text(int status) const { return "status " + std::to_string(status); }
  virtual std::string one_sided_missing() const { return "this data path has no RDMA WRITE/READ"; }
  // `lane`: the lane the slot's address travels over (its rail's registration has the rkey).
  virtual RemoteSlot remote_slot(size_t lane, const char* addr) const {
    (void)lane;
    return {reinterpret_cast<uint64_t>(addr), 0};
  }
  virtual Problem post_write(size_t, uint64_t, const char*, uint32_t, RemoteSlot) { return one_sided_missing(); }
  virtual Problem post_read(size_t, uint64_t, char*, uint32_t, RemoteSlot) { return one_sided_missing(); }
};

// The SEND both ways for one rank: one receive per connection, then one SEND per connection
// carrying "<sender rank>:<lane>", then poll the shared CQ.
class DataCheck {
 public:
  DataCheck(std::vector<DataLane> lanes, DataPath& path, uint32_t my_rank);
  Problem post_recvs();
  Problem post_sends();
  // Polls once; true when every completion arrived.
  Expected<bool> poll(CheckCounts& c);
  // Whatever is still missing is counted as data_bad.
  void give_up(CheckCounts& c);
  // Polls until every completion arrived or `timeout_s` passed (then gives up on the rest).
  Problem wait(double timeout_s, CheckCounts& c);
  size_t size() const { return lanes_.size(); }

 private:
  std::vector<DataLane> lanes_;
  DataPath& path_;
  uint32_t me_;
  std::vector<char> buf_;
  std::vector<uint8_t> got_recv_, got_send_;
  size_t recvs_ = 0, sends_ = 0;
};

// RDMA WRITE and READ both ways on every connection (wireup_a2a_onesided.cc), after the SEND
// check: each rank WRITEs "W<rank>:<lane>" into the peer's slot and READs the peer's
// "R<peer>:<lane>" back, on every lane; the exchange of slots is the driver's.
class OneSidedCheck {
 public:
  OneSidedCheck(std::vector<DataLane> lanes, DataPath& path, uint32_t my_rank);
  // Registers the buffer, writes the READ texts; "" or why not.
  Problem prepare();
  // Our slot for lane i, to send to that lane's peer.
  RemoteSlot slot(size_t i) const;
  // The peer's slot for lane i (an all-zero slot: the peer has no such connection).
  void set_peer_slot(size_t i, RemoteSlot s) { peer_[i] = s; }
  // One WRITE and one READ per lane, then polls until every completion came or `timeout_s`
  // passed; counts and names what failed.
  Problem run(double timeout_s, CheckCounts& c);
  // After every rank's run() (a barrier): the peers' WRITEs in our buffer.
  void check_landed(CheckCounts& c);
  size_t size() const { return lanes_.size(); }

 private:
  std::string what(size_t i) const;
  void bad(size_t i, CheckCounts& c, const std::string& why);
  std::vector<DataLane> lanes_;
  DataPath& path_;
  uint32_t me_;
  std::vector<char> buf_;
  std::vector<RemoteSlot> peer_;
  std::vector<uint8_t> done_write_, done_read_;
};

// ---- what one rank reports (wireup_a2a_report.cc) -----------------------------------------
// One rail's share of a rank's wireup (the engine's stats JSON, "rails"): each rail has its own
// windows (cm.connect_window, cm.qp_window), so their peaks are per rail too.
struct RailTally {
  uint64_t connects_started = 0, retries = 0, established = 0, rejects_received = 0;
  uint64_t connect_peak = 0, qp_peak_active = 0, qp_peak_passive = 0;  // summed: the max
};

struct RankReport {
  uint32_t rank = 0;
  std::string device;
  // "<rail>:<device>" -> this rank's endpoints on that rail (several rails: device.rails)
  std::map<std::string, uint64_t> lanes_by_rail;
  // rail -> what it carried; and the connect window's peak over every rail together
  std::map<uint32_t, RailTally> rails;
  uint64_t connect_peak_total = 0;
  double wireup_s = 0;             // start() -> done(), this rank
  double user_s = 0, sys_s = 0;    // CPU of this process meanwhile, user and system (0 on sim)
  uint64_t planned = 0;            // (peer, lane) slots of this rank
  uint64_t active_to_live = 0;     // established as the active side, peer alive: counts a connection once
  uint64_t lost = 0;               // established with a rank that died afterwards
  // established with a live rank, then gone (wireup_result_t.lost): as the active side (counts a
  // connection once), and every endpoint by "<rail>:<device>"
  uint64_t lost_after = 0;
  std::map<std::string, uint64_t> lost_by_rail;
  uint64_t connects_started = 0, retries = 0, failed = 0, superseded = 0, strangers = 0, events = 0;
  std::map<int, uint64_t> rejects_received;
  std::map<std::string, uint64_t> rejects_sent, failures, ece_outcomes;
  std::array<std::vector<int64_t>, kPhases> samples;  // ns, by wireup_phase_t
  // peer -> failure kind ("rejected(35)", "timed_out", ...) -> lanes; the established lanes of
  // a dead peer are there too, as "disconnected" (its DREQ arrived) or "lost" (not yet)
  std::map<uint32_t, std::map<std::string, uint64_t>> errors_by_peer;
  CheckCounts check;
  // on demand: lanes this rank asked for, their connect() -> READY times (ns), and the
  // engine's crossing counters (requests refused as the kept side / withdrawn as the other)
  uint64_t lanes_asked = 0, crossed_won = 0, crossed_yielded = 0;
  std::vector<int64_t> ask_to_ready;
};

// The per-rail part of the engine's stats JSON (wireup_stats_json: "rails", "window_peaks")
// into r.rails and r.connect_peak_total; a JSON without them leaves both empty.
void read_rail_stats(const std::string& stats_json, RankReport& r);

// A line-oriented text form, so that MPI can gather reports of any size.
std::string serialize(const RankReport& r);
Expected<RankReport> deserialize(std::string_view text);

// ---- the job summary (wireup_a2a_summary.cc) ----------------------------------------------
struct JobInfo {
  uint32_t ranks = 0;
  uint32_t lanes = 0;
  std::string provider;
  std::string mode;                // the bootstrap ("mpi", "pmix") or "sim, latency model ..."
  double wall_s = 0;               // first start to last done (max over ranks)
  bool verified = false;           // checks ran
  std::set<uint32_t> dead;         // ranks killed on purpose (--kill-rank)
  int into = -1;                   // --into: the one rank every other rank connects to
  bool on_demand = false;          // --mode on-demand: `pattern` says which pairs were asked
  struct Pattern {
    std::string text;                  // "random:3"
    uint64_t pairs = 0, crossing = 0;  // asked in the job; asked by both ends
    uint64_t pairs_with_dead = 0;      // asked pairs with a --kill-rank victim in them
    std::set<uint32_t> asked_dead;     // live ranks that asked a victim
  };
  Pattern pattern{};
};

struct PhaseStats {
  size_t n = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
};

struct Summary {
  JobInfo job;
  std::string device;              // the devices ranks used, "rxe0" or "mlx5_0,mlx5_1"
  std::map<std::string, uint64_t> lanes_by_rail;  // "<rail>:<device>" -> endpoints, every rank
  std::map<uint32_t, RailTally> rails;  // counts summed over the ranks, peaks their max
  uint64_t connect_peak_total = 0;      // the most connects one rank had in flight, all rails
  uint64_t planned = 0;            // pairs x lanes
  uint64_t connections = 0;        // established between live ranks (each counted once)
  uint64_t failed = 0;             // planned - connections
  uint64_t lost = 0;               // established, then the peer died
  uint64_t lost_after = 0;         // established with a live peer, then gone (its rail removed, ...)
  std::map<std::string, uint64_t> lost_by_rail;  // "<rail>:<device>" -> endpoints of those
  double conn_per_s = 0;
  std::array<PhaseStats, kPhases> phases{};
  uint64_t connects_started = 0, retries = 0, strangers = 0, superseded = 0, events = 0;
  std::map<int, uint64_t> rejects_received;
  std::map<std::string, uint64_t> rejects_sent, failures, ece_outcomes;
  // failed peer -> ranks reporting it -> lanes by kind, summed over the reporters
  std::map<uint32_t, std::pair<std::set<uint32_t>, std::map<std::string, uint64_t>>> failed_peers;
  CheckCounts check;               // summed over ranks
  // (reporting rank, peer) -> bad one-sided operations that rank counted on its lanes to peer
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> one_sided_bad_pairs;
  double user_s = 0, sys_s = 0;    // summed over ranks
  double slowest_rank_s = 0;
  uint32_t slowest_rank = 0;
  // on demand: lanes asked (summed over ranks: a crossing pair's lanes count on both ends),
  // connect() -> READY by the asker, requests that crossed on the wire
  uint64_t lanes_asked = 0, crossed_won = 0, crossed_yielded = 0;
  PhaseStats ask_to_ready;
};

Summary summarize(const JobInfo& job, const std::vector<RankReport>& reports);
std::string human(const Summary& s);
std::string to_json(const Summary& s);
// 0: every planned connection established and (if checked) verified; 3: some connections
// failed but every established one checks out; 1: a check failed.
int exit_status(const Summary& s);

// The summary on stdout; with `json`, the JSON object there and the human text on stderr.
void print_summary(const Summary& s, bool json);

// Progress line on stderr: "[a2a] 1234/2016 connections, 3 retries, 12.3 s".
void progress_line(uint64_t established, uint64_t planned, uint64_t retries, double seconds);

// ---- drivers ----------------------------------------------------------------------------
int run_mpi(const Options& o, int& argc, char**& argv);  // wireup_a2a_mpi.cc
// The bootstrap --bootstrap asks for, or MPI when PMIx cannot serve (wireup_a2a_bootstrap.cc).
int run_rdma(const Options& o, int& argc, char**& argv);
int run_sim(const Options& o);                            // wireup_a2a_sim.cc

}  // namespace wireup::a2a
