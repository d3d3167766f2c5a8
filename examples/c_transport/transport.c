/*
 * c_transport -- a minimal MPI transport in C that wires up its own RC QPs with libwireup.
 *
 * What a real transport does, end to end: MPI is the out-of-band channel; the transport owns
 * its PD, one CQ and every QP (created by the factory callback below); wireup connects them
 * all through the RDMA CM. Then the transport checks what it got: the QPNs against what the
 * peers say (MPI_Alltoall), one small message each way on every connection (eager: a SEND), and
 * one large message each way on every connection (rendezvous: an RTS, then RDMA READ or RDMA
 * WRITE with immediate between the buffers, see rendezvous.h).
 *
 *   mpirun -np 8 c_transport [--lanes N] [--wait] [--rndv get|put] [--rndv-bytes N]
 *                            [--config FILE] [--set section.key=value]...
 *
 * --wait uses wireup_wait() instead of poll() on wireup_fd(). --rndv picks the rendezvous
 * protocol (default get: the receiver READs), --rndv-bytes the large message's size (default
 * 256 KiB). Exit status 0 only if every connection exists on both sides with crossed QPNs and
 * every message, small and large, arrived intact.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <infiniband/verbs.h>
#include <mpi.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rendezvous.h"
#include "wireup/wireup.h"

#define MSG_BYTES 64
#define MAX_SETS 16

struct transport {
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  unsigned released;     /* QPs of failed attempts handed back by wireup */
  unsigned disconnects;  /* steady-state events seen */
  unsigned lanes_lost;   /* results whose peer never got the RTU (WIREUP_EVENT_RTU_LOST): not reconnected */
};

/* Address as exchanged: fixed size so that MPI_Allgather can carry it. */
struct wire_address {
  uint32_t len;
  uint8_t bytes[WIREUP_ADDRESS_MAX];
};

static int create_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** qp_out) {
  struct transport* t = arg;
  if (req->context != t->pd->context) return ENODEV; /* one device: our PD lives on it */
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = t->cq;
  a.recv_cq = t->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 4;
  a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  struct ibv_qp* qp = ibv_create_qp(t->pd, &a);
  if (qp == NULL) return errno != 0 ? errno : ENOMEM;
  *qp_out = qp;
  return 0;
}

static void release_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp* qp) {
  struct transport* t = arg;
  (void)req;
  ibv_destroy_qp(qp); /* never handed over as a result (wireup.h): ours to destroy, now */
  t->released++;
}

static void on_event(void* arg, const wireup_event_t* ev) {
  struct transport* t = arg;
  t->disconnects += ev->type == WIREUP_EVENT_DISCONNECTED;
  /* The lane's QP stays ours (it is still in the results, never released): we stop using it
   * and destroy it at teardown like every other. */
  t->lanes_lost += ev->type == WIREUP_EVENT_RTU_LOST;
}

/* The device's async events the library did not answer itself (it answers COMM_EST; this
 * transport leaves device.async_events at "library"): a transport would tear down the
 * connection a QP_FATAL names, or refill the SRQ a SRQ_LIMIT_REACHED names (ev->handle);
 * this one says what came. */
static void on_device_event(void* arg, const wireup_device_event_t* ev) {
  (void)arg;
  if (ev->known)
    fprintf(stderr, "c_transport: %s on %s, qpn 0x%x (rank %u lane %u)\n", ev->name, ev->device, ev->qpn, ev->peer,
            ev->lane);
  else if (ev->object == WIREUP_DEVICE_OBJECT_CQ || ev->object == WIREUP_DEVICE_OBJECT_SRQ ||
           ev->object == WIREUP_DEVICE_OBJECT_WQ)
    fprintf(stderr, "c_transport: %s on %s (object %p)\n", ev->name, ev->device, ev->handle);
  else
    fprintf(stderr, "c_transport: %s on %s (port %u, qpn 0x%x)\n", ev->name, ev->device, ev->port, ev->qpn);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(int rank, const char* what, const char* detail) {
  fprintf(stderr, "c_transport rank %d: %s: %s\n", rank, what, detail);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static uint64_t random_key(void) {
  uint64_t k = 0;
  FILE* f = fopen("/dev/urandom", "rb");
  if (f != NULL) {
    if (fread(&k, sizeof k, 1, f) != 1) k = 0;
    fclose(f);
  }
  if (k == 0) k = ((uint64_t)time(NULL) << 20) ^ (uint64_t)clock() ^ 0x9e3779b97f4a7c15ULL;
  return k;
}

static enum rndv_protocol parse_rndv(int rank, const char* s) {
  if (strcmp(s, "get") == 0) return RNDV_GET;
  if (strcmp(s, "put") == 0) return RNDV_PUT;
  die(rank, "--rndv", "must be get or put");
  return RNDV_GET;
}

/* Runs wireup to completion: poll() on the one fd, or wireup_wait(). */
static void drive(wireup_t* w, int rank, int use_wait) {
  while (wireup_done(w) == 0) {
    int work = 0;
    if (wireup_progress(w, &work) != WIREUP_OK) die(rank, "wireup_progress", wireup_last_error(w));
    if (work > 0) continue;
    if (use_wait) {
      if (wireup_wait(w, 1000) != WIREUP_OK) die(rank, "wireup_wait", wireup_last_error(w));
    } else {
      struct pollfd p = {wireup_fd(w), POLLIN, 0};
      if (poll(&p, 1, 1000) < 0 && errno != EINTR) die(rank, "poll", strerror(errno));
    }
  }
}

/* One SEND each way on every connection; returns the number of problems. */
static int exchange_messages(struct transport* t, wireup_t* w, int rank) {
  size_t n = wireup_result_count(w);
  if (n == 0) return 0;
  char* buf = calloc(n * 2, MSG_BYTES); /* [2i] send, [2i+1] receive */
  struct ibv_mr* mr = buf ? ibv_reg_mr(t->pd, buf, n * 2 * MSG_BYTES, IBV_ACCESS_LOCAL_WRITE) : NULL;
  if (mr == NULL) die(rank, "ibv_reg_mr", strerror(errno));
  wireup_result_t* r = calloc(n, sizeof *r);
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    WIREUP_STRUCT_INIT(&r[i]);
    wireup_result_get(w, i, &r[i]);
    struct ibv_sge sge = {(uintptr_t)(buf + (2 * i + 1) * MSG_BYTES), MSG_BYTES, mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 2 * i + 1, .sg_list = &sge, .num_sge = 1}, *badwr;
    if (ibv_post_recv(r[i].qp, &wr, &badwr) != 0) die(rank, "ibv_post_recv", strerror(errno));
  }
  MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before anyone sends */
  for (size_t i = 0; i < n; ++i) {
    char* m = buf + 2 * i * MSG_BYTES;
    int len = snprintf(m, MSG_BYTES, "from rank %d lane %u", rank, r[i].lane);
    struct ibv_sge sge = {(uintptr_t)m, (uint32_t)len, mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2 * i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED}, *badwr;
    if (ibv_post_send(r[i].qp, &wr, &badwr) != 0) die(rank, "ibv_post_send", strerror(errno));
  }
  size_t sends = 0, recvs = 0;
  double deadline = now_ms() + 60000;
  while ((sends < n || recvs < n) && now_ms() < deadline) {
    struct ibv_wc wc[16];
    int got = ibv_poll_cq(t->cq, 16, wc);
    if (got < 0) die(rank, "ibv_poll_cq", "failed");
    for (int k = 0; k < got; ++k) {
      /* wr_id 2i: the send of result i, 2i+1 its receive (opcode is not valid on errors). */
      size_t i = (size_t)wc[k].wr_id / 2;
      int is_recv = (int)(wc[k].wr_id & 1);
      if (is_recv) ++recvs;
      else ++sends;
      if (wc[k].status != IBV_WC_SUCCESS) {
        fprintf(stderr, "rank %d: %s completion error %s on rank %u lane %u\n", rank, is_recv ? "receive" : "send",
                ibv_wc_status_str(wc[k].status), r[i].peer, r[i].lane);
        ++bad;
        continue;
      }
      if (!is_recv) continue;
      char want[MSG_BYTES], got_text[MSG_BYTES];
      snprintf(want, sizeof want, "from rank %u lane %u", r[i].peer, r[i].lane);
      snprintf(got_text, sizeof got_text, "%.*s", (int)wc[k].byte_len, buf + (2 * i + 1) * MSG_BYTES);
      if (wc[k].qp_num != r[i].local_qpn || strcmp(want, got_text) != 0) {
        fprintf(stderr, "rank %d: on qpn 0x%x expected \"%s\", got \"%s\"\n", rank, wc[k].qp_num, want, got_text);
        ++bad;
      }
    }
  }
  if (sends < n || recvs < n) {
    fprintf(stderr, "rank %d: %zu/%zu sends, %zu/%zu receives completed within 60 s\n", rank, sends, n, recvs, n);
    ++bad;
  }
  ibv_dereg_mr(mr);
  free(r);
  free(buf);
  return bad;
}

/* One large message each way on every connection (rendezvous.h); returns the number of
 * problems and says which roles the connections had. */
static int exchange_large_messages(struct transport* t, wireup_t* w, int rank, enum rndv_protocol protocol,
                                   size_t bytes, unsigned* initiated, unsigned* accepted) {
  size_t n = wireup_result_count(w);
  wireup_result_t* r = calloc(n > 0 ? n : 1, sizeof *r);
  for (size_t i = 0; i < n; ++i) {
    WIREUP_STRUCT_INIT(&r[i]);
    wireup_result_get(w, i, &r[i]);
  }
  struct rndv* x = rndv_create(t->pd, t->cq, r, n, rank, protocol, bytes);
  free(r);
  MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before anyone sends an RTS */
  if (x == NULL) return 1;
  int bad = rndv_run(x, 60000);
  rndv_roles(x, initiated, accepted);
  rndv_destroy(x);
  return bad;
}

/* Every (peer, lane) must be connected, and its remote QPN must be that peer's local QPN. */
static int cross_check_qpns(wireup_t* w, int rank, int nranks, unsigned lanes) {
  size_t per = 2 * lanes; /* to each peer: (my local, my remote) per lane */
  uint32_t* mine = calloc((size_t)nranks * per, sizeof *mine);
  uint32_t* theirs = calloc((size_t)nranks * per, sizeof *theirs);
  for (size_t i = 0; i < wireup_result_count(w); ++i) {
    wireup_result_t r;
    WIREUP_STRUCT_INIT(&r);
    wireup_result_get(w, i, &r);
    mine[r.peer * per + 2 * r.lane] = r.local_qpn;
    mine[r.peer * per + 2 * r.lane + 1] = r.remote_qpn;
  }
  MPI_Alltoall(mine, (int)per, MPI_UINT32_T, theirs, (int)per, MPI_UINT32_T, MPI_COMM_WORLD);
  int bad = 0;
  for (int p = 0; p < nranks; ++p) {
    for (unsigned l = 0; p != rank && l < lanes; ++l) {
      uint32_t my_local = mine[p * per + 2 * l], my_remote = mine[p * per + 2 * l + 1];
      uint32_t peer_local = theirs[p * per + 2 * l], peer_remote = theirs[p * per + 2 * l + 1];
      if (my_local == 0 || my_remote != peer_local || peer_remote != my_local) {
        fprintf(stderr, "rank %d: rank %d lane %u: local 0x%x remote 0x%x, peer says local 0x%x remote 0x%x\n", rank,
                p, l, my_local, my_remote, peer_local, peer_remote);
        ++bad;
      }
    }
  }
  free(mine);
  free(theirs);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  unsigned lanes = 1;
  int use_wait = 0;
  enum rndv_protocol rndv = RNDV_GET;
  size_t rndv_bytes = 256 * 1024;
  const char* sets[MAX_SETS];
  wireup_context_params_t cp;
  wireup_context_params_init(&cp);
  cp.config_overrides = sets;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--lanes") == 0 && i + 1 < argc) lanes = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--wait") == 0) use_wait = 1;
    else if (strcmp(argv[i], "--rndv") == 0 && i + 1 < argc) rndv = parse_rndv(rank, argv[++i]);
    else if (strcmp(argv[i], "--rndv-bytes") == 0 && i + 1 < argc) rndv_bytes = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) cp.config_file = argv[++i];
    else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && cp.num_config_overrides < MAX_SETS)
      sets[cp.num_config_overrides++] = argv[++i];
    else die(rank, "usage", "c_transport [--lanes N] [--wait] [--rndv get|put] [--rndv-bytes N] [--config FILE] "
                            "[--set section.key=value]...");
  }
  if (lanes == 0) die(rank, "--lanes", "must be at least 1");
  if (rndv_bytes == 0 || rndv_bytes > (1u << 30)) die(rank, "--rndv-bytes", "must be 1 to 1 GiB");

  wireup_context_t* ctx = NULL;
  if (wireup_context_create(&cp, &ctx) != WIREUP_OK) die(rank, "wireup_context_create", wireup_last_error(NULL));
  struct transport t = {0};
  t.pd = ibv_alloc_pd(wireup_context_ibv_context(ctx));
  if (t.pd == NULL) die(rank, "ibv_alloc_pd", strerror(errno));
  int conns = (nranks - 1) * (int)lanes;
  /* Room for every completion one phase can have in flight: the rendezvous's three receives
   * and three sends per connection. */
  t.cq = ibv_create_cq(wireup_context_ibv_context(ctx), 6 * conns + 16, NULL, NULL, 0);
  if (t.cq == NULL) die(rank, "ibv_create_cq", strerror(errno));

  uint64_t key = rank == 0 ? random_key() : 0;
  MPI_Bcast(&key, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  wireup_params_t wp;
  wireup_params_init(&wp);
  wp.rank = (uint32_t)rank;
  wp.nranks = (uint32_t)nranks;
  wp.lanes = lanes;
  wp.job_key = key;
  wp.qp_create = create_qp;
  wp.qp_release = release_qp;
  wp.qp_arg = &t;
  wireup_t* w = NULL;
  if (wireup_create(ctx, &wp, &w) != WIREUP_OK) die(rank, "wireup_create", wireup_last_error(NULL));
  wireup_on_event(w, on_event, &t);
  wireup_on_device_event(w, on_device_event, &t);

  struct wire_address mine = {WIREUP_ADDRESS_MAX, {0}};
  size_t len = sizeof mine.bytes;
  if (wireup_local_address(w, mine.bytes, &len) != WIREUP_OK) die(rank, "wireup_local_address", wireup_last_error(w));
  mine.len = (uint32_t)len;
  struct wire_address* all = calloc((size_t)nranks, sizeof *all);
  wireup_peer_t* peers = calloc((size_t)nranks, sizeof *peers);
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  for (int p = 0; p < nranks; ++p) peers[p] = (wireup_peer_t){(uint32_t)p, all[p].bytes, all[p].len};
  if (wireup_set_peers(w, peers, (size_t)nranks) != WIREUP_OK) die(rank, "wireup_set_peers", wireup_last_error(w));

  MPI_Barrier(MPI_COMM_WORLD); /* start together: the wireup times then compare */
  double t0 = now_ms();
  if (wireup_start(w) != WIREUP_OK) die(rank, "wireup_start", wireup_last_error(w));
  drive(w, rank, use_wait);
  double wireup_ms = now_ms() - t0;

  size_t nres = wireup_result_count(w), nerr = wireup_error_count(w);
  for (size_t i = 0; i < nerr; ++i) {
    wireup_peer_error_t e;
    WIREUP_STRUCT_INIT(&e);
    wireup_error_get(w, i, &e);
    fprintf(stderr, "rank %d: no connection to rank %u lane %u: %s\n", rank, e.peer, e.lane, e.message);
  }
  int qpn_bad = cross_check_qpns(w, rank, nranks, lanes);
  int msg_bad = exchange_messages(&t, w, rank);
  unsigned initiated = 0, accepted = 0;
  int rndv_bad = exchange_large_messages(&t, w, rank, rndv, rndv_bytes, &initiated, &accepted);
  int bad = qpn_bad + msg_bad + rndv_bad + (int)nerr + (nres != (size_t)conns);
  printf("rank %d: device %s, %zu/%d connections, %zu errors, QPNs %s, messages %s, rendezvous %s %s (%zu bytes "
         "each way; %u initiated, %u accepted), wireup %.1f ms, %u released, %u lost\n",
         rank, wireup_context_device_name(ctx), nres, conns, nerr, qpn_bad ? "MISMATCH" : "ok",
         msg_bad ? "FAILED" : "ok", rndv_protocol_name(rndv), rndv_bad ? "FAILED" : "ok", rndv_bytes, initiated,
         accepted, wireup_ms, t.released, t.lanes_lost);
  fflush(stdout);

  int totals[2] = {(int)nres, bad}, sums[2] = {0, 0};
  double slowest = 0;
  MPI_Reduce(totals, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&wireup_ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD); /* nobody disconnects while a peer still checks its messages */
  if (rank == 0) {
    if (sums[1] == 0)
      printf("c_transport: %d ranks, %u lanes, %d connections, all verified, small and large (rendezvous %s) "
             "messages both ways (slowest wireup %.1f ms)\n",
             nranks, lanes, sums[0] / 2, rndv_protocol_name(rndv), slowest);
    else
      printf("c_transport: %d ranks, %u lanes, %d connections, %d FAILURES\n", nranks, lanes, sums[0] / 2, sums[1]);
    fflush(stdout);
  }

  /* Teardown: wireup first (it disconnects and never touches our QPs), then our verbs objects:
   * each result's QP once -- wireup never releases a QP it handed over as a result, and never
   * hands over one it released, so nothing here is destroyed twice. */
  struct ibv_qp** qps = calloc(nres + 1, sizeof *qps);
  for (size_t i = 0; i < nres; ++i) {
    wireup_result_t r;
    WIREUP_STRUCT_INIT(&r);
    wireup_result_get(w, i, &r);
    qps[i] = r.qp;
  }
  wireup_destroy(w);
  for (size_t i = 0; i < nres; ++i) ibv_destroy_qp(qps[i]);
  ibv_destroy_cq(t.cq);
  ibv_dealloc_pd(t.pd);
  if (wireup_context_destroy(ctx) != WIREUP_OK) die(rank, "wireup_context_destroy", wireup_context_last_error(NULL));
  free(qps);
  free(peers);
  free(all);
  MPI_Finalize();
  /* Rank 0 answers for the job; every rank for itself. */
  return bad != 0 || (rank == 0 && sums[1] != 0) ? 1 : 0;
}
