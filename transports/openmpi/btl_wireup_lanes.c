/*
 * btl_wireup_lanes.c -- what wireup calls back: the QP factory (each QP on its rail's PD, CQ
 * and SRQ) and its release, the lane events (READY: the QP is the BTL's; FAILED and the
 * peer's death: the peer is unreachable; CLOSED: the QP is retired), and the one place a peer
 * is declared unreachable.
 */
#include "btl_wireup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

int btl_wireup_make_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** out) {
  mca_btl_wireup_module_t* m = arg;
  if (req->rail >= m->nrails) return EINVAL;
  btl_wireup_rail_t* rail = &m->rails[req->rail];
  if (req->context != rail->context) return EINVAL; /* wireup names the rail's own device */
  struct ibv_qp_init_attr a = {
      .send_cq = rail->cq,
      .recv_cq = rail->cq,
      .srq = rail->srq,
      .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = 256, .max_send_sge = 1, .max_recv_wr = 0, .max_recv_sge = 1},
  };
  *out = ibv_create_qp(rail->pd, &a);
  if (*out == NULL) return errno ? errno : ENOMEM;
  ++m->counters.qps_created;
  return 0;
}

void btl_wireup_release_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp* qp) {
  (void)req;
  mca_btl_wireup_module_t* m = arg;
  if (ibv_destroy_qp(qp) == 0) ++m->counters.qps_released;
}

void btl_wireup_on_lane(void* arg, const wireup_lane_event_t* ev) {
  mca_btl_wireup_module_t* m = arg;
  struct mca_btl_base_endpoint_t* ep = btl_wireup_endpoint_get(m, ev->peer);
  if (ep == NULL || ev->lane >= BTL_WIREUP_MAX_LANES) return;
  btl_wireup_lane_t* lane = &ep->lanes[ev->lane];
  if (ev->type == WIREUP_LANE_EVENT_READY) {
    wireup_result_t r;
    WIREUP_STRUCT_INIT(&r);
    if (wireup_result_get(m->w, ev->index, &r) != WIREUP_OK) {
      btl_wireup_peer_failed(m, ep, wireup_last_error(m->w));
      return;
    }
    lane->qp = r.qp;
    lane->rail = r.rail;
    lane->ready = 1;
    lane->sq_used = 0;
    ++m->counters.lanes_ready;
    if (r.rail < BTL_WIREUP_MAX_RAILS) ++m->counters.lanes_by_rail[r.rail];
    if (ev->lane == 0) ++m->counters.peers_connected;
    if (mca_btl_wireup_component.verbose)
      opal_output(0, "btl wireup: rank %u: lane %u to rank %u ready (QPN 0x%x -> 0x%x, rail %u, %s)", m->rank,
                  ev->lane, ev->peer, r.local_qpn, r.remote_qpn, r.rail, r.active ? "active" : "passive");
    btl_wireup_endpoint_flush(m, ep);
  } else if (ev->type == WIREUP_LANE_EVENT_FAILED) {
    wireup_peer_error_t e;
    WIREUP_STRUCT_INIT(&e);
    char why[1024];
    if (wireup_error_get(m->w, ev->index, &e) == WIREUP_OK)
      snprintf(why, sizeof why, "lane %u given up (%s): %s", ev->lane, wireup_error_kind_name(e.kind), e.message);
    else
      snprintf(why, sizeof why, "lane %u given up: %s", ev->lane, wireup_last_error(m->w));
    btl_wireup_peer_failed(m, ep, why);
  } else if (ev->type == WIREUP_LANE_EVENT_CLOSED) {
    /* The peer disconnected the lane (it finalized, or closed it on demand): no more sends
     * on it, and the next send asks wireup for a new connection (a dead peer's then fails
     * and says so). The QP stays ours: retired, destroyed at finalize. */
    lane->ready = 0;
    ep->connect_asked = 0;
    if (lane->qp != NULL) {
      if (m->nretired == m->retired_cap) {
        size_t cap = m->retired_cap ? 2 * m->retired_cap : 16;
        struct ibv_qp** r = realloc(m->retired, cap * sizeof *r);
        if (r != NULL) m->retired = r, m->retired_cap = cap;
      }
      if (m->nretired < m->retired_cap) m->retired[m->nretired++] = lane->qp;
      lane->qp = NULL;
    }
    if (mca_btl_wireup_component.verbose)
      opal_output(0, "btl wireup: rank %u: lane %u to rank %u closed", m->rank, ev->lane, ev->peer);
  }
}

void btl_wireup_on_event(void* arg, const wireup_event_t* ev) {
  mca_btl_wireup_module_t* m = arg;
  if (ev->type != WIREUP_EVENT_PEER_DOWN && ev->type != WIREUP_EVENT_RTU_LOST) {
    if (mca_btl_wireup_component.verbose && ev->peer != WIREUP_EVENT_PEER_LISTENER)
      opal_output(0, "btl wireup: rank %u: %s on lane %u of rank %u (status %d)", m->rank, ev->name, ev->lane,
                  ev->peer, ev->status);
    return;
  }
  struct mca_btl_base_endpoint_t* ep = btl_wireup_endpoint_get(m, ev->peer);
  if (ep == NULL) return;
  char why[256];
  snprintf(why, sizeof why, "%s (CM status %d)", ev->name, ev->status);
  btl_wireup_peer_failed(m, ep, why);
}

void btl_wireup_peer_failed(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep, const char* why) {
  if (ep->failed) return;
  ep->failed = 1;
  opal_output(0, "btl wireup: rank %u: peer rank %u is unreachable: %s", m->rank, ep->rank, why);
  /* Queued sends complete with an error; ob1 hears of it through its error callback. */
  opal_list_item_t* it;
  while ((it = opal_list_remove_first(&ep->pending)) != NULL) {
    btl_wireup_frag_t* f = (btl_wireup_frag_t*)it;
    if (f->base.des_cbfunc) f->base.des_cbfunc(&m->super, ep, &f->base, OPAL_ERR_UNREACH);
    if (f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) btl_wireup_frag_return(m, f);
  }
  if (m->error_cb != NULL) {
    char info[1200];
    snprintf(info, sizeof info, "btl wireup: peer rank %u: %s", ep->rank, why);
    m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, info);
  }
}
