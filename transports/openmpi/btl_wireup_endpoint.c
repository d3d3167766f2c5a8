/*
 * btl_wireup_endpoint.c -- one peer: its lanes (QPs wireup handed over) and the sends that
 * wait for its lane 0 (on demand, the first message to a peer waits for its connection).
 */
#include "btl_wireup.h"

static void endpoint_construct(mca_btl_base_endpoint_t* ep) {
  ep->proc = NULL;
  ep->rank = 0;
  ep->connect_asked = 0;
  ep->failed = 0;
  ep->next_lane = 0;
  memset(ep->lanes, 0, sizeof ep->lanes);
  OBJ_CONSTRUCT(&ep->pending, opal_list_t);
}

static void endpoint_destruct(mca_btl_base_endpoint_t* ep) { OBJ_DESTRUCT(&ep->pending); }

OBJ_CLASS_INSTANCE(mca_btl_base_endpoint_t, opal_list_item_t, endpoint_construct, endpoint_destruct);

struct mca_btl_base_endpoint_t* btl_wireup_endpoint_get(mca_btl_wireup_module_t* m, uint32_t rank) {
  if (rank >= m->nranks || rank == m->rank) return NULL;
  if (m->by_rank[rank] == NULL) {
    mca_btl_base_endpoint_t* ep = OBJ_NEW(mca_btl_base_endpoint_t);
    if (ep == NULL) return NULL;
    ep->rank = rank;
    m->by_rank[rank] = ep;
  }
  return m->by_rank[rank];
}

/* Posts the queued sends while lane 0 has room; what does not fit waits for a completion. */
int btl_wireup_endpoint_flush(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep) {
  btl_wireup_lane_t* lane = &ep->lanes[0];
  int posted = 0;
  while (lane->ready && !opal_list_is_empty(&ep->pending)) {
    btl_wireup_frag_t* f = (btl_wireup_frag_t*)opal_list_get_first(&ep->pending);
    int rc = btl_wireup_frag_post_send(m, f, lane);
    if (rc == OPAL_ERR_OUT_OF_RESOURCE) break;
    opal_list_remove_first(&ep->pending);
    if (rc != OPAL_SUCCESS) {
      btl_wireup_peer_failed(m, ep, "ibv_post_send failed");
      return rc;
    }
    ++posted;
  }
  return posted;
}
