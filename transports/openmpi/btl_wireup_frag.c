/*
 * btl_wireup_frag.c -- the registered buffers: one slab per process, registered once on every
 * rail's PD; nsend send frags (a free stack) and, per rail, nrecv receive buffers posted to
 * the rail's SRQ. A buffer holds the BTL header and up to max_send_size bytes of ob1's.
 */
#include "btl_wireup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

int btl_wireup_frags_create(mca_btl_wireup_module_t* m) {
  size_t payload = m->super.btl_max_send_size > m->super.btl_eager_limit ? m->super.btl_max_send_size
                                                                         : m->super.btl_eager_limit;
  m->frag_size = round_up(sizeof(btl_wireup_hdr_t) + payload, 64);
  const size_t nfrags = m->nsend + m->nrecv_per_rail * m->nrails;
  m->slab_bytes = m->frag_size * nfrags;
  if (posix_memalign(&m->slab, 4096, m->slab_bytes) != 0) {
    opal_output(0, "btl wireup: %zu bytes of buffers: out of memory", m->slab_bytes);
    return OPAL_ERR_OUT_OF_RESOURCE;
  }
  m->frags = calloc(nfrags, sizeof *m->frags);
  m->free_sends = calloc(m->nsend, sizeof *m->free_sends);
  if (m->frags == NULL || m->free_sends == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  for (size_t i = 0; i < nfrags; ++i) {
    btl_wireup_frag_t* f = &m->frags[i];
    OBJ_CONSTRUCT(&f->base, mca_btl_base_descriptor_t);
    f->hdr = (btl_wireup_hdr_t*)((char*)m->slab + i * m->frag_size);
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    if (i < m->nsend) {
      f->kind = BTL_WIREUP_WR_SEND;
      m->free_sends[m->nfree_sends++] = f;
    } else {
      f->kind = BTL_WIREUP_WR_RECV;
      f->rail = (uint32_t)((i - m->nsend) / m->nrecv_per_rail);
    }
  }
  return OPAL_SUCCESS;
}

int btl_wireup_frags_register(mca_btl_wireup_module_t* m, size_t r) {
  btl_wireup_rail_t* rail = &m->rails[r];
  rail->slab_mr = ibv_reg_mr(rail->pd, m->slab, m->slab_bytes, IBV_ACCESS_LOCAL_WRITE);
  if (rail->slab_mr == NULL) {
    opal_output(0, "btl wireup: ibv_reg_mr of %zu bytes of buffers: %s", m->slab_bytes, strerror(errno));
    return OPAL_ERROR;
  }
  for (size_t i = 0; i < m->nrecv_per_rail; ++i) {
    int rc = btl_wireup_frag_post_recv(m, &m->frags[m->nsend + r * m->nrecv_per_rail + i]);
    if (rc != OPAL_SUCCESS) return rc;
  }
  return OPAL_SUCCESS;
}

void btl_wireup_frags_destroy(mca_btl_wireup_module_t* m) {
  for (size_t r = 0; r < m->nrails; ++r)
    if (m->rails[r].slab_mr) {
      ibv_dereg_mr(m->rails[r].slab_mr);
      m->rails[r].slab_mr = NULL;
    }
  const size_t nfrags = m->frags ? m->nsend + m->nrecv_per_rail * m->nrails : 0;
  for (size_t i = 0; i < nfrags; ++i) OBJ_DESTRUCT(&m->frags[i].base);
  free(m->frags);
  free(m->free_sends);
  free(m->slab);
  m->frags = NULL;
  m->free_sends = NULL;
  m->slab = NULL;
  while (m->free_ops) {
    btl_wireup_rdma_op_t* op = m->free_ops;
    m->free_ops = op->next_free;
    free(op);
  }
}

btl_wireup_frag_t* btl_wireup_frag_alloc(mca_btl_wireup_module_t* m) {
  if (m->nfree_sends == 0) return NULL; /* ob1 queues the request and tries again */
  btl_wireup_frag_t* f = m->free_sends[--m->nfree_sends];
  f->endpoint = NULL;
  f->base.des_cbfunc = NULL;
  f->base.des_cbdata = NULL;
  f->base.des_context = NULL;
  f->base.des_flags = 0;
  f->base.order = MCA_BTL_NO_ORDER;
  f->segment.seg_addr.pval = f->hdr + 1;
  f->segment.seg_len = 0;
  return f;
}

void btl_wireup_frag_return(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f) {
  m->free_sends[m->nfree_sends++] = f;
}

int btl_wireup_frag_post_recv(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f) {
  btl_wireup_rail_t* rail = &m->rails[f->rail];
  struct ibv_sge sge = {.addr = (uintptr_t)f->hdr, .length = (uint32_t)m->frag_size, .lkey = rail->slab_mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&f->kind, .sg_list = &sge, .num_sge = 1}, *bad;
  int rc = ibv_post_srq_recv(rail->srq, &wr, &bad);
  if (rc != 0) {
    opal_output(0, "btl wireup: ibv_post_srq_recv (rail %u): %s", f->rail, strerror(rc));
    return OPAL_ERROR;
  }
  return OPAL_SUCCESS;
}

/* OPAL_ERR_OUT_OF_RESOURCE when the lane's send queue is full (the caller keeps it queued). */
int btl_wireup_frag_post_send(mca_btl_wireup_module_t* m, btl_wireup_frag_t* f, btl_wireup_lane_t* lane) {
  if (lane->sq_used >= 255) return OPAL_ERR_OUT_OF_RESOURCE;
  btl_wireup_rail_t* rail = &m->rails[lane->rail];
  const uint32_t bytes = (uint32_t)(sizeof(btl_wireup_hdr_t) + f->segment.seg_len);
  struct ibv_sge sge = {.addr = (uintptr_t)f->hdr, .length = bytes, .lkey = rail->slab_mr->lkey};
  struct ibv_send_wr wr = {.wr_id = (uintptr_t)&f->kind, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED},
                     *bad;
  int rc = ibv_post_send(lane->qp, &wr, &bad);
  if (rc != 0) {
    opal_output(0, "btl wireup: ibv_post_send (SEND of %u bytes to rank %u, QPN 0x%x): %s", bytes,
                f->endpoint ? f->endpoint->rank : 0, lane->qp->qp_num, strerror(rc));
    return rc == ENOMEM ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERROR;
  }
  ++lane->sq_used;
  f->lane = lane;
  ++m->counters.sends;
  m->counters.send_bytes += f->segment.seg_len;
  return OPAL_SUCCESS;
}
