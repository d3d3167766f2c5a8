/*
 * btl_wireup_conn.c -- the BTL's wireup handle: made at component init (so that its address
 * goes into the modex before Open MPI's fence), started at the first add_procs (after the
 * fence, when rank 0's job key can be read), progressed from the BTL's progress function.
 *
 * The modex blob every rank publishes: 8 bytes of a key it drew at random, then its wireup
 * address. Every rank uses rank 0's key as the job key, so the key is random per job and
 * never leaves the job's own modex.
 */
#include "btl_wireup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define BLOB_KEY_BYTES 8

static void on_address_needed(void* arg, uint32_t peer);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static opal_process_name_t name_of(uint32_t rank) {
  opal_process_name_t n = OPAL_PROC_MY_NAME;
  n.vpid = rank;
  return n;
}

/* The job's size from PMIx (the BTL sits below the MPI layer: no communicator to ask). */
static int job_size(uint32_t* out) {
  opal_process_name_t wildcard = OPAL_PROC_MY_NAME;
  wildcard.vpid = OPAL_VPID_WILDCARD;
  uint32_t n = 0, *p = &n;
  int rc;
  OPAL_MODEX_RECV_VALUE(rc, OPAL_PMIX_JOB_SIZE, &wildcard, &p, OPAL_UINT32);
  if (rc != OPAL_SUCCESS || n == 0) return OPAL_ERROR;
  *out = n;
  return OPAL_SUCCESS;
}

static int rail_open(mca_btl_wireup_module_t* m, size_t r) {
  btl_wireup_rail_t* rail = &m->rails[r];
  rail->context = wireup_context_rail_ibv_context(m->ctx, r);
  const char* dev = wireup_context_rail_device_name(m->ctx, r);
  if (rail->context == NULL) return OPAL_ERROR;
  rail->pd = ibv_alloc_pd(rail->context);
  if (rail->pd == NULL) {
    opal_output(0, "btl wireup: ibv_alloc_pd on %s: %s", dev, strerror(errno));
    return OPAL_ERROR;
  }
  /* Every send frag and every receive buffer of the rail can complete at once, plus RDMA ops. */
  const int cqe = (int)(m->nsend + m->nrecv_per_rail) + 1024;
  rail->cq = ibv_create_cq(rail->context, cqe, NULL, NULL, 0);
  if (rail->cq == NULL) {
    opal_output(0, "btl wireup: ibv_create_cq(%d) on %s: %s", cqe, dev, strerror(errno));
    return OPAL_ERROR;
  }
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = (uint32_t)m->nrecv_per_rail, .max_sge = 1}};
  rail->srq = ibv_create_srq(rail->pd, &sa);
  if (rail->srq == NULL) {
    opal_output(0, "btl wireup: ibv_create_srq(max_wr %zu) on %s: %s", m->nrecv_per_rail, dev, strerror(errno));
    return OPAL_ERROR;
  }
  return btl_wireup_frags_register(m, r);
}

static int publish(mca_btl_wireup_module_t* m) {
  uint8_t blob[BLOB_KEY_BYTES + WIREUP_RAILS_ADDRESS_MAX];
  size_t len = WIREUP_RAILS_ADDRESS_MAX;
  if (wireup_local_address(m->w, blob + BLOB_KEY_BYTES, &len) != WIREUP_OK) {
    opal_output(0, "btl wireup: %s", wireup_last_error(m->w));
    return OPAL_ERROR;
  }
  uint64_t key = 0;
  while (key == 0)
    if (getrandom(&key, sizeof key, 0) != (ssize_t)sizeof key) {
      opal_output(0, "btl wireup: getrandom: %s", strerror(errno));
      return OPAL_ERROR;
    }
  memcpy(blob, &key, sizeof key);
  int rc;
  OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_wireup_component.super.btl_version, blob, BLOB_KEY_BYTES + len);
  return rc;
}

/* Rank `rank`'s modex blob (its key, its address); *blob is the caller's to free. */
static int fetch(uint32_t rank, uint8_t** blob, size_t* size) {
  opal_process_name_t n = name_of(rank);
  int rc;
  OPAL_MODEX_RECV(rc, &mca_btl_wireup_component.super.btl_version, &n, (void**)blob, size);
  if (rc != OPAL_SUCCESS || *size <= BLOB_KEY_BYTES) {
    opal_output(0, "btl wireup: rank %u published no wireup address (modex: %d, %zu bytes): is btl wireup on every rank?",
                rank, rc, rc == OPAL_SUCCESS ? *size : 0);
    if (rc == OPAL_SUCCESS) free(*blob);
    return OPAL_ERR_UNREACH;
  }
  return OPAL_SUCCESS;
}

int btl_wireup_conn_open(mca_btl_wireup_module_t* m) {
  mca_btl_wireup_component_t* c = &mca_btl_wireup_component;
  m->rank = OPAL_PROC_MY_NAME.vpid;
  if (job_size(&m->nranks) != OPAL_SUCCESS) {
    opal_output(0, "btl wireup: the job size (%s) is not in PMIx", OPAL_PMIX_JOB_SIZE);
    return OPAL_ERROR;
  }
  const char* overrides[1];
  size_t noverrides = 0;
  if (c->mode == BTL_WIREUP_ON_DEMAND) overrides[noverrides++] = "engine.mode=on_demand";
  wireup_context_params_t cp;
  wireup_context_params_init(&cp);
  cp.config_file = c->config_file;
  cp.config_overrides = overrides;
  cp.num_config_overrides = noverrides;
  cp.local_rank = opal_process_info.my_local_rank;
  const double t0 = now_ms();
  if (wireup_context_create(&cp, &m->ctx) != WIREUP_OK) {
    opal_output(0, "btl wireup: rank %u: %s", m->rank, wireup_last_error(NULL));
    return OPAL_ERROR;
  }
  m->nrails = wireup_context_num_rails(m->ctx);
  if (m->nrails > BTL_WIREUP_MAX_RAILS) {
    opal_output(0, "btl wireup: %zu rails configured; this BTL handles at most %d", m->nrails, BTL_WIREUP_MAX_RAILS);
    return OPAL_ERROR;
  }
  m->nsend = (size_t)c->send_frags;
  m->nrecv_per_rail = (size_t)c->recv_frags;
  const double t1 = now_ms();
  if (btl_wireup_frags_create(m) != OPAL_SUCCESS) return OPAL_ERROR;
  for (size_t r = 0; r < m->nrails; ++r)
    if (rail_open(m, r) != OPAL_SUCCESS) return OPAL_ERROR;
  if (btl_wireup_rcache_create(m) != OPAL_SUCCESS) return OPAL_ERROR;
  const double t2 = now_ms();

  wireup_params_t p;
  wireup_params_init(&p);
  p.rank = m->rank;
  p.nranks = m->nranks;
  p.lanes = (uint32_t)c->lanes;
  p.qp_create = btl_wireup_make_qp;
  p.qp_release = btl_wireup_release_qp;
  p.qp_arg = m;
  /* job_key stays 0: rank 0's key is read after the fence (btl_wireup_conn_start). */
  if (wireup_create(m->ctx, &p, &m->w) != WIREUP_OK) {
    opal_output(0, "btl wireup: rank %u: %s", m->rank, wireup_last_error(NULL));
    return OPAL_ERROR;
  }
  const char* lanes = wireup_context_config_value(m->ctx, "engine.lanes");
  m->lanes = c->lanes > 0 ? (uint32_t)c->lanes : (uint32_t)(lanes ? strtoul(lanes, NULL, 10) : 1);
  if (m->lanes == 0 || m->lanes > BTL_WIREUP_MAX_LANES) {
    opal_output(0, "btl wireup: engine.lanes is %u: this BTL handles 1 .. %d", m->lanes, BTL_WIREUP_MAX_LANES);
    return OPAL_ERROR;
  }
  m->by_rank = calloc(m->nranks, sizeof *m->by_rank);
  if (m->by_rank == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  if (wireup_on_lane_event(m->w, btl_wireup_on_lane, m) != WIREUP_OK || wireup_on_event(m->w, btl_wireup_on_event, m) != WIREUP_OK ||
      wireup_on_address_needed(m->w, on_address_needed, m) != WIREUP_OK) {
    opal_output(0, "btl wireup: %s", wireup_last_error(m->w));
    return OPAL_ERROR;
  }
  const double t3 = now_ms();
  int rc = publish(m);
  /* Where a process's MPI_Init time goes in this BTL (bench/openmpi/compare.sh's init_ms). */
  if (c->verbose)
    opal_output(0, "btl wireup: rank %u: init: wireup_context_create %.1f ms, buffers/PD/CQ/SRQ/rcache %.1f ms, "
                "wireup_create %.1f ms, modex %.1f ms", m->rank, t1 - t0, t2 - t1, t3 - t2, now_ms() - t3);
  return rc;
}

static int set_peers_from_modex(mca_btl_wireup_module_t* m) {
  wireup_peer_t* peers = calloc(m->nranks, sizeof *peers);
  uint8_t** blobs = calloc(m->nranks, sizeof *blobs);
  int rc = (peers && blobs) ? OPAL_SUCCESS : OPAL_ERR_OUT_OF_RESOURCE;
  size_t n = 0;
  for (uint32_t r = 0; rc == OPAL_SUCCESS && r < m->nranks; ++r) {
    if (r == m->rank) continue;
    size_t size = 0;
    rc = fetch(r, &blobs[r], &size);
    if (rc == OPAL_SUCCESS) peers[n++] = (wireup_peer_t){r, blobs[r] + BLOB_KEY_BYTES, size - BLOB_KEY_BYTES};
  }
  if (rc == OPAL_SUCCESS && wireup_set_peers(m->w, peers, n) != WIREUP_OK) {
    opal_output(0, "btl wireup: rank %u: %s", m->rank, wireup_last_error(m->w));
    rc = OPAL_ERROR;
  }
  for (uint32_t r = 0; blobs && r < m->nranks; ++r) free(blobs[r]);
  free(blobs);
  free(peers);
  return rc;
}

int btl_wireup_conn_start(mca_btl_wireup_module_t* m) {
  if (m->started) return OPAL_SUCCESS;
  uint8_t* blob = NULL;
  size_t size = 0;
  int rc = fetch(0, &blob, &size);
  if (rc != OPAL_SUCCESS) return rc;
  uint64_t key;
  memcpy(&key, blob, sizeof key);
  free(blob);
  if (wireup_set_job_key(m->w, key) != WIREUP_OK) {
    opal_output(0, "btl wireup: %s", wireup_last_error(m->w));
    return OPAL_ERROR;
  }
  if (mca_btl_wireup_component.mode == BTL_WIREUP_BULK && (rc = set_peers_from_modex(m)) != OPAL_SUCCESS) return rc;
  if (wireup_start(m->w) != WIREUP_OK) {
    opal_output(0, "btl wireup: rank %u: %s", m->rank, wireup_last_error(m->w));
    return OPAL_ERROR;
  }
  m->started = 1;
  if (mca_btl_wireup_component.mode != BTL_WIREUP_BULK) return OPAL_SUCCESS;
  /* Bulk: every lane of every peer now, inside MPI_Init; failures are reported per lane by
   * on_lane (FAILED) and make the peer's endpoint fail. */
  m->connecting = 1;
  const double t0 = now_ms();
  while (wireup_done(m->w) == 0) {
    if (btl_wireup_conn_progress(m) < 0) return OPAL_ERROR;
    btl_wireup_poll(m);
    if (wireup_wait(m->w, 100) != WIREUP_OK) break;
  }
  m->connecting = 0;
  if (mca_btl_wireup_component.verbose)
    opal_output(0, "btl wireup: rank %u: bulk wireup done in %.1f ms: %zu lanes ready, %zu given up", m->rank,
                now_ms() - t0, wireup_result_count(m->w), wireup_error_count(m->w));
  return OPAL_SUCCESS;
}

int btl_wireup_conn_progress(mca_btl_wireup_module_t* m) {
  if (!m->started) return 0;
  int work = 0;
  if (wireup_progress(m->w, &work) != WIREUP_OK) {
    opal_output(0, "btl wireup: rank %u: %s", m->rank, wireup_last_error(m->w));
    return -1;
  }
  if (m->connecting && mca_btl_wireup_component.mode == BTL_WIREUP_ON_DEMAND) {
    /* Keep progressing every call until no lane is on its way. */
    int busy = 0;
    for (uint32_t r = 0; r < m->nranks && !busy; ++r) {
      if (m->by_rank[r] == NULL || !m->by_rank[r]->connect_asked) continue;
      for (uint32_t l = 0; l < m->lanes; ++l)
        if (wireup_lane_state(m->w, r, l) == WIREUP_LANE_CONNECTING) busy = 1;
    }
    m->connecting = busy;
  }
  return work;
}

int btl_wireup_conn_ask(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep) {
  if (ep->connect_asked) return OPAL_SUCCESS;
  ep->connect_asked = 1;
  m->connecting = 1;
  if (wireup_connect(m->w, ep->rank) != WIREUP_OK) {
    char why[512];
    snprintf(why, sizeof why, "wireup_connect: %s", wireup_last_error(m->w));
    btl_wireup_peer_failed(m, ep, why);
    return OPAL_ERR_UNREACH;
  }
  return OPAL_SUCCESS;
}

static void on_address_needed(void* arg, uint32_t peer) {
  mca_btl_wireup_module_t* m = arg;
  uint8_t* blob = NULL;
  size_t size = 0;
  if (fetch(peer, &blob, &size) != OPAL_SUCCESS) return; /* the lane times out, and says so */
  wireup_peer_t p = {peer, blob + BLOB_KEY_BYTES, size - BLOB_KEY_BYTES};
  if (wireup_add_peer(m->w, &p) != WIREUP_OK)
    opal_output(0, "btl wireup: rank %u: the address rank %u published: %s", m->rank, peer, wireup_last_error(m->w));
  free(blob);
}

void btl_wireup_conn_close(mca_btl_wireup_module_t* m) {
  /* wireup disconnects every lane and waits (2 s at most) for the peers' answers; the QPs
   * stay ours: destroyed below, once each, after their CQs have been drained. */
  if (m->w != NULL) {
    wireup_destroy(m->w);
    m->w = NULL;
  }
  for (uint32_t r = 0; m->by_rank != NULL && r < m->nranks; ++r) {
    struct mca_btl_base_endpoint_t* ep = m->by_rank[r];
    if (ep == NULL) continue;
    for (uint32_t l = 0; l < BTL_WIREUP_MAX_LANES; ++l) {
      if (ep->lanes[l].qp == NULL) continue;
      if (ibv_destroy_qp(ep->lanes[l].qp) == 0)
        ++m->counters.qps_destroyed;
      else
        opal_output(0, "btl wireup: ibv_destroy_qp (lane %u of rank %u): %s", l, r, strerror(errno));
      ep->lanes[l].qp = NULL;
    }
  }
  for (uint32_t r = 0; m->by_rank != NULL && r < m->nranks; ++r)
    if (m->by_rank[r] != NULL) OBJ_RELEASE(m->by_rank[r]);
  free(m->by_rank);
  m->by_rank = NULL;
  for (size_t i = 0; i < m->nretired; ++i) {
    if (ibv_destroy_qp(m->retired[i]) == 0)
      ++m->counters.qps_destroyed;
    else
      opal_output(0, "btl wireup: ibv_destroy_qp (a closed lane's): %s", strerror(errno));
  }
  free(m->retired);
  m->retired = NULL;
  m->nretired = 0;
  if (m->rcache != NULL) {
    mca_rcache_base_module_destroy(m->rcache);
    m->rcache = NULL;
  }
  if (mca_btl_wireup_component.counters && m->started) btl_wireup_counters_print(m);
  btl_wireup_frags_destroy(m);
  for (size_t r = 0; r < m->nrails; ++r) {
    btl_wireup_rail_t* rail = &m->rails[r];
    int rc;
    if (rail->srq && (rc = ibv_destroy_srq(rail->srq)) != 0)
      opal_output(0, "btl wireup: ibv_destroy_srq (rail %zu): %s", r, strerror(rc));
    if (rail->cq && (rc = ibv_destroy_cq(rail->cq)) != 0)
      opal_output(0, "btl wireup: ibv_destroy_cq (rail %zu): %s", r, strerror(rc));
    if (rail->pd && (rc = ibv_dealloc_pd(rail->pd)) != 0)
      opal_output(0, "btl wireup: ibv_dealloc_pd (rail %zu): %s", r, strerror(rc));
    memset(rail, 0, sizeof *rail);
  }
  if (m->ctx != NULL && wireup_context_destroy(m->ctx) != WIREUP_OK)
    opal_output(0, "btl wireup: %s", wireup_context_last_error(m->ctx));
  m->ctx = NULL;
}
