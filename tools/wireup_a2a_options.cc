// wireup_a2a's command line.
#include <charconv>
#include <cstdlib>

#include "wireup_a2a_pattern.h"

namespace wireup::a2a {

const char* const kUsage =
    "usage: mpirun [-np N] wireup_a2a [options]          one rank per process (provider rdma)\n"
    "       wireup_a2a --provider sim --ranks N [options]  N virtual ranks in this process\n"
    "\n"
    "Connects every pair of ranks with --lanes connections through the wireup engine (QPs owned\n"
    "by the runner, ECE attempted, ids migrated), checks every connection (QPN cross-check and a\n"
    "SEND both ways) and prints a summary: connections, wall time, connections/s, per-phase\n"
    "p50/p99, retries, rejects by reason, ECE outcomes, failed peers.\n"
    "\n"
    "  --lanes N              connections per pair of ranks (engine.lanes)\n"
    "  --config FILE          tuning file (default: WIREUP_CONFIG, ./wireup.toml,\n"
    "                         /etc/wireup/wireup.toml); the environment still wins over it\n"
    "  --set KEY=VALUE        any configuration key, e.g. --set engine.connect_window=16\n"
    "  --wireup-timeout-ms T  give up on pairs not connected T ms after start\n"
    "  --addr IP              listen address (default: from the chosen device's port: its RoCE\n"
    "                         netdev or IPoIB interface, IPv4 first; `wireup_info` shows it)\n"
    "  --job-key HEX          the job's key (default: engine.job_key, else random from rank 0)\n"
    "  --json                 one JSON object on stdout (the human summary goes to stderr)\n"
    "  --no-verify            skip the QPN cross-check and the SEND both ways\n"
    "  --no-progress          no progress line on stderr\n"
    "  --verify-timeout-s S   SEND check deadline (default 30)\n"
    "  --hold-s S             rdma: keep every connection S seconds after the summary, so that an\n"
    "                         outside observer sees the QPs (rdma resource show qp)\n"
    "  --into R               an incast: every other rank knows (and connects to) rank R only;\n"
    "                         R knows everyone (roles still follow the plan: about half the\n"
    "                         ranks initiate to R)\n"
    "  --kill-rank R          fault injection: rank R _exit()s mid-wireup; the others report it\n"
    "                         and keep every other connection (mpirun needs --enable-recovery)\n"
    "  --kill-after-ms T      ... T ms after start (default 0 with --kill-rank alone)\n"
    "  --kill-after-conns K   ... once K of its connections are established\n"
    "  --run CMD              fault injection: rank 0 starts `/bin/sh -c CMD` mid-wireup and keeps\n"
    "                         going (e.g. 'rdma link delete rxe1'); reaped after its close\n"
    "  --run-after-conns K    ... once K of its connections are established (default 1)\n"
    "  --run-rank R           ... by rank R instead of rank 0\n"
    "  --mode bulk|on-demand  bulk (default): every pair at start; on-demand (engine.mode =\n"
    "                         on_demand, engine.eager_ring = 0): each rank calls connect() for\n"
    "                         the peers --pattern gives it, all at once right after start\n"
    "  --pattern P            on-demand: all (default) | ring:K (ranks r+1..r+K) | random:K (K\n"
    "                         distinct peers per rank drawn from --seed: every rank computes the\n"
    "                         whole pattern; a pair both ends drew is a crossing pair)\n"
    "  --bootstrap B          rdma: the out-of-band channel: pmix (the launcher's PMIx server, no\n"
    "                         MPI call), mpi, or auto (default: pmix when a PMIx server is there);\n"
    "                         pmix without a server says so and falls back to mpi\n"
    "  --provider rdma|sim    sim: the simulated fabric, no device, no mpirun\n"
    "  --ranks N              sim: virtual ranks\n"
    "  --latency MODEL        sim: hardware (default) | rxe_vm | zero\n"
    "  --seed S               sim: fabric seed; random:K: the pattern's seed (default 1)\n"
    "  --help                 this text\n"
    "\n"
    "Exit status: 0 all connected and verified; 3 some connections failed, every established one\n"
    "verified; 1 a check failed or the job could not run; 2 bad usage.\n";

namespace {

template <class T>
Expected<T> bad(const std::string& what) {
  return Expected<T>::failure(what);
}

template <class T>
Expected<T> number(const std::string& opt, const std::string& v, T min, int base = 10) {
  T out{};
  std::string_view s = v;
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || out < min)
    return bad<T>(opt + " " + v + ": expected a number >= " + std::to_string(min));
  return out;
}

}  // namespace

Expected<Options> parse_options(int argc, char** argv) {
  Options o;
  bool kill_when = false, pattern_given = false, run_when = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    static const std::set<std::string> with_value = {
        "--lanes", "--config", "--set", "--wireup-timeout-ms", "--addr", "--job-key", "--kill-rank",
        "--kill-after-ms", "--kill-after-conns", "--provider", "--ranks", "--latency", "--seed",
        "--verify-timeout-s", "--hold-s", "--bootstrap", "--into", "--mode", "--pattern", "--run",
        "--run-after-conns", "--run-rank"};
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos &&
                                         with_value.count(arg.substr(0, eq))) {
      value = arg.substr(eq + 1), arg = arg.substr(0, eq);
    } else if (with_value.count(arg)) {
      if (i + 1 >= argc) return bad<Options>(arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--json") o.json = true;
    else if (arg == "--no-verify") o.verify = false;
    else if (arg == "--no-progress") o.progress = false;
    else if (arg == "--config") o.config_file = value;
    else if (arg == "--addr") o.addr = value;
    else if (arg == "--lanes") {
      auto n = number<uint32_t>(arg, value, 1);
      if (!n) return bad<Options>(n.error());
      o.overrides.push_back("engine.lanes=" + value);
    } else if (arg == "--wireup-timeout-ms") {
      auto n = number<int64_t>(arg, value, 1);
      if (!n) return bad<Options>(n.error());
      o.overrides.push_back("engine.wireup_timeout_ms=" + value);
    } else if (arg == "--set") {
      const size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) return bad<Options>("--set " + value + ": expected KEY=VALUE");
      o.overrides.push_back(value);
    } else if (arg == "--job-key") {
      auto k = number<uint64_t>(arg, value, 1, 16);
      if (!k) return bad<Options>(k.error());
      o.job_key = *k;
    } else if (arg == "--kill-rank") {
      auto n = number<int>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.kill_rank = *n;
    } else if (arg == "--kill-after-ms") {
      auto n = number<int64_t>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.kill_after_ms = *n, kill_when = true;
    } else if (arg == "--kill-after-conns") {
      auto n = number<int64_t>(arg, value, 1);
      if (!n) return bad<Options>(n.error());
      o.kill_after_conns = *n, kill_when = true;
    } else if (arg == "--run") {
      if (value.empty()) return bad<Options>("--run needs a command");
      o.run_cmd = value;
    } else if (arg == "--run-after-conns") {
      auto n = number<int64_t>(arg, value, 1);
      if (!n) return bad<Options>(n.error());
      o.run_after_conns = *n, run_when = true;
    } else if (arg == "--run-rank") {
      auto n = number<int>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.run_rank = *n, run_when = true;
    } else if (arg == "--into") {
      auto n = number<int>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.into = *n;
    } else if (arg == "--hold-s") {
      auto n = number<int>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.hold_s = *n;
    } else if (arg == "--verify-timeout-s") {
      auto n = number<int>(arg, value, 1);
      if (!n) return bad<Options>(n.error());
      o.verify_timeout_s = *n;
    } else if (arg == "--provider") {
      if (value != "rdma" && value != "sim") return bad<Options>("--provider " + value + ": expected rdma or sim");
      o.provider = value;
    } else if (arg == "--bootstrap") {
      if (value != "auto" && value != "pmix" && value != "mpi")
        return bad<Options>("--bootstrap " + value + ": expected pmix, mpi or auto");
      o.bootstrap = value;
    } else if (arg == "--mode") {
      if (value != "bulk" && value != "on-demand") return bad<Options>("--mode " + value + ": expected bulk or on-demand");
      o.on_demand = value == "on-demand", o.mode_given = true;
    } else if (arg == "--pattern") {
      auto p = parse_pattern(value);
      if (!p) return bad<Options>(p.error());
      o.pattern = value, pattern_given = true;
    } else if (arg == "--ranks") {
      auto n = number<uint32_t>(arg, value, 2);
      if (!n) return bad<Options>(n.error());
      o.sim_ranks = *n;
    } else if (arg == "--latency") {
      if (value != "hardware" && value != "rxe_vm" && value != "zero")
        return bad<Options>("--latency " + value + ": expected hardware, rxe_vm or zero");
      o.sim_latency = value;
    } else if (arg == "--seed") {
      auto n = number<uint64_t>(arg, value, 0);
      if (!n) return bad<Options>(n.error());
      o.sim_seed = *n;
    } else {
      return bad<Options>("unknown option " + arg);
    }
  }
  if (o.provider == "sim" && o.sim_ranks == 0) return bad<Options>("--provider sim needs --ranks N");
  if (o.provider != "sim" && o.sim_ranks != 0) return bad<Options>("--ranks is for --provider sim (under mpirun, use -np)");
  if (o.provider == "sim" && o.into >= 0) return bad<Options>("--into is for the rdma provider (under mpirun)");
  if (kill_when && o.kill_rank < 0) return bad<Options>("--kill-after-ms/--kill-after-conns need --kill-rank");
  if (run_when && o.run_cmd.empty()) return bad<Options>("--run-after-conns/--run-rank need --run");
  if (o.provider == "sim" && !o.run_cmd.empty()) return bad<Options>("--run is for the rdma provider (under mpirun)");
  if (o.kill_rank >= 0 && !kill_when) o.kill_after_ms = 0;
  if (pattern_given && !o.on_demand) return bad<Options>("--pattern is for --mode on-demand");
  if (o.on_demand && o.into >= 0) return bad<Options>("--into is a bulk incast; --mode on-demand takes --pattern");
  if (o.mode_given) {
    // The runner's own choice: no eager ring (its pairs would be outside the pattern), then the
    // mode; the environment (WIREUP_ENGINE_MODE) still wins, and engine_mode() checks it.
    if (o.on_demand) o.overrides.insert(o.overrides.begin(), "engine.eager_ring=0");
    o.overrides.push_back(std::string("engine.mode=") + (o.on_demand ? "on_demand" : "bulk"));
  }
  return o;
}

Expected<bool> engine_mode(const Options& o, const std::string& configured) {
  std::string v = configured;
  if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
  if (v != "bulk" && v != "on_demand") return Expected<bool>::failure("engine.mode = " + configured + ": unknown");
  const bool od = v == "on_demand";
  if (o.mode_given && od != o.on_demand)
    return Expected<bool>::failure(std::string("--mode ") + (o.on_demand ? "on-demand" : "bulk") +
                                   ", but the configuration says engine.mode = " + v +
                                   " (WIREUP_ENGINE_MODE wins over --mode: unset it)");
  return od;
}

}  // namespace wireup::a2a
