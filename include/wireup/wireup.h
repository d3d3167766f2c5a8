/*
 * wireup.h -- connect a transport's own RDMA queue pairs to every peer of a job through the
 * RDMA connection manager (C API, C11 and C++).
 *
 * A transport (MPI BTL, UCX-style UCT, a custom RDMA layer) links libwireup.a and:
 *   1. creates a context: configuration, the RDMA device this process should use (hwloc
 *      ranking), its ibv_context so the transport can make its own PD, CQs and QPs on it;
 *   2. creates a wireup handle with its rank, the job size, the lanes (connections per peer),
 *      a job key shared by every rank, and a QP factory callback;
 *   3. publishes wireup_local_address() through its own out-of-band channel (MPI_Allgather,
 *      PMIx, a file) and hands the collected table to wireup_set_peers();
 *   4. calls wireup_start(), then wireup_progress() from its event loop (wireup_fd() is one
 *      pollable fd) until wireup_done();
 *   5. reads the results (its QPs, now at RTS, with the remote QPNs) and the per-peer errors.
 *
 * The transport owns every QP: the factory creates it on the transport's PD and CQs, the
 * library drives it INIT -> RTR -> RTS through the CM and never destroys it. QPs of attempts
 * that did not connect are handed back through the optional release callback.
 *
 * Results handed over stay handed over. A connection is handed over when the
 * wireup_progress() call that made it returns: from then on it is in the result table for
 * good, its QP is never released, and wireup never tears it down or reconnects it behind the
 * transport's back. If the peer later turns out never to have got the connection's last CM
 * message (every RTU lost: the peer has no connection behind this QP), wireup does not repair
 * the lane; it reports it lost (WIREUP_EVENT_RTU_LOST here, a
 * wireup_peer_error_t of kind WIREUP_ERROR_RTU_LOST on the peer), and the QP stays the transport's.
 *
 * Conventions of every function below:
 *  - Return wireup_status_t (WIREUP_OK = 0) unless stated; output parameters are written only
 *    on success.
 *  - On failure the full message (call, errno, peer, QPN) is kept: wireup_last_error(handle)
 *    for the handle the call was made on, wireup_last_error(NULL) for the calling thread's
 *    last failure of any call (the only way to read why a *_create failed).
 *  - NULL handles, NULL pointers, out-of-range indexes and calls out of order are reported as
 *    WIREUP_ERR_INVALID_ARGUMENT / WIREUP_ERR_INVALID_STATE, never a crash.
 *  - Thread safety: none. One thread uses a handle (and the context it was made from) at a
 *    time. Different contexts may be used from different threads.
 *  - Callbacks run inside the wireup call that triggered them; they must not call wireup
 *    functions on the same handle.
 *  - Enums: every value is listed here with its meaning; a *_name() function gives the text
 *    logs and wireup_stats_json() use ("rejected", "negotiated"). Compare the values, never the
 *    text. A newer library may add values at the end: treat one you do not know as "other".
 *
 * Growing structs (the ABI rule: wireup_version.h says which headers a program was built with):
 *  - Every struct the caller allocates starts with `uint32_t struct_size`, the caller's
 *    sizeof. Set it with the struct's init function (wireup_context_params_init,
 *    wireup_params_init) or WIREUP_STRUCT_INIT(&s) (the output structs): both zero the struct
 *    first. A struct_size of 0 (a struct never initialized) is refused.
 *  - The library reads and writes only the first min(struct_size, its own sizeof) bytes. A
 *    program built against older headers passes a smaller struct: the fields it lacks take
 *    their documented defaults (inputs) or are not written (outputs). A program built against
 *    newer headers passes a larger one: inputs are accepted only if everything past what this
 *    library knows is zero (it asks for nothing new), else WIREUP_ERR_INVALID_ARGUMENT;
 *    outputs get that tail zeroed. A struct_size below the first layout shipped is
 *    WIREUP_ERR_INVALID_ARGUMENT, naming the struct and both sizes.
 *  - Structs the library allocates and hands to callbacks (wireup_qp_request_t,
 *    wireup_event_t, wireup_device_event_t, wireup_lane_event_t) carry the library's own
 *    struct_size: read a field only if WIREUP_HAS_FIELD(ev, field).
 *  - Fields are only ever appended, never removed, reordered or retyped; the meaning of a
 *    field never changes. wireup_peer_t is the exception: it is an array element (the stride
 *    is the caller's sizeof), it has no struct_size and will not grow.
 *  - What would break a program built against older headers bumps WIREUP_VERSION_MAJOR.
 */
#ifndef WIREUP_WIREUP_H
#define WIREUP_WIREUP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wireup/wireup_version.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_context;
struct ibv_qp;

/* The most bytes wireup_local_address() writes with one rail (device.rails = 1): allgather
 * this many per rank. 20 without the liveness service; 24 with it (liveness.enable: its UDP
 * endpoint travels in the address). Two IPv4 rails take 18 (22 with liveness); any number of
 * rails at most WIREUP_RAILS_ADDRESS_MAX (16 IPv6 rails, with liveness). */
#define WIREUP_ADDRESS_MAX 24
#define WIREUP_RAILS_ADDRESS_MAX 326

typedef enum wireup_status {
  WIREUP_OK = 0,
  WIREUP_ERR_INVALID_ARGUMENT = 1, /* NULL handle or pointer, malformed value, index out of range */
  WIREUP_ERR_INVALID_STATE = 2,    /* call out of order (progress before start, a second start) */
  WIREUP_ERR_BUFFER_TOO_SMALL = 3, /* like ERANGE: *len now holds the size needed */
  WIREUP_ERR_NO_DEVICE = 4,        /* no RDMA device, or none usable after include/exclude */
  WIREUP_ERR_CONFIG = 5,           /* configuration file / environment / override invalid */
  WIREUP_ERR_NOT_SUPPORTED = 6,
  WIREUP_ERR_TIMED_OUT = 7,
  WIREUP_ERR_REJECTED = 8,
  WIREUP_ERR_UNREACHABLE = 9,
  WIREUP_ERR_ADDRESS = 10,         /* address or route resolution failed */
  WIREUP_ERR_PROTOCOL = 11,        /* a peer sent something unacceptable */
  WIREUP_ERR_DEVICE_REMOVED = 12,
  WIREUP_ERR_RESOURCE = 13,        /* ENOMEM, QP limits, backlog */
  WIREUP_ERR_SYSTEM = 14,          /* any other failing system or library call */
  WIREUP_ERR_INTERNAL = 15         /* a bug in wireup: please report the last_error text */
} wireup_status_t;

/* A static one-line description of `status` ("invalid argument"); never NULL. */
const char* wireup_strerror(wireup_status_t status);

/* The version of the library the program runs with (WIREUP_VERSION_* are those of the headers
 * it was compiled against). Any pointer may be NULL. */
void wireup_version(unsigned* major, unsigned* minor, unsigned* patch);
/* The same as text, "MAJOR.MINOR.PATCH"; static, never NULL. */
const char* wireup_version_string(void);

/* Zeroes the struct *ptr and sets its struct_size to the caller's sizeof (see "Growing
 * structs" above). Use it on every output struct before handing it to a *_get call. */
#define WIREUP_STRUCT_INIT(ptr) \
  (memset((ptr), 0, sizeof *(ptr)), (ptr)->struct_size = (uint32_t)sizeof *(ptr))

/* Whether a struct the library filled or allocated holds `field` (its struct_size covers it). */
#define WIREUP_HAS_FIELD(ptr, field) \
  ((size_t)(ptr)->struct_size >= offsetof(__typeof__(*(ptr)), field) + sizeof((ptr)->field))

typedef struct wireup_context wireup_context_t;
typedef struct wireup_handle wireup_t;

/* ---------------------------------------------------------------------------------------
 * Context: configuration, provider, device choice
 * ------------------------------------------------------------------------------------- */

typedef struct wireup_context_params {
  uint32_t struct_size; /* the caller's sizeof: set by wireup_context_params_init */
  /* Provider name; NULL = "rdma" (librdmacm + libibverbs), the only one the C API offers. */
  const char* provider;
  /* Tuning file (TOML); NULL = $WIREUP_CONFIG, else ./wireup.toml, else
   * /etc/wireup/wireup.toml, else built-in defaults. A named file that cannot be read is an
   * error. Environment variables WIREUP_<SECTION>_<KEY> override the file and `overrides`. */
  const char* config_file;
  /* Programmatic overrides, "section.key=value" each (e.g. "engine.connect_window=16"). */
  const char* const* config_overrides;
  size_t num_config_overrides;
  /* This process's rank on its node, to spread processes over equally near devices;
   * -1 = config device.local_rank, else the first of OMPI_COMM_WORLD_LOCAL_RANK,
   * MPI_LOCALRANKID, SLURM_LOCALID, PMIX_LOCAL_RANK that is set. A set variable that is not
   * an integer 0..65535 fails wireup_context_create (WIREUP_ERR_CONFIG, naming it). */
  int local_rank;
  /* IPv4/IPv6 address to listen on; NULL = found from the chosen device's port
   * (config device.port): RoCE, the netdevs its GID table names (a bond, a VLAN interface);
   * InfiniBand, its IPoIB interfaces (dev_port = port - 1, P_Key children after their
   * parent). The first IPv4 address over those interfaces, else the first global IPv6 one;
   * link-local IPv6 is never chosen (its scope id means nothing to a peer).
   * wireup_context_listen_source() says which interface and why. */
  const char* listen_ip;
} wireup_context_params_t;

/* Fills `params` with the defaults described above (local_rank = -1, everything else NULL/0)
 * and its struct_size. Inline: it sets the size of the struct as this program knows it. */
static inline void wireup_context_params_init(wireup_context_params_t* params) {
  WIREUP_STRUCT_INIT(params);
  params->local_rank = -1;
}

/*
 * wireup_context_create -- load the configuration, open the provider, choose the device.
 *
 * Loads the configuration (every problem is reported at once), creates the provider, ranks
 * the RDMA devices with the live hwloc topology, this process's CPU binding, the local rank
 * and device.include / device.exclude, and takes the best one. Then finds the address to
 * listen on.
 *
 * params  may be NULL (all defaults).
 * out     receives the context; unchanged on failure.
 *
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (out NULL, struct_size, unknown provider, malformed
 *         override, unparsable listen_ip); WIREUP_ERR_CONFIG (file, environment or override invalid:
 *         the message lists every problem with file:line); WIREUP_ERR_NO_DEVICE (no RDMA
 *         device on this machine, or every one excluded or its port down: the message says
 *         which and why); WIREUP_ERR_ADDRESS (the device has no IPv4 address: set listen_ip);
 *         WIREUP_ERR_SYSTEM. Read the message with wireup_last_error(NULL).
 */
wireup_status_t wireup_context_create(const wireup_context_params_t* params, wireup_context_t** out);

/* The chosen device ("mlx5_0", "rxe0"); NULL if ctx is NULL. Valid until the context goes. */
const char* wireup_context_device_name(const wireup_context_t* ctx);

/* The chosen device's ibv_context: create the PD, CQs and QPs the factory hands out on it.
 * Owned by the context (do not close it); NULL if ctx is NULL. */
struct ibv_context* wireup_context_ibv_context(const wireup_context_t* ctx);

/* The IP address wireup handles of this context listen on, as text ("10.0.0.1"). */
const char* wireup_context_listen_address(const wireup_context_t* ctx);

/* Several NICs per process ("rails", config device.rails: a number, or "all" equally near
 * devices). The context opens every rail's device, rail 0 first; rail 0 is the device above
 * (wireup_context_device_name, wireup_context_ibv_context, wireup_context_listen_address).
 * A wireup handle listens on every rail and publishes all their addresses; each lane to a peer
 * runs on a pair of rails in one subnet (wireup_result_t.rail says which of ours), so the
 * transport creates a PD and CQs on every rail's ibv_context and its factory makes each QP on
 * the request's context. listen_ip must be NULL with several rails.
 * wireup_context_num_rails: 1 with device.rails = 1; 0 if ctx is NULL. */
size_t wireup_context_num_rails(const wireup_context_t* ctx);
/* Rail `rail`'s ibv_context (owned by the context), device name, and listen address with its
 * subnet's prefix length ("10.0.2.1/24"; without "/N" when unknown). NULL if ctx is NULL or
 * rail >= wireup_context_num_rails(ctx) (wireup_context_last_error says which). */
struct ibv_context* wireup_context_rail_ibv_context(const wireup_context_t* ctx, size_t rail);
const char* wireup_context_rail_device_name(const wireup_context_t* ctx, size_t rail);
const char* wireup_context_rail_listen_address(const wireup_context_t* ctx, size_t rail);

/* How the listen address was found, one line: "rxe0 port 1 -> eth0 (GID 0 (RoCE v2)) ->
 * 10.0.0.1 (IPv4)", or "listen_ip 10.0.0.1 (given)". NULL if ctx is NULL. */
const char* wireup_context_listen_source(const wireup_context_t* ctx);

/* The effective value of one configuration key ("engine.lanes" -> "4", "device.include" ->
 * "[\"mlx5_0\"]"), as wireup_context_config_dump() writes it (TOML: strings and 64-bit
 * values quoted, "\"0x10\""); a secret shows only whether it is set: "\"0x0\"" or
 * "\"<set, hidden>\"" (engine.job_key). Valid until the context goes.
 * NULL if ctx or key is NULL or the key is unknown (wireup_context_last_error(ctx) says which). */
const char* wireup_context_config_value(const wireup_context_t* ctx, const char* key);

/* The effective configuration as TOML, each value commented with its source ("default",
 * "/etc/wireup/wireup.toml:12", "env WIREUP_ENGINE_LANES", "api"). Valid until destroy. */
const char* wireup_context_config_dump(const wireup_context_t* ctx);

/* The last failure of a call on `ctx` (or of this thread, for NULL); "" if none. */
const char* wireup_context_last_error(const wireup_context_t* ctx);

/*
 * wireup_context_destroy -- release the provider and the device.
 *
 * Every wireup_t made from ctx must be destroyed first, and the transport's own PD, CQs and
 * QPs on wireup_context_ibv_context() must be gone (the ibv_context closes here).
 * Errors: WIREUP_ERR_INVALID_STATE when wireup handles still use ctx (nothing is freed).
 * NULL is accepted and ignored.
 */
wireup_status_t wireup_context_destroy(wireup_context_t* ctx);

/* ---------------------------------------------------------------------------------------
 * Wireup handle: one per process and job
 * ------------------------------------------------------------------------------------- */

/* What the library asks the factory for. */
typedef struct wireup_qp_request {
  uint32_t struct_size;         /* the library's sizeof (see WIREUP_HAS_FIELD) */
  uint32_t peer;                /* peer rank */
  uint32_t lane;                /* 0 .. lanes-1 */
  int active;                   /* 1: this side initiates the connection, 0: it accepts */
  struct ibv_context* context;  /* the device the CM resolved: create the QP on it */
  uint32_t rail;                /* the rail of that device (wireup_context_num_rails); 0 with
                                   one rail */
} wireup_qp_request_t;

/*
 * The transport's QP factory. Creates an RC QP (ibv_create_qp on its own PD and CQs, in
 * RESET) for `req` and stores it in *qp_out. Return 0 on success or a positive errno value
 * (the attempt fails with it and the peer's connection is retried or reported).
 * The QP stays the transport's: the library modifies it through the CM, never destroys it.
 */
typedef int (*wireup_qp_create_fn)(void* arg, const wireup_qp_request_t* req, struct ibv_qp** qp_out);

/*
 * Optional: called when the library stops using a QP the factory made that was never handed
 * over as a result (an attempt that failed, was superseded or was cut short by the timeout or
 * by wireup_destroy; or a connection an RTU repair took back inside the same
 * wireup_progress() call that made it). The transport may destroy it then, and it never
 * appears in the results. A QP handed over as a result is never released: the transport
 * destroys it, once, when it is done with it.
 */
typedef void (*wireup_qp_release_fn)(void* arg, const wireup_qp_request_t* req, struct ibv_qp* qp);

typedef struct wireup_params {
  uint32_t struct_size; /* the caller's sizeof: set by wireup_params_init */
  uint32_t rank;        /* this process's rank, < nranks */
  uint32_t nranks;      /* the job size: every rank must pass the same */
  uint32_t lanes;       /* connections per peer; 0 = config engine.lanes */
  uint64_t job_key;     /* a secret every rank of the job shares (e.g. broadcast from rank 0);
                           0 = config engine.job_key; 0 there too = given later with
                           wireup_set_job_key(), before wireup_start(). Requests with another
                           key are rejected. */
  wireup_qp_create_fn qp_create;   /* required: the QP factory */
  wireup_qp_release_fn qp_release; /* optional (NULL: QPs never handed over are not returned) */
  void* qp_arg;                    /* passed to qp_create and qp_release */
} wireup_params_t;

/* Zeroes `params` (every field takes its default) and sets its struct_size. Inline, as
 * wireup_context_params_init. */
static inline void wireup_params_init(wireup_params_t* params) { WIREUP_STRUCT_INIT(params); }

/*
 * wireup_create -- create the channels and the listener on the context's device.
 *
 * After it returns, wireup_local_address() is valid. params->qp_create is called with
 * params->qp_arg during wireup_progress() for every (peer, lane) this rank connects or
 * accepts; params->qp_release with the same qp_arg.
 *
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL ctx/params/out, params->qp_create NULL,
 *         params->struct_size, nranks 0, rank >= nranks, lanes out of range);
 *         WIREUP_ERR_ADDRESS / WIREUP_ERR_SYSTEM (rdma_bind_addr / rdma_listen failed: the
 *         message names the address).
 */
wireup_status_t wireup_create(wireup_context_t* ctx, const wireup_params_t* params, wireup_t** out);

/*
 * wireup_set_job_key -- the job key, after wireup_create() and before wireup_start(), for a
 * transport that must publish its address before it can learn the key: Open MPI's modex
 * carries both and reads back nothing before its one fence, so a BTL publishes its address at
 * component init and reads the key rank 0 drew after the fence. Replaces the key given at
 * create. wireup_start() refuses a handle that has no key yet. Since 0.2.0
 * (#if WIREUP_VERSION >= WIREUP_VERSION_OF(0, 2, 0)).
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL handle, job_key 0); WIREUP_ERR_INVALID_STATE
 *         after wireup_start().
 */
wireup_status_t wireup_set_job_key(wireup_t* w, uint64_t job_key);

/*
 * wireup_local_address -- the bytes to publish to every other rank.
 *
 * buf  receives up to *len bytes; len: in, the capacity of buf; out, the bytes written (or,
 *      with WIREUP_ERR_BUFFER_TOO_SMALL, the bytes needed). WIREUP_RAILS_ADDRESS_MAX at most.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT, WIREUP_ERR_BUFFER_TOO_SMALL; WIREUP_ERR_INVALID_STATE
 *         once wireup is done (the listener is closed then: publish the address before).
 */
wireup_status_t wireup_local_address(const wireup_t* w, uint8_t* buf, size_t* len);

/* An array element of wireup_set_peers: no struct_size, and it never grows (a new field
 * would come with a new function). */
typedef struct wireup_peer {
  uint32_t rank;
  const uint8_t* address;  /* what that rank's wireup_local_address() returned */
  size_t address_len;
} wireup_peer_t;

/*
 * wireup_set_peers -- the peer table, in any order; this rank's own entry is allowed and
 * skipped (so an allgather result can be passed as is). The bytes are copied. May be called
 * again before wireup_start() to replace the table.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (every bad entry is named: rank >= nranks, listed
 *         twice, malformed address); WIREUP_ERR_INVALID_STATE after wireup_start().
 */
wireup_status_t wireup_set_peers(wireup_t* w, const wireup_peer_t* peers, size_t n);

/* wireup_start -- begin connecting. Errors: WIREUP_ERR_INVALID_STATE if called twice,
 * before wireup_set_peers() (on demand the table is optional: wireup_on_demand.h), or
 * without a job key (wireup_set_job_key). */
wireup_status_t wireup_start(wireup_t* w);

/*
 * wireup_progress -- handle what is ready; never blocks.
 *
 * work_done  (may be NULL) receives the amount of work done (0 = nothing was ready).
 * Runs the QP factory, the release and event callbacks. One peer failing is not an error
 * here: it appears in wireup_error_get(). Errors: WIREUP_ERR_INVALID_STATE before
 * wireup_start(); WIREUP_ERR_SYSTEM when a channel itself fails.
 */
wireup_status_t wireup_progress(wireup_t* w, int* work_done);

/*
 * wireup_fd -- one pollable fd for the transport's event loop: readable (POLLIN) when
 * wireup_progress() has work (a CM event, a retry or the deadline due), and stays readable
 * until wireup_progress() has handled it (level-triggered). It is an epoll fd owned by the
 * handle; do not read or close it. It stays the same fd for the handle's life.
 * Returns -1 if w is NULL.
 */
int wireup_fd(const wireup_t* w);

/* wireup_wait -- block until wireup_progress() has work or timeout_ms passes (-1: no limit
 * but the wireup deadline). A timeout is not an error. */
wireup_status_t wireup_wait(wireup_t* w, int timeout_ms);

/* 1 when every planned (peer, lane) is connected or given up on (on demand: every lane asked
 * for so far), 0 while wireup goes on (or before wireup_start), -1 if w is NULL. */
int wireup_done(const wireup_t* w);

/* wireup_fail_peer -- the transport learnt out of band that rank `peer` is dead (its launcher
 * said so: a PMIx process-termination event, say). Every (peer, lane) with it that is still
 * on its way (not connected, not given up on, and on demand not idle: a lane never asked for
 * or disconnected is left alone) is given up now, instead of after the CM's timeouts; each
 * shows in wireup_error_get() as kind WIREUP_ERROR_DISCONNECTED with `why` in its message.
 * given_up (may be NULL) receives how many were given up. Call it from the thread that
 * progresses the handle. Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL handle or why);
 * WIREUP_ERR_INVALID_STATE before wireup_start(). */
wireup_status_t wireup_fail_peer(wireup_t* w, uint32_t peer, const char* why, size_t* given_up);

/* ---------------------------------------------------------------------------------------
 * Results, errors, events, statistics
 * ------------------------------------------------------------------------------------- */

/* Results and errors: wireup_results.h (included here). */
#include "wireup/wireup_results.h"

/* Events of established connections and of the device: wireup_events.h (included here). */
#include "wireup/wireup_events.h"

/* Counters, tallies and per-phase timings: wireup_stats.h (included here). */
#include "wireup/wireup_stats.h"

/* Connecting on demand (wireup_connect, the address and lane callbacks): wireup_on_demand.h. */
#include "wireup/wireup_on_demand.h"

/* The last failure of a call on `w` (or of this thread, for NULL); "" if none. */
const char* wireup_last_error(const wireup_t* w);

/*
 * wireup_destroy -- disconnect every connection, wait up to 2 s for the peers' answers,
 * destroy the CM ids and channels. The transport's QPs are not destroyed (release callbacks
 * run for QPs that never connected); move them to ERR before reusing or destroying them.
 * NULL is accepted and ignored. Always frees the handle.
 */
void wireup_destroy(wireup_t* w);

#ifdef __cplusplus
}
#endif

#endif /* WIREUP_WIREUP_H */
