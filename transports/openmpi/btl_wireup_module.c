/*
 * btl_wireup_module.c -- the module's send path (alloc, prepare_src, send), add/del procs,
 * finalize, and the CQ poll that completes sends, receives and RDMA ops.
 */
#include "btl_wireup.h"

#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

void btl_wireup_component_forget(void);

static mca_btl_wireup_module_t* of(mca_btl_base_module_t* btl) { return (mca_btl_wireup_module_t*)btl; }

static int module_add_procs(mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                            struct mca_btl_base_endpoint_t** endpoints, opal_bitmap_t* reachable) {
  mca_btl_wireup_module_t* m = of(btl);
  BTL_WIREUP_LOCK(m);
  int rc = btl_wireup_conn_start(m);
  if (rc != OPAL_SUCCESS) {
    BTL_WIREUP_UNLOCK(m);
    return rc;
  }
  const opal_proc_t* self = opal_proc_local_get();
  for (size_t i = 0; i < nprocs; ++i) {
    struct opal_proc_t* p = procs[i];
    /* Ourselves (btl self's), and processes of another job (wireup connects one job). */
    if (p == self || p->proc_name.jobid != OPAL_PROC_MY_NAME.jobid) continue;
    struct mca_btl_base_endpoint_t* ep = btl_wireup_endpoint_get(m, p->proc_name.vpid);
    if (ep == NULL) continue;
    /* Bulk: a peer whose lanes were all given up at MPI_Init is not reachable through us. */
    if (mca_btl_wireup_component.mode == BTL_WIREUP_BULK && ep->failed) continue;
    ep->proc = p;
    endpoints[i] = ep;
    opal_bitmap_set_bit(reachable, (int)i);
  }
  BTL_WIREUP_UNLOCK(m);
  return OPAL_SUCCESS;
}

static int module_del_procs(mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                            struct mca_btl_base_endpoint_t** peers) {
  (void)btl, (void)nprocs, (void)procs, (void)peers;
  return OPAL_SUCCESS; /* the endpoints live until finalize, with their QPs */
}

static int module_register_error(mca_btl_base_module_t* btl, mca_btl_base_module_error_cb_fn_t cb) {
  of(btl)->error_cb = cb;
  return OPAL_SUCCESS;
}

/* A send buffer for `ep` holding `len` bytes of ob1's (NULL when none is free: ob1 tries again). */
static btl_wireup_frag_t* take_frag(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep, size_t len,
                                    uint32_t flags) {
  BTL_WIREUP_LOCK(m);
  btl_wireup_frag_t* f = btl_wireup_frag_alloc(m);
  BTL_WIREUP_UNLOCK(m);
  if (f == NULL) return NULL;
  f->endpoint = ep;
  f->segment.seg_len = len;
  f->base.des_flags = flags;
  return f;
}

static mca_btl_base_descriptor_t* module_alloc(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                               uint8_t order, size_t size, uint32_t flags) {
  (void)order;
  if (size > btl->btl_max_send_size) return NULL;
  btl_wireup_frag_t* f = take_frag(of(btl), ep, size, flags);
  return f ? &f->base : NULL;
}

static int module_free(mca_btl_base_module_t* btl, mca_btl_base_descriptor_t* des) {
  mca_btl_wireup_module_t* m = of(btl);
  BTL_WIREUP_LOCK(m);
  btl_wireup_frag_return(m, (btl_wireup_frag_t*)des);
  BTL_WIREUP_UNLOCK(m);
  return OPAL_SUCCESS;
}

/* Copies (packs) up to max_send_size - reserve bytes of the convertor after ob1's header. */
static mca_btl_base_descriptor_t* module_prepare_src(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                                     struct opal_convertor_t* convertor, uint8_t order,
                                                     size_t reserve, size_t* size, uint32_t flags) {
  (void)order;
  mca_btl_wireup_module_t* m = of(btl);
  if (reserve > btl->btl_max_send_size) return NULL;
  btl_wireup_frag_t* f = take_frag(m, ep, reserve, flags);
  if (f == NULL) return NULL;
  size_t max_data = *size;
  if (max_data > btl->btl_max_send_size - reserve) max_data = btl->btl_max_send_size - reserve;
  struct iovec iov = {.iov_base = (char*)(f->hdr + 1) + reserve, .iov_len = max_data};
  uint32_t iov_count = 1;
  if (max_data > 0 && opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
    module_free(btl, &f->base);
    return NULL;
  }
  f->segment.seg_len = reserve + max_data;
  *size = max_data;
  return &f->base;
}

static int module_send(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                       mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag) {
  mca_btl_wireup_module_t* m = of(btl);
  btl_wireup_frag_t* f = (btl_wireup_frag_t*)des;
  BTL_WIREUP_LOCK(m);
  int rc = OPAL_SUCCESS;
  f->endpoint = ep;
  f->hdr->tag = tag;
  f->hdr->size = (uint32_t)f->segment.seg_len;
  if (ep->failed) {
    rc = OPAL_ERR_UNREACH;
  } else if (ep->lanes[0].ready && opal_list_is_empty(&ep->pending) &&
             (rc = btl_wireup_frag_post_send(m, f, &ep->lanes[0])) != OPAL_ERR_OUT_OF_RESOURCE) {
    /* posted (or failed for good: rc says so) */
  } else {
    /* Lane 0 not connected yet (on demand: ask for it now), or its send queue is full. */
    rc = OPAL_SUCCESS;
    opal_list_append(&ep->pending, &f->base.super.super);
    ++m->counters.sends_queued;
    if (!ep->lanes[0].ready) rc = btl_wireup_conn_ask(m, ep);
  }
  BTL_WIREUP_UNLOCK(m);
  return rc;
}

static int module_finalize(mca_btl_base_module_t* btl) {
  mca_btl_wireup_module_t* m = of(btl);
  btl_wireup_component_forget();
  btl_wireup_conn_close(m);
  pthread_mutex_destroy(&m->lock);
  free(m);
  return OPAL_SUCCESS;
}

static void send_done(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f, int status) {
  struct mca_btl_base_endpoint_t* ep = f->endpoint;
  if (f->lane && f->lane->sq_used > 0) --f->lane->sq_used;
  f->lane = NULL;
  /* We never return 1 from send: ob1 expects its callback on completion. */
  if (f->base.des_cbfunc) f->base.des_cbfunc(&m->super, ep, &f->base, status);
  if (f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) btl_wireup_frag_return(m, f);
  if (ep && !opal_list_is_empty(&ep->pending)) btl_wireup_endpoint_flush(m, ep);
}

static void recv_done(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f, uint32_t byte_len) {
  const btl_wireup_hdr_t* h = f->hdr;
  if (byte_len < sizeof *h || h->size != byte_len - sizeof *h) {
    opal_output(0, "btl wireup: rank %u: a receive of %u bytes whose header says %u bytes of payload: dropped",
                m->rank, byte_len, h->size);
  } else {
    f->segment.seg_addr.pval = (void*)(h + 1);
    f->segment.seg_len = h->size;
    ++m->counters.recvs;
    m->counters.recv_bytes += h->size;
    const mca_btl_active_message_callback_t* reg = &mca_btl_base_active_message_trigger[h->tag];
    if (reg->cbfunc != NULL)
      reg->cbfunc(&m->super, h->tag, &f->base, reg->cbdata);
    else
      opal_output(0, "btl wireup: rank %u: a message with tag %u, which nobody registered: dropped", m->rank, h->tag);
  }
  btl_wireup_frag_post_recv(m, f);
}

/* The endpoint a failed work request was for. */
static struct mca_btl_base_endpoint_t* endpoint_of(const struct ibv_wc* wc) {
  const btl_wireup_wr_kind_t* kind = (const btl_wireup_wr_kind_t*)(uintptr_t)wc->wr_id;
  if (*kind == BTL_WIREUP_WR_SEND) return BTL_WIREUP_FRAG_OF(kind)->endpoint;
  if (*kind == BTL_WIREUP_WR_RDMA) return ((const btl_wireup_rdma_op_t*)kind)->endpoint;
  return NULL;
}

int btl_wireup_poll(mca_btl_wireup_module_t* m) {
  int done = 0;
  for (size_t r = 0; r < m->nrails; ++r) {
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(m->rails[r].cq, 16, wc);
    for (int i = 0; i < n; ++i) {
      btl_wireup_wr_kind_t* kind = (btl_wireup_wr_kind_t*)(uintptr_t)wc[i].wr_id;
      if (wc[i].status != IBV_WC_SUCCESS) {
        struct mca_btl_base_endpoint_t* ep = endpoint_of(&wc[i]);
        if (wc[i].status != IBV_WC_WR_FLUSH_ERR && ep != NULL) {
          char why[256];
          snprintf(why, sizeof why, "a work request on QPN 0x%x completed with %s (vendor error 0x%x)",
                   wc[i].qp_num, ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
          btl_wireup_peer_failed(m, ep, why);
        }
        if (*kind == BTL_WIREUP_WR_SEND)
          send_done(m, BTL_WIREUP_FRAG_OF(kind), OPAL_ERR_UNREACH);
        else if (*kind == BTL_WIREUP_WR_RDMA)
          btl_wireup_rdma_complete(m, (btl_wireup_rdma_op_t*)kind, OPAL_ERR_UNREACH);
        /* a flushed receive buffer stays off the SRQ: its QP is going away */
        continue;
      }
      if (*kind == BTL_WIREUP_WR_SEND)
        send_done(m, BTL_WIREUP_FRAG_OF(kind), OPAL_SUCCESS);
      else if (*kind == BTL_WIREUP_WR_RECV)
        recv_done(m, BTL_WIREUP_FRAG_OF(kind), wc[i].byte_len);
      else
        btl_wireup_rdma_complete(m, (btl_wireup_rdma_op_t*)kind, OPAL_SUCCESS);
    }
    if (n > 0) done += n;
  }
  return done;
}

static void module_dump(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, int verbose) {
  (void)verbose;
  mca_btl_wireup_module_t* m = of(btl);
  if (ep != NULL)
    opal_output(0, "btl wireup: rank %u -> %u: lane 0 %s, %zu sends queued%s", m->rank, ep->rank,
                ep->lanes[0].ready ? "ready" : "not connected", opal_list_get_size(&ep->pending),
                ep->failed ? ", failed" : "");
}

mca_btl_base_module_t btl_wireup_module_template = {
    .btl_component = &mca_btl_wireup_component.super,
    .btl_eager_limit = 16 * 1024,
    .btl_rndv_eager_limit = 16 * 1024,
    .btl_max_send_size = 16 * 1024,
    .btl_rdma_pipeline_send_length = 1024 * 1024,
    .btl_rdma_pipeline_frag_size = 2 * 1024 * 1024,
    .btl_min_rdma_pipeline_size = 256 * 1024,
    .btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT,
    .btl_latency = 10,
    .btl_bandwidth = 1000,
    .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET,
    .btl_get_limit = 1 << 30,
    .btl_put_limit = 1 << 30,
    .btl_get_alignment = 0,
    .btl_put_alignment = 0,
    .btl_get_local_registration_threshold = 0,
    .btl_put_local_registration_threshold = 0,
    .btl_add_procs = module_add_procs,
    .btl_del_procs = module_del_procs,
    .btl_finalize = module_finalize,
    .btl_alloc = module_alloc,
    .btl_free = module_free,
    .btl_prepare_src = module_prepare_src,
    .btl_send = module_send,
    .btl_put = btl_wireup_put,
    .btl_get = btl_wireup_get,
    .btl_dump = module_dump,
    .btl_register_mem = btl_wireup_register_mem,
    .btl_deregister_mem = btl_wireup_deregister_mem,
    .btl_register_error = module_register_error,
};
