// dp_bench -- RDMA WRITE bandwidth, WRITE latency and READ latency on the QP wireup connects
// between two ranks, measured as perftest measures them (dp_bench.h).
//
//   mpirun -np 2 dp_bench [--test all|write_bw|write_lat|read_lat] [--sizes 64,1024,65536]
//   dp_bench --oob-listen PORT ... & dp_bench --oob-connect HOST:PORT ...   (no launcher)
//          [--bw-iters 5000] [--lat-iters 1000] [--lat-size 2] [--tx-depth 128] [--cq-mod 100]
//          [--lat-inline 220]
//          [--client initiator|0|1] [--idle spin|sleep] [--config FILE] [--set section.key=value]...
//
// One line per result on the client rank's stdout, "dp_bench <test> key=value ...", and one
// "dp_bench qp ..." line per rank with what ibv_query_qp says of its QP. MPI carries only the
// addresses, the rkeys and the barriers (never the device: shared memory); with --oob-listen /
// --oob-connect one TCP connection does (tcp_oob.h), and MPI is never initialised.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>
#include <stdexcept>

#include "dp_bench.h"
#include "tcp_oob.h"

namespace {

struct Options {
  std::string test = "all";
  std::vector<size_t> sizes{64, 1024, 4096, 65536};
  uint64_t bw_iters = 5000, lat_iters = 1000;  // perftest: DEF_ITERS_WB, DEF_ITERS
  size_t lat_size = 2;                         // perftest: DEF_SIZE_LAT
  int client = -1;  // -1: the side that initiated the connection, as perftest's client does
  bool idle_sleep = false;
  bool cq_mod_given = false;
  dp::Settings s;
  std::string config;
  std::vector<std::string> sets;
  int oob_listen = -1;      // --oob-listen PORT: rank 0 of a launcher-less pair
  std::string oob_connect;  // --oob-connect HOST:PORT: rank 1
};

uint64_t number(const char* opt, const char* v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') throw std::invalid_argument(std::string(opt) + ": '" + v + "' is not a number");
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(a + " wants a value (or is unknown)");
    const char* v = argv[++i];
    if (a == "--test") {
      o.test = v;
      if (o.test != "all" && o.test != "write_bw" && o.test != "write_lat" && o.test != "read_lat")
        throw std::invalid_argument("--test: '" + o.test + "' is not all, write_bw, write_lat or read_lat");
    } else if (a == "--sizes") {
      o.sizes.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.sizes.push_back(number("--sizes", x.c_str()));
      if (o.sizes.empty()) throw std::invalid_argument("--sizes: no size");
    } else if (a == "--bw-iters") o.bw_iters = number("--bw-iters", v);
    else if (a == "--lat-iters") o.lat_iters = number("--lat-iters", v);
    else if (a == "--lat-size") o.lat_size = number("--lat-size", v);
    else if (a == "--tx-depth") o.s.tx_depth = uint32_t(number("--tx-depth", v));
    else if (a == "--lat-inline") o.s.lat_inline = uint32_t(number("--lat-inline", v));
    else if (a == "--cq-mod") o.s.cq_mod = uint32_t(number("--cq-mod", v)), o.cq_mod_given = true;
    else if (a == "--client") o.client = std::string(v) == "initiator" ? -1 : int(number("--client", v));
    else if (a == "--idle") {
      if (std::string(v) != "spin" && std::string(v) != "sleep") throw std::invalid_argument("--idle: spin or sleep");
      o.idle_sleep = std::string(v) == "sleep";
    }
    else if (a == "--oob-listen") o.oob_listen = int(number("--oob-listen", v));
    else if (a == "--oob-connect") o.oob_connect = v;
    else if (a == "--config") o.config = v;
    else if (a == "--set") o.sets.push_back(v);
    else throw std::invalid_argument("unknown option " + a);
  }
  if (o.client > 1) throw std::invalid_argument("--client: initiator, 0 or 1");
  if (o.bw_iters < 5 || o.lat_iters < 5) throw std::invalid_argument("--bw-iters/--lat-iters: at least 5");
  if (o.s.tx_depth == 0 || o.s.cq_mod == 0 || o.s.cq_mod > o.s.tx_depth)
    throw std::invalid_argument("--cq-mod must be between 1 and --tx-depth");
  for (size_t z : o.sizes)
    if (z == 0 || z > (1u << 30)) throw std::invalid_argument("--sizes: " + std::to_string(z) + " is out of 1..1 GiB");
  return o;
}

class MpiOob : public dp::Oob {
 public:
  using dp::Oob::swap;
  std::vector<uint8_t> swap(const std::vector<uint8_t>& mine) override {
    const int peer = 1 - rank();
    uint64_t len = mine.size(), theirs_len = 0;
    MPI_Sendrecv(&len, 1, MPI_UINT64_T, peer, 1, &theirs_len, 1, MPI_UINT64_T, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    std::vector<uint8_t> theirs(theirs_len);
    MPI_Sendrecv(mine.data(), int(len), MPI_BYTE, peer, 2, theirs.data(), int(theirs_len), MPI_BYTE, peer, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return theirs;
  }
  explicit MpiOob(bool sleep) : sleep_(sleep) {}
  // The rank that waits for the other (the server during write_bw and read_lat) spins, as
  // perftest's does: in rdma_cm mode its exchange polls the CQ in a loop (perftest's
  // perftest_communication.c, rdma_read_keys). --idle sleep frees that CPU instead.
  void barrier() override {
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    for (int done = 0;;) {
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (sleep_) {
        const timespec ts{0, 200 * 1000};
        nanosleep(&ts, nullptr);
      }
    }
  }
  static int rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }

 private:
  bool sleep_;
};

void print_lat(const char* test, const dp::LatResult& r) {
  std::printf("dp_bench %s size=%zu iters=%llu t_min_us=%.2f t_typical_us=%.2f t_avg_us=%.2f t_p99_us=%.2f "
              "t_max_us=%.2f\n",
              test, r.size, (unsigned long long)r.iters, r.t_min, r.t_typical, r.t_avg, r.t_p99, r.t_max);
  std::fflush(stdout);
}

int run(const Options& o, int rank, dp::Oob& oob) {
  // Rank 0 draws the job key; both take rank 0's.
  uint64_t key = 0;
  if (rank == 0) key = std::random_device{}() | (uint64_t(std::random_device{}()) << 32) | 1;
  std::vector<uint8_t> mine(sizeof key), theirs;
  std::memcpy(mine.data(), &key, sizeof key);
  theirs = oob.swap(mine);
  if (theirs.size() != sizeof key) throw std::runtime_error("key exchange: " + std::to_string(theirs.size()) + " bytes");
  if (rank == 1) std::memcpy(&key, theirs.data(), sizeof key);
  dp::Link l;
  dp::connect(l, oob, rank, key, o.config, o.sets, std::max(o.s.tx_depth, 1u), o.s.lat_inline);
  // perftest's client is the rdma_cm active side and measures; so is ours unless told.
  const bool client = o.client < 0 ? l.active : rank == o.client;
  std::printf("dp_bench qp rank=%d role=%s active=%d %s max_inline=%u\n", rank, client ? "client" : "server",
              l.active ? 1 : 0, dp::query(l).text().c_str(), l.max_inline);
  std::fflush(stdout);
  oob.barrier();
  const bool all = o.test == "all";
  if (all || o.test == "write_bw")
    for (size_t z : o.sizes) {
      // perftest signals every WR above 8 KiB unless told otherwise (perftest_parameters.c:
      // MSG_SIZE_CQ_MOD_LIMIT 8192, DISABLED_CQ_MOD_VALUE 1); it prints "CQ Moderation : 1".
      dp::Settings s = o.s;
      if (z > 8192 && !o.cq_mod_given) s.cq_mod = 1;
      const dp::BwResult r = dp::write_bw(l, oob, client, z, o.bw_iters, s);
      if (!client) continue;
      std::printf("dp_bench write_bw size=%zu iters=%llu tx_depth=%u cq_mod=%u bw_avg_MiBps=%.2f msg_rate_Mpps=%.6f\n",
                  r.size, (unsigned long long)r.iters, s.tx_depth, s.cq_mod, r.mib_per_s, r.mpps);
      std::fflush(stdout);
    }
  // READ latency before WRITE latency: write_lat WRITEs into both sides' QPs, the others only
  // into the server's (the accepting side's, by default), and a refused WRITE leaves both QPs
  // in ERR, so whatever worked is measured first.
  if (all || o.test == "read_lat") {
    const dp::LatResult r = dp::read_lat(l, oob, client, o.lat_size, o.lat_iters);
    if (client) print_lat("read_lat", r);
  }
  if (all || o.test == "write_lat") {
    const dp::LatResult r = dp::write_lat(l, oob, client, o.lat_size, o.lat_iters, o.s);
    if (client) print_lat("write_lat", r);
  }
  oob.barrier();
  dp::close(l);
  return 0;
}

}  // namespace

// Without a launcher: rank 0 listens, rank 1 connects.
int run_without_launcher(int argc, char** argv) {
  int rank = -1;
  try {
    const Options o = parse(argc, argv);
    if ((o.oob_listen >= 0) == !o.oob_connect.empty())
      throw std::invalid_argument("give one of --oob-listen PORT (rank 0) and --oob-connect HOST:PORT (rank 1)");
    rank = o.oob_listen >= 0 ? 0 : 1;
    dp::TcpOob oob = rank == 0 ? dp::TcpOob::listen_on(o.oob_listen, o.idle_sleep)
                               : dp::TcpOob::connect_to(o.oob_connect, o.idle_sleep);
    return run(o, rank, oob);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dp_bench: rank %d: FAILED: %s\n", rank, e.what());
    return 1;
  }
}

bool launcher_less(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--oob-listen") == 0 || std::strcmp(argv[i], "--oob-connect") == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  if (launcher_less(argc, argv)) return run_without_launcher(argc, argv);
  // MPI stays off the device under test (shared memory and loopback TCP carry the few messages).
  setenv("OMPI_MCA_pml", "ob1", 0);
  setenv("OMPI_MCA_btl", "self,vader,tcp", 0);
  setenv("OMPI_MCA_osc", "^ucx,rdma", 0);
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int status = 0;
  try {
    if (n != 2) throw std::invalid_argument("runs with exactly 2 ranks (mpirun -np 2)");
    const Options o = parse(argc, argv);
    MpiOob oob(o.idle_sleep);
    status = run(o, rank, oob);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dp_bench: rank %d: FAILED: %s\n", rank, e.what());
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
