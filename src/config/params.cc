// The parameter table: every key wireup reads, its type, legal range, default and help.
// Adding a key = one row here + one field in settings.h + one entry in config/default.toml
// (tests/unit/config_table_test.cc fails until all three agree).
#include "config/params.h"

#include "config/param_store.h"

namespace wireup::config {
namespace {

constexpr EnumChoice kPathMtu[] = {{"auto", 0},     {"256", 256},   {"512", 512},
                                   {"1024", 1024}, {"2048", 2048}, {"4096", 4096}};
constexpr EnumChoice kEceMode[] = {{"off", static_cast<int64_t>(EceMode::off)},
                                   {"auto", static_cast<int64_t>(EceMode::automatic)},
                                   {"on", static_cast<int64_t>(EceMode::on)},
                                   {"required", static_cast<int64_t>(EceMode::required)}};
constexpr EnumChoice kIncast[] = {{"off", static_cast<int64_t>(IncastControl::off)},
                                  {"paced", static_cast<int64_t>(IncastControl::paced)}};
constexpr EnumChoice kEngineMode[] = {{"bulk", static_cast<int64_t>(EngineMode::bulk)},
                                      {"on_demand", static_cast<int64_t>(EngineMode::on_demand)}};
constexpr EnumChoice kAsyncEvents[] = {{"library", static_cast<int64_t>(AsyncEvents::library)},
                                       {"transport", static_cast<int64_t>(AsyncEvents::transport)}};
// A number of rails, or every equally near device (topo/rails.h). Up to 16: the most RDMA
// devices a node of this kind carries is 8 to 10 (one or two per GPU).
constexpr EnumChoice kRails[] = {{"all", 0}, {"1", 1},   {"2", 2},   {"3", 3},   {"4", 4},   {"5", 5},
                                 {"6", 6},   {"7", 7},   {"8", 8},   {"9", 9},   {"10", 10}, {"11", 11},
                                 {"12", 12}, {"13", 13}, {"14", 14}, {"15", 15}, {"16", 16}};
constexpr EnumChoice kLogLevel[] = {{"error", static_cast<int64_t>(log::Level::error)},
                                    {"warn", static_cast<int64_t>(log::Level::warn)},
                                    {"info", static_cast<int64_t>(log::Level::info)},
                                    {"debug", static_cast<int64_t>(log::Level::debug)},
                                    {"trace", static_cast<int64_t>(log::Level::trace)}};

constexpr int64_t kMinute = 60 * 1000;
constexpr int64_t kDay = 24 * 60 * kMinute;

using T = ParamType;

const Section kSections[] = {
    {"device", "which RDMA device and port this process uses (see src/topo for the ranking)"},
    {"cm", "rdma_cm identifiers: listen port, backlog, resolve timeouts, per-id options"},
    {"qp", "queue-pair attributes applied on the way to RTR/RTS and at creation"},
    {"ece", "Enhanced Connection Establishment: what to ask the device for and what to insist on"},
    {"engine", "the wireup engine: windows, retries, backoff, overall timeout, lanes, job key"},
    {"liveness", "after wireup: heartbeats over UDP on a ring of watchers, so that a node that goes "
                 "silent (a power cut, a partition) is reported as a peer down"},
    {"log", "diagnostics"},
};

const Param kParams[] = {
    // [device]
    {.section = "device", .key = "include", .type = T::string_list, .default_toml = "[]",
     .help = "Only these devices (e.g. [\"mlx5_0\", \"mlx5_2\"]) are candidates; empty = all. "
             "The locality ranking still orders the ones left.",
     .store = WIREUP_STORE(device, include)},
    {.section = "device", .key = "exclude", .type = T::string_list, .default_toml = "[]",
     .help = "Devices never used, whatever the ranking says (e.g. a management NIC).",
     .store = WIREUP_STORE(device, exclude)},
    {.section = "device", .key = "port", .type = T::integer, .default_toml = "1",
     .help = "Port number on the chosen device; a port that is not ACTIVE is skipped.",
     .min = 1, .max = 255, .store = WIREUP_STORE(device, port)},
    {.section = "device", .key = "local_rank", .type = T::integer, .default_toml = "-1",
     .help = "This process's rank among those on the node, used to spread processes over equally "
             "near devices; -1 = read it from the launcher (OMPI_COMM_WORLD_LOCAL_RANK, ...).",
     .min = -1, .max = 65535, .store = WIREUP_STORE(device, local_rank)},
    {.section = "device", .key = "async_events", .type = T::enumeration, .default_toml = "\"library\"",
     .help = "Who reads the device's async events (each goes to the first ibv_get_async_event "
             "caller, so only one may). library: wireup reads and acks them on the context's "
             "ibv_context (its fd made non-blocking, in wireup_fd()), answers COMM_EST and hands "
             "the rest to wireup_on_device_event. transport: wireup never touches the async fd; "
             "the transport's own handler reads and acks every event and passes each to "
             "wireup_context_async_event. Choose transport when the transport has an async "
             "handler (UCX, Open MPI): with library both would race for the events.",
     .choices = kAsyncEvents, .store = WIREUP_STORE(device, async_events)},
    {.section = "device", .key = "rails", .type = T::enumeration, .default_toml = "1",
     .help = "How many RDMA devices (rails) a process uses: a number, or \"all\" for every device "
             "as near as the nearest. Ranked like the single device, one port per card before "
             "a card's second port, spread over the node's processes by local rank; "
             "`wireup_info --rails` prints the set and why. Every rail listens; a peer's lanes "
             "stripe over the rails that share a subnet with its own (listen_ip must be unset "
             "with several rails). Fewer usable devices than asked: the others, with a warning.",
     .choices = kRails, .store = WIREUP_STORE(device, rails)},
    // [cm]
    {.section = "cm", .key = "port", .type = T::integer, .default_toml = "0",
     .help = "TCP-space port to listen on; 0 = ephemeral (the address is published out of band).",
     .min = 0, .max = 65535, .store = WIREUP_STORE(cm, port)},
    {.section = "cm", .key = "backlog", .type = T::integer, .default_toml = "1024",
     .help = "rdma_listen backlog: connect requests queued before the passive side takes them.",
     .min = 1, .max = 65536, .store = WIREUP_STORE(cm, backlog)},
    {.section = "cm", .key = "resolve_addr_timeout_ms", .type = T::duration_ms,
     .default_toml = "2000", .help = "rdma_resolve_addr timeout per attempt.",
     .min = 1, .max = 10 * kMinute, .store = WIREUP_STORE(cm, resolve_addr_timeout)},
    {.section = "cm", .key = "resolve_route_timeout_ms", .type = T::duration_ms,
     .default_toml = "2000", .help = "rdma_resolve_route timeout per attempt.",
     .min = 1, .max = 10 * kMinute, .store = WIREUP_STORE(cm, resolve_route_timeout)},
    {.section = "cm", .key = "tos", .type = T::integer, .default_toml = "-1",
     .help = "IP type of service (DSCP << 2 | ECN) of a connection's RoCE packets, data and CM MADs, "
             "both ways: set on the initiating side (RDMA_OPTION_ID_TOS), the accepting side takes "
             "the REQ's. -1 = leave unset: the port's default_roce_tos (rdma_cm configfs), 0 unless "
             "an administrator changed it.",
     .min = -1, .max = 255, .store = WIREUP_STORE(cm, tos)},
    {.section = "cm", .key = "reuseaddr", .type = T::boolean, .default_toml = "false",
     .help = "RDMA_OPTION_ID_REUSEADDR on the listening id, to rebind a fixed port at once.",
     .store = WIREUP_STORE(cm, reuseaddr)},
    {.section = "cm", .key = "incast", .type = T::enumeration, .default_toml = "\"paced\"",
     .help = "paced: each rank delays its first connect to a peer by its place among that peer's "
             "planned initiators, so that no listener's backlog overflows (a REQ dropped there "
             "waits a CM retry, ~6 s); off: first connects leave as the connect window allows. "
             "With several rails (device.rails) each rail's listener is paced alone. Every rank of "
             "a job must use the same [cm] incast keys, backlog and rail count.",
     .choices = kIncast, .store = WIREUP_STORE(cm, incast)},
    {.section = "cm", .key = "incast_burst", .type = T::integer, .default_toml = "512",
     .help = "paced: first connect requests one listener is sent at once (at most backlog / 2; "
             "512 = half the kernel's default net.rdma_ucm.max_backlog of 1024).",
     .min = 1, .max = 65536, .store = WIREUP_STORE(cm, incast_burst)},
    {.section = "cm", .key = "incast_rate", .type = T::integer, .default_toml = "500",
     .help = "paced: first connect requests per second one listener is sent after the burst "
             "(set it near what one process accepts per second on this fabric).",
     .min = 1, .max = 10000000, .store = WIREUP_STORE(cm, incast_rate)},
    // [qp]
    {.section = "qp", .key = "path_mtu", .type = T::enumeration, .default_toml = "\"auto\"",
     .help = "Path MTU in bytes; auto = the port's active MTU as rdma_init_qp_attr reports it.",
     .choices = kPathMtu, .store = WIREUP_STORE(qp, path_mtu)},
    {.section = "qp", .key = "timeout", .type = T::integer, .default_toml = "18",
     .help = "Local ACK timeout exponent, 4.096 us * 2^v (18 = 1.07 s; UCX uses 1 s, NCCL 20 = "
             "4.3 s): a QP that goes unacknowledged retry_cnt + 1 times that long goes to error. "
             "Set on both ends' CM ids (RDMA_OPTION_ID_ACK_TIMEOUT), so that rdma_init_qp_attr "
             "answers it for RTS.",
     .min = 0, .max = 31, .store = WIREUP_STORE(qp, timeout)},
    {.section = "qp", .key = "retry_cnt", .type = T::integer, .default_toml = "7",
     .help = "Transport retries after an ACK timeout before the QP goes to error.",
     .min = 0, .max = 7, .store = WIREUP_STORE(qp, retry_cnt)},
    {.section = "qp", .key = "rnr_retry", .type = T::integer, .default_toml = "7",
     .help = "Receiver-not-ready retries; 7 = retry forever.",
     .min = 0, .max = 7, .store = WIREUP_STORE(qp, rnr_retry)},
    {.section = "qp", .key = "min_rnr_timer", .type = T::integer, .default_toml = "12",
     .help = "RNR NAK timer code advertised to the peer (12 = 0.64 ms).",
     .min = 0, .max = 31, .store = WIREUP_STORE(qp, min_rnr_timer)},
    {.section = "qp", .key = "max_rd_atomic", .type = T::integer, .default_toml = "-1",
     .help = "RDMA reads/atomics a QP may have outstanding as initiator (the CM's initiator "
             "depth); -1 = the device's max_qp_init_rd_atom. The accepting side answers with "
             "at most what the requesting side accepts; above the device's bound is an error.",
     .min = -1, .max = 255, .store = WIREUP_STORE(qp, max_rd_atomic)},
    {.section = "qp", .key = "max_dest_rd_atomic", .type = T::integer, .default_toml = "-1",
     .help = "RDMA reads/atomics a QP accepts outstanding as target (the CM's responder "
             "resources); -1 = the device's max_qp_rd_atom. Negotiated as max_rd_atomic.",
     .min = -1, .max = 255, .store = WIREUP_STORE(qp, max_dest_rd_atomic)},
    {.section = "qp", .key = "max_send_wr", .type = T::integer, .default_toml = "128",
     .help = "Send queue depth requested at QP creation.",
     .min = 1, .max = 65536, .store = WIREUP_STORE(qp, max_send_wr)},
    {.section = "qp", .key = "max_recv_wr", .type = T::integer, .default_toml = "128",
     .help = "Receive queue depth requested at QP creation.",
     .min = 1, .max = 65536, .store = WIREUP_STORE(qp, max_recv_wr)},
    {.section = "qp", .key = "max_send_sge", .type = T::integer, .default_toml = "1",
     .help = "Scatter/gather entries per send work request.",
     .min = 1, .max = 32, .store = WIREUP_STORE(qp, max_send_sge)},
    {.section = "qp", .key = "max_recv_sge", .type = T::integer, .default_toml = "1",
     .help = "Scatter/gather entries per receive work request.",
     .min = 1, .max = 32, .store = WIREUP_STORE(qp, max_recv_sge)},
    {.section = "qp", .key = "max_inline_data", .type = T::integer, .default_toml = "0",
     .help = "Bytes of inline send data requested at QP creation (0 = none).",
     .min = 0, .max = 1024, .store = WIREUP_STORE(qp, max_inline_data)},
    // [ece]
    {.section = "ece", .key = "mode", .type = T::enumeration, .default_toml = "\"auto\"",
     .help = "off = never touch ECE; auto = use it when both sides support it; on = use it, log "
             "peers without it; required = reject peers that do not accept required_options.",
     .choices = kEceMode, .store = WIREUP_STORE(ece, mode)},
    {.section = "ece", .key = "options", .type = T::uint32, .default_toml = "\"0x0\"",
     .help = "ECE option bits offered to the peer; 0 = what ibv_query_ece reports.",
     .store = WIREUP_STORE(ece, options)},
    {.section = "ece", .key = "required_options", .type = T::uint32, .default_toml = "\"0x0\"",
     .help = "ECE option bits the peer must accept when mode = required.",
     .store = WIREUP_STORE(ece, required_options)},
    {.section = "ece", .key = "vendor_id", .type = T::uint32, .default_toml = "\"0x0\"",
     .help = "ECE vendor id; 0 = the device's own (ECE with vendor id 0 is EINVAL).",
     .store = WIREUP_STORE(ece, vendor_id)},
    // [engine]
    {.section = "engine", .key = "connect_window", .type = T::integer, .default_toml = "64",
     .help = "Connects in flight per process and rail (device.rails: each rail has its own "
             "window); bounds the burst of REQs each rank sends on one device.",
     .min = 1, .max = 65536, .store = WIREUP_STORE(engine, connect_window)},
    {.section = "engine", .key = "qp_create_window", .type = T::integer, .default_toml = "32",
     .help = "QPs created and not yet established per process, rail and role (active, passive): "
             "creation is the slowest verbs call in wireup.",
     .min = 1, .max = 65536, .store = WIREUP_STORE(engine, qp_create_window)},
    {.section = "engine", .key = "max_attempts", .type = T::integer, .default_toml = "5",
     .help = "Connect attempts per (peer, lane) before the peer is reported as failed.",
     .min = 1, .max = 1000, .store = WIREUP_STORE(engine, max_attempts)},
    {.section = "engine", .key = "backoff_initial_ms", .type = T::duration_ms,
     .default_toml = "50", .help = "Delay before the first retry; doubles per attempt.",
     .min = 1, .max = kMinute, .store = WIREUP_STORE(engine, backoff_initial)},
    {.section = "engine", .key = "backoff_max_ms", .type = T::duration_ms,
     .default_toml = "5000", .help = "Cap on the retry delay; must be >= backoff_initial_ms.",
     .min = 1, .max = 10 * kMinute, .store = WIREUP_STORE(engine, backoff_max)},
    {.section = "engine", .key = "backoff_jitter", .type = T::real, .default_toml = "0.25",
     .help = "Fraction of each retry delay drawn at random so that retries do not synchronise.",
     .dmin = 0.0, .dmax = 1.0, .store = WIREUP_STORE(engine, backoff_jitter)},
    {.section = "engine", .key = "wireup_timeout_ms", .type = T::duration_ms,
     .default_toml = "300000",
     .help = "Deadline for the whole wireup; peers not connected by then are reported failed.",
     .min = 1, .max = kDay, .store = WIREUP_STORE(engine, wireup_timeout)},
    {.section = "engine", .key = "rtu_linger_ms", .type = T::duration_ms,
     .default_toml = "150000",
     .help = "How long a rank keeps its listener after its wireup ends, so that a peer whose REP "
             "retries ran out (every RTU lost) can still ask about the connection; 0 = close at once.",
     .min = 0, .max = kDay, .store = WIREUP_STORE(engine, rtu_linger)},
    {.section = "engine", .key = "mode", .type = T::enumeration, .default_toml = "\"bulk\"",
     .help = "bulk: connect every peer in the table at start, then close the listener. on_demand: "
             "connect only the eager ring at start and the rest when the transport asks "
             "(wireup_connect); the listener stays open until the end. Every rank of a job must use "
             "the same mode.",
     .choices = kEngineMode, .store = WIREUP_STORE(engine, mode)},
    {.section = "engine", .key = "eager_ring", .type = T::integer, .default_toml = "0",
     .help = "on_demand: the ring neighbours within this distance (rank +-1 .. +-K) are connected "
             "at start, the way bulk would; 0 = none. Every rank of a job must use the same value.",
     .min = 0, .max = 1 << 20, .store = WIREUP_STORE(engine, eager_ring)},
    {.section = "engine", .key = "lanes", .type = T::integer, .default_toml = "1",
     .help = "Connections per peer when the transport does not say.",
     .min = 1, .max = 1024, .store = WIREUP_STORE(engine, lanes)},
    {.section = "engine", .key = "job_key", .type = T::uint64, .default_toml = "\"0x0\"",
     .help = "64-bit secret shared by the job, checked in every connect request; 0 = the "
             "transport must pass it through the API. Prefer the environment to a file.",
     .secret = true, .store = WIREUP_STORE(engine, job_key)},
    // [liveness]
    {.section = "liveness", .key = "enable", .type = T::boolean, .default_toml = "false",
     .help = "Run the liveness service (bulk wireup only): each rank sends a heartbeat every period "
             "to `watchers` ranks on a ring interleaved by node, over its own UDP socket on the listen "
             "address (never on the transport's QPs); a node silent for the deadline is reported as "
             "WIREUP_EVENT_PEER_DOWN, cause silent, once two of its watchers agree. Its endpoint "
             "travels in the published address (format 3, 4 bytes longer): every rank of a job must "
             "set the same value.",
     .store = WIREUP_STORE(liveness, enable)},
    {.section = "liveness", .key = "period_ms", .type = T::duration_ms, .default_toml = "500",
     .help = "Heartbeat period: each rank sends `watchers` datagrams per period.",
     .min = 10, .max = kMinute, .store = WIREUP_STORE(liveness, period)},
    {.section = "liveness", .key = "deadline_ms", .type = T::duration_ms, .default_toml = "3000",
     .help = "A node silent this long is known dead by every rank; a silence shorter than the "
             "deadline less 1.5 periods (2,250 ms by default: four heartbeats lost in a row) never "
             "makes a death. At least three periods.",
     .min = 30, .max = 10 * kMinute, .store = WIREUP_STORE(liveness, deadline)},
    {.section = "liveness", .key = "watchers", .type = T::integer, .default_toml = "3",
     .help = "Ranks watching each rank (k): a death needs two of them to time it out by themselves "
             "(one when k = 1); each rank sends k datagrams per period.",
     .min = 1, .max = 64, .store = WIREUP_STORE(liveness, watchers)},
    // [log]
    {.section = "log", .key = "level", .type = T::enumeration, .default_toml = "\"warn\"",
     .help = "Least severe message printed to stderr.",
     .choices = kLogLevel, .store = WIREUP_STORE(log, level)},
};

}  // namespace

std::span<const Param> params() { return kParams; }
std::span<const Section> sections() { return kSections; }

}  // namespace wireup::config
