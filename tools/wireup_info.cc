// wireup_info: what wireup sees and would do on this machine (or on one described by an
// hwloc XML file), the effective configuration and where each value came from, and a checker
// for tuning files. Modelled on ucx_info / fi_info.
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "config/config.h"
#include "host/local_rank.h"
#include "topo/rails.h"
#include "wireup_info.h"

namespace {

using namespace wireup;

constexpr const char* kUsage =
    "usage: wireup_info [options]\n"
    "\n"
    "With no option: list this machine's RDMA devices (ports, state, vendor, ECE support) and\n"
    "show the device this process would use, and why.\n"
    "\n"
    "  --topology FILE.xml  explain the choice for the machine an hwloc XML file describes\n"
    "                       (made with `lstopo --of xml`); the device list is skipped\n"
    "  --cpus LIST          the CPU binding to rank for, e.g. 0-3,8 (default: this process's,\n"
    "                       or the whole machine with --topology)\n"
    "  --gpu ID             rank for a GPU: OS device name (cuda0, nvml0, card0) or PCI bus id\n"
    "  --devices A[,B...]   the candidate devices (default: those present)\n"
    "  --local-rank N       the process's rank on its node (default: device.local_rank, then\n"
    "                       OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID,\n"
    "                       PMIX_LOCAL_RANK; one that is set but not a number is an error)\n"
    "  --rails N|all        also show the rail set of N devices, or of every equally near one\n"
    "                       (default: device.rails; shown whenever it is not 1), with --sysfs\n"
    "                       too (from the tree's devices, port states and PCI links)\n"
    "  --sysfs DIR          per device and port of the sysfs tree DIR (/sys, or a layout captured\n"
    "                       on another machine), the netdev it maps to, why, and the address\n"
    "                       wireup would listen on (from DIR/ifaddrs if present, else this host's)\n"
    "  --config             print every configuration key, its effective value and its source\n"
    "  --check FILE         validate a tuning file: exit 0, or print every error and exit 1\n"
    "  --default-toml       print config/default.toml as generated from the parameter table\n"
    "  --help               this text\n"
    "\n"
    "Configuration: WIREUP_CONFIG, else ./wireup.toml, else /etc/wireup/wireup.toml;\n"
    "environment WIREUP_<SECTION>_<KEY> overrides the file.\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "wireup_info: %s\n(try --help)\n", msg.c_str());
  return 2;
}

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    if (comma != 0) out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

int check(const std::string& path) {
  const std::vector<std::string> errors = config::check_file(path);
  if (errors.empty()) {
    std::printf("%s: ok\n", path.c_str());
    return 0;
  }
  for (const std::string& e : errors) std::printf("%s\n", e.c_str());
  std::printf("%s: %zu error%s\n", path.c_str(), errors.size(), errors.size() == 1 ? "" : "s");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  info::ChoiceOptions choice;
  bool dump = false;
  std::string check_path, sysfs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const bool takes_value = arg == "--topology" || arg == "--cpus" || arg == "--gpu" || arg == "--devices" ||
                             arg == "--local-rank" || arg == "--check" || arg == "--sysfs" || arg == "--rails";
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      value = arg.substr(eq + 1), arg = arg.substr(0, eq);
    } else if (takes_value) {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), 0;
    if (arg == "--default-toml") return std::fputs(config::default_toml().c_str(), stdout), 0;
    if (arg == "--config") dump = true;
    else if (arg == "--check") check_path = value;
    else if (arg == "--sysfs") sysfs = value;
    else if (arg == "--topology") choice.topology = value;
    else if (arg == "--cpus") choice.cpus = value;
    else if (arg == "--gpu") choice.gpu = value;
    else if (arg == "--devices") choice.devices = split_commas(value);
    else if (arg == "--rails") {
      int n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value == "all") choice.rails = topo::RailCount::kAllEquallyNear;
      else if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 16)
        return usage_error("--rails " + value + ": expected a number of devices from 1 to 16, or all");
      else choice.rails = n;
    } else if (arg == "--local-rank") {
      Result<int> n = host::parse_local_rank("--local-rank", value);
      if (!n) return usage_error(n.error().message());
      choice.local_rank = *n;
    } else {
      return usage_error("unknown option " + arg);
    }
  }
  // --check looks at the named file alone: the caller's environment must not change the verdict.
  if (!check_path.empty()) return check(check_path);

  config::LoadOptions opts;
  opts.env = config::process_environment();
  Result<config::Config> cfg = config::load(opts);
  if (!cfg) {
    std::fprintf(stderr, "wireup_info: %s\n", cfg.error().message().c_str());
    return 1;
  }
  if (dump) return std::fputs(cfg->dump().c_str(), stdout), 0;
  if (!sysfs.empty()) {
    const int rails = choice.rails.value_or(cfg->settings().device.rails);
    return info::print_sysfs(sysfs, rails != 1 ? std::optional<int>(rails) : std::nullopt, choice, cfg->settings());
  }

  int rc = 0;
  if (choice.topology.empty()) {
    rc = info::print_live_devices(cfg->settings());
    std::printf("\n");
  }
  return info::explain_choice(choice, cfg->settings()) != 0 ? 1 : rc;
}
