/*
 * btl_wireup_counters.c -- what the BTL moved, one line per rank at finalize
 * (btl_wireup_counters 1). The tests read this line: its keys are stable.
 */
#include "btl_wireup.h"

#include <stdio.h>

#include "opal/util/output.h"

/* "a/b/c": one figure per rail. */
static void by_rail(char* out, size_t len, const uint64_t* v, size_t nrails) {
  size_t at = 0;
  out[0] = 0;
  for (size_t r = 0; r < nrails && at < len; ++r)
    at += (size_t)snprintf(out + at, len - at, "%s%llu", r ? "/" : "", (unsigned long long)v[r]);
}

void btl_wireup_counters_print(const mca_btl_wireup_module_t* m) {
  const btl_wireup_counters_t* c = &m->counters;
  char lanes[128], rdma[128];
  by_rail(lanes, sizeof lanes, c->lanes_by_rail, m->nrails);
  by_rail(rdma, sizeof rdma, c->rdma_by_rail, m->nrails);
  opal_output(0,
              "btl wireup counters: rank=%u mode=%s lanes_ready=%llu peers=%llu sends=%llu send_bytes=%llu "
              "recvs=%llu recv_bytes=%llu puts=%llu put_bytes=%llu gets=%llu get_bytes=%llu "
              "reg_requests=%llu reg_native=%llu dereg_native=%llu qps_created=%llu qps_destroyed=%llu "
              "qps_released=%llu sends_queued=%llu lanes_by_rail=%s rdma_by_rail=%s",
              m->rank, mca_btl_wireup_component.mode == BTL_WIREUP_BULK ? "bulk" : "on_demand",
              (unsigned long long)c->lanes_ready, (unsigned long long)c->peers_connected,
              (unsigned long long)c->sends, (unsigned long long)c->send_bytes, (unsigned long long)c->recvs,
              (unsigned long long)c->recv_bytes, (unsigned long long)c->puts, (unsigned long long)c->put_bytes,
              (unsigned long long)c->gets, (unsigned long long)c->get_bytes, (unsigned long long)c->reg_requests,
              (unsigned long long)c->reg_native, (unsigned long long)c->dereg_native,
              (unsigned long long)c->qps_created, (unsigned long long)c->qps_destroyed,
              (unsigned long long)c->qps_released, (unsigned long long)c->sends_queued, lanes, rdma);
}
