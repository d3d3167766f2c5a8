// The typed settings every layer reads. Filled by config::load() from the parameter table in
// params.cc (defaults < TOML file < API overrides < environment); nothing below reads files or
// the environment itself, so the engine can be handed a Settings built in a test.
//
// The in-class initializers are the built-in defaults. They must equal the "default" column
// of the table; tests/unit/config_table_test.cc checks that they do.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/log.h"

namespace wireup::config {

using std::chrono::milliseconds;

// Who reads the chosen device's async events (ibv_get_async_event): exactly one party may,
// since each event goes to the first reader. The transport owns them when it has its own
// async handler (UCX, Open MPI) and then hands the library what it read.
enum class AsyncEvents : uint8_t {
  library,    // the library reads and acks them, answers COMM_EST, forwards the rest
  transport,  // the library never touches the async fd; wireup_context_async_event feeds it
};

struct DeviceSettings {
  std::vector<std::string> include;  // if non-empty, only these devices are candidates
  std::vector<std::string> exclude;  // never use these devices
  int port = 1;                      // port number on the chosen device
  int local_rank = -1;               // -1: taken from the launcher's environment elsewhere
  AsyncEvents async_events = AsyncEvents::library;
  int rails = 1;                     // devices per process; 0 = every equally near one (topo/rails.h)
  bool operator==(const DeviceSettings&) const = default;
};

// Whether each rank paces its first connects to a peer by that peer's planned incoming load
// (wireup/incast.h), so that no listener's backlog overflows.
enum class IncastControl : uint8_t {
  off,    // every first connect leaves as soon as the connect window has room
  paced,  // a listener's planned initiators share one token bucket (burst, rate)
};

struct CmSettings {
  int port = 0;  // listen port; 0 = ephemeral (published out of band anyway)
  int backlog = 1024;
  milliseconds resolve_addr_timeout{2000};
  milliseconds resolve_route_timeout{2000};
  int tos = -1;          // -1: leave rdma_set_option(RDMA_OPTION_ID_TOS) alone
  bool reuseaddr = false;
  IncastControl incast = IncastControl::paced;
  int incast_burst = 512;  // first REQs a listener takes at once (capped at backlog / 2)
  int incast_rate = 500;   // first REQs per second a listener takes after the burst
  bool operator==(const CmSettings&) const = default;
};

// Path MTU in bytes; `automatic` keeps the port's active MTU as rdma_init_qp_attr reports it.
enum class PathMtu : uint16_t {
  automatic = 0,
  mtu_256 = 256,
  mtu_512 = 512,
  mtu_1024 = 1024,
  mtu_2048 = 2048,
  mtu_4096 = 4096,
};

struct QpSettings {
  PathMtu path_mtu = PathMtu::automatic;
  int timeout = 18;  // 4.096 us * 2^18 = 1.07 s local ACK timeout, given to the CM
  int retry_cnt = 7;
  int rnr_retry = 7;  // 7 = retry forever
  int min_rnr_timer = 12;
  int max_rd_atomic = -1;       // -1: the device's max_qp_init_rd_atom
  int max_dest_rd_atomic = -1;  // -1: the device's max_qp_rd_atom
  int max_send_wr = 128;
  int max_recv_wr = 128;
  int max_send_sge = 1;
  int max_recv_sge = 1;
  int max_inline_data = 0;
  bool operator==(const QpSettings&) const = default;
};

enum class EceMode : uint8_t {
  off,        // never query or set ECE
  automatic,  // use ECE when both devices support it, carry on without when not
  on,         // use it; a peer without ECE is logged, not rejected
  required,   // reject peers whose ECE does not cover required_options
};

struct EceSettings {
  EceMode mode = EceMode::automatic;
  uint32_t options = 0;           // 0: ask the device (ibv_query_ece)
  uint32_t required_options = 0;  // bits a peer must accept
  uint32_t vendor_id = 0;         // 0: the device's own vendor id
  bool operator==(const EceSettings&) const = default;
};

// What wireup_start() connects. bulk: every peer in the table, roles from the plan, and the
// listener closes when all are settled. on_demand: only the eager set (ring neighbours within
// eager_ring), the rest as the transport asks (wireup_connect); the listener stays open and
// any authenticated rank of the job may connect.
enum class EngineMode : uint8_t { bulk, on_demand };

struct EngineSettings {
  EngineMode mode = EngineMode::bulk;
  int eager_ring = 0;         // on_demand: ring neighbours within this distance connected at start
  int connect_window = 64;    // connects in flight per process
  int qp_create_window = 32;  // QP creations in flight per process
  int max_attempts = 5;
  milliseconds backoff_initial{50};
  milliseconds backoff_max{5000};
  double backoff_jitter = 0.25;  // fraction of the delay drawn at random
  milliseconds wireup_timeout{300000};
  milliseconds rtu_linger{150000};  // listener kept after wireup for RTU-lost notices
  int lanes = 1;          // connections per peer
  uint64_t job_key = 0;   // 0: the transport must pass one through the API
  bool operator==(const EngineSettings&) const = default;
};

// The liveness service (src/wireup/liveness.h): heartbeats over UDP between watchers on a
// ring, for nodes that go silent after wireup.
struct LivenessSettings {
  bool enable = false;
  milliseconds period{500};
  milliseconds deadline{3000};
  int watchers = 3;
  bool operator==(const LivenessSettings&) const = default;
};

struct LogSettings {
  log::Level level = log::Level::warn;
  bool operator==(const LogSettings&) const = default;
};

struct Settings {
  DeviceSettings device;
  CmSettings cm;
  QpSettings qp;
  EceSettings ece;
  EngineSettings engine;
  LivenessSettings liveness;
  LogSettings log;
  bool operator==(const Settings&) const = default;
};

}  // namespace wireup::config
