/*
 * btl_wireup -- an Open MPI 4.1 BTL whose connections are made by wireup, through its public
 * C API only (include/wireup/wireup.h), as any outside transport links it.
 *
 * One module per process. Per rail (a device wireup opened): a PD, one CQ for sends, receives
 * and RDMA, and one SRQ every QP of the rail receives on. wireup's QP factory makes each QP on
 * those, wireup drives it to RTS through the CM, and hands it over; the BTL posts SEND, RDMA
 * WRITE and RDMA READ on it and destroys it once, at finalize (or when its lane closes).
 *
 * Files: btl_wireup_component.c (MCA parameters, init, the modex, progress),
 * btl_wireup_conn.c (the wireup handle: address, job key, bulk/on demand, teardown),
 * btl_wireup_lanes.c (the QP factory, lane events, a peer declared unreachable),
 * btl_wireup_endpoint.c (per-peer state and the queue of sends waiting for a lane),
 * btl_wireup_frag.c (registered send/receive buffers), btl_wireup_module.c (the send path),
 * btl_wireup_rdma.c (registration through Open MPI's rcache, put and get),
 * btl_wireup_counters.c (what the BTL moved, printed at finalize).
 */
#ifndef BTL_WIREUP_H
#define BTL_WIREUP_H

#include "opal_config.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/util/proc.h"

#include <wireup/wireup.h>

#define BTL_WIREUP_MAX_RAILS 8
#define BTL_WIREUP_MAX_LANES 8

/* How the BTL asks wireup to connect (MCA parameter btl_wireup_mode). */
typedef enum btl_wireup_mode { BTL_WIREUP_ON_DEMAND = 0, BTL_WIREUP_BULK = 1 } btl_wireup_mode_t;

/* What the BTL moved, for btl_wireup_counters (btl_wireup_counters.c). */
typedef struct btl_wireup_counters {
  uint64_t lanes_ready;      /* lanes handed over (READY lane events) */
  uint64_t peers_connected;  /* peers with at least their lane 0 ready */
  uint64_t sends, send_bytes;  /* SENDs posted and their payload (BTL header not counted) */
  uint64_t recvs, recv_bytes;  /* receives delivered to ob1 */
  uint64_t puts, put_bytes;    /* RDMA WRITEs */
  uint64_t gets, get_bytes;    /* RDMA READs */
  uint64_t reg_requests;       /* btl_register_mem calls */
  uint64_t reg_native;         /* ibv_reg_mr calls the rcache asked for (its misses) */
  uint64_t dereg_native;       /* ibv_dereg_mr calls */
  uint64_t qps_created, qps_destroyed, qps_released;
  uint64_t sends_queued;       /* sends that waited for a lane or a send-queue slot */
  uint64_t lanes_by_rail[BTL_WIREUP_MAX_RAILS]; /* READY lanes per local rail */
  uint64_t rdma_by_rail[BTL_WIREUP_MAX_RAILS];  /* RDMA READ/WRITE posted per local rail */
} btl_wireup_counters_t;

/* One lane of a peer: a QP wireup handed over. */
typedef struct btl_wireup_lane {
  struct ibv_qp* qp;   /* NULL until READY, and after CLOSED */
  uint32_t rail;
  int ready;
  int sq_used;         /* WRs posted and not completed */
} btl_wireup_lane_t;

/* Per-peer state (Open MPI's endpoint). */
struct mca_btl_base_endpoint_t {
  opal_list_item_t super;
  struct opal_proc_t* proc;  /* NULL for a peer whose lanes came before add_procs named it */
  uint32_t rank;
  int connect_asked;         /* wireup_connect was called (on demand) */
  int failed;                /* a lane was given up: every send to it fails */
  uint32_t next_lane;        /* round robin of RDMA ops over the ready lanes */
  btl_wireup_lane_t lanes[BTL_WIREUP_MAX_LANES];
  opal_list_t pending;       /* send frags waiting for lane 0 or a send-queue slot */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_base_endpoint_t);

/* The keys of one registration, per rail (an RDMA op uses those of its lane's rail). */
struct mca_btl_base_registration_handle_t {
  uint32_t lkey[BTL_WIREUP_MAX_RAILS];
  uint32_t rkey[BTL_WIREUP_MAX_RAILS];
};

typedef struct btl_wireup_reg {
  mca_rcache_base_registration_t base;
  struct ibv_mr* mr[BTL_WIREUP_MAX_RAILS];
  mca_btl_base_registration_handle_t handle;
} btl_wireup_reg_t;

/* The header every SEND carries before ob1's bytes. */
typedef struct btl_wireup_hdr {
  uint8_t tag;
  uint8_t pad[3];
  uint32_t size; /* payload bytes after the header */
} btl_wireup_hdr_t;

typedef enum btl_wireup_wr_kind { BTL_WIREUP_WR_SEND = 1, BTL_WIREUP_WR_RECV = 2, BTL_WIREUP_WR_RDMA = 3 } btl_wireup_wr_kind_t;

/* A send or receive buffer: registered memory of the module's slab. */
typedef struct btl_wireup_frag {
  mca_btl_base_descriptor_t base; /* first: ob1 holds &base */
  mca_btl_base_segment_t segment;
  btl_wireup_wr_kind_t kind;
  struct mca_btl_base_endpoint_t* endpoint;
  btl_wireup_hdr_t* hdr;        /* the registered buffer: header, then payload */
  uint32_t rail;                /* receives: the rail whose SRQ holds it */
  btl_wireup_lane_t* lane;      /* the lane it was posted on */
} btl_wireup_frag_t;

/* An RDMA op in flight: what its completion calls back. */
typedef struct btl_wireup_rdma_op {
  btl_wireup_wr_kind_t kind; /* BTL_WIREUP_WR_RDMA, first: wr_id points here */
  struct btl_wireup_rdma_op* next_free;
  struct mca_btl_base_endpoint_t* endpoint;
  int lane;
  void* local_address;
  mca_btl_base_registration_handle_t* local_handle;
  mca_btl_base_rdma_completion_fn_t cbfunc;
  void* cbcontext;
  void* cbdata;
} btl_wireup_rdma_op_t;

typedef struct btl_wireup_rail {
  struct ibv_context* context;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_srq* srq;
  struct ibv_mr* slab_mr;       /* the frag slab, registered on this rail */
} btl_wireup_rail_t;

typedef struct mca_btl_wireup_module {
  mca_btl_base_module_t super;
  wireup_context_t* ctx;
  wireup_t* w;
  uint32_t rank, nranks, lanes;
  size_t nrails;
  btl_wireup_rail_t rails[BTL_WIREUP_MAX_RAILS];
  int started;                  /* wireup_start done (at the first add_procs) */
  /* Endpoints by rank (made by add_procs, or by a lane of a peer add_procs has not named). */
  struct mca_btl_base_endpoint_t** by_rank;
  /* The frag slab: send frags then receive frags, each buffer frag_size bytes. */
  void* slab;
  size_t slab_bytes, frag_size;
  btl_wireup_frag_t* frags;
  size_t nsend, nrecv_per_rail;
  btl_wireup_frag_t** free_sends;
  size_t nfree_sends;
  btl_wireup_rdma_op_t* free_ops;
  mca_rcache_base_module_t* rcache;
  mca_btl_base_module_error_cb_fn_t error_cb;
  pthread_mutex_t lock;         /* recursive; taken only with MPI threads */
  int locking;
  unsigned progress_calls;      /* wireup_progress once in 64 calls when nothing is connecting */
  int connecting;               /* lanes asked for and not settled: progress wireup every call */
  /* QPs of lanes that closed (on demand, the peer disconnected them): the BTL's to destroy, at
   * finalize, after their flushed completions have been polled. */
  struct ibv_qp** retired;
  size_t nretired, retired_cap;
  btl_wireup_counters_t counters;
} mca_btl_wireup_module_t;

typedef struct mca_btl_wireup_component {
  mca_btl_base_component_3_0_0_t super;
  /* MCA parameters */
  int mode;                  /* btl_wireup_mode: on_demand (0) or bulk (1) */
  int lanes;                 /* btl_wireup_lanes: 0 = wireup's engine.lanes */
  char* config_file;         /* btl_wireup_config: a wireup TOML file */
  int counters;              /* btl_wireup_counters: print the counters at finalize */
  int send_frags, recv_frags;
  int verbose;
  mca_btl_wireup_module_t* module;
} mca_btl_wireup_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_wireup_component_t mca_btl_wireup_component;

/* btl_wireup_conn.c */
int btl_wireup_conn_open(mca_btl_wireup_module_t* m);     /* context, handle, rails; publishes */
int btl_wireup_conn_start(mca_btl_wireup_module_t* m);    /* job key; start; bulk: wires all */
int btl_wireup_conn_progress(mca_btl_wireup_module_t* m); /* wireup_progress */
int btl_wireup_conn_ask(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep);
void btl_wireup_conn_close(mca_btl_wireup_module_t* m);
/* btl_wireup_lanes.c: wireup's callbacks (qp_arg / arg is the module). */
int btl_wireup_make_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** out);
void btl_wireup_release_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp* qp);
void btl_wireup_on_lane(void* arg, const wireup_lane_event_t* ev);
void btl_wireup_on_event(void* arg, const wireup_event_t* ev);
/* A fatal failure of peer `ep`: every queued send fails, ob1's error callback is told. */
void btl_wireup_peer_failed(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep, const char* why);

/* btl_wireup_endpoint.c */
struct mca_btl_base_endpoint_t* btl_wireup_endpoint_get(mca_btl_wireup_module_t* m, uint32_t rank);
int btl_wireup_endpoint_flush(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep);

/* A work request's wr_id points at the kind field of its frag or RDMA op. */
#define BTL_WIREUP_FRAG_OF(kind_ptr) \
  ((btl_wireup_frag_t*)((char*)(kind_ptr) - offsetof(btl_wireup_frag_t, kind)))

/* btl_wireup_frag.c */
int btl_wireup_frags_create(mca_btl_wireup_module_t* m);
int btl_wireup_frags_register(mca_btl_wireup_module_t* m, size_t rail); /* slab MR, SRQ posts */
void btl_wireup_frags_destroy(mca_btl_wireup_module_t* m);
btl_wireup_frag_t* btl_wireup_frag_alloc(mca_btl_wireup_module_t* m);
void btl_wireup_frag_return(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f);
int btl_wireup_frag_post_recv(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f);
int btl_wireup_frag_post_send(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f, btl_wireup_lane_t* lane);

/* btl_wireup_module.c */
extern mca_btl_base_module_t btl_wireup_module_template;
int btl_wireup_poll(mca_btl_wireup_module_t* m);

/* btl_wireup_rdma.c */
int btl_wireup_rcache_create(mca_btl_wireup_module_t* m);
mca_btl_base_registration_handle_t* btl_wireup_register_mem(mca_btl_base_module_t* btl,
                                                            struct mca_btl_base_endpoint_t* ep,
                                                            void* base, size_t size, uint32_t flags);
int btl_wireup_deregister_mem(mca_btl_base_module_t* btl, mca_btl_base_registration_handle_t* h);
int btl_wireup_put(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                   uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                   mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata);
int btl_wireup_get(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                   uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                   mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata);
void btl_wireup_rdma_complete(mca_btl_wireup_module_t* m, btl_wireup_rdma_op_t* op, int status);

/* btl_wireup_counters.c */
void btl_wireup_counters_print(const mca_btl_wireup_module_t* m);

#define BTL_WIREUP_LOCK(m) \
  do { if ((m)->locking) pthread_mutex_lock(&(m)->lock); } while (0)
#define BTL_WIREUP_UNLOCK(m) \
  do { if ((m)->locking) pthread_mutex_unlock(&(m)->lock); } while (0)

#endif /* BTL_WIREUP_H */
