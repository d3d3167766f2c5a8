// LD_PRELOAD into a program that drives its QPs itself (perftest -R through librdmacm) to
// read, instead of derive, what its QPs were given: after each successful modify to RTS it
// asks ibv_query_qp and prints one "qp_attr_spy" line in dp_bench's "dp_bench qp" format, so
// the two can be compared field by field (bench/scripts/dp-vs-perftest.sh --spy).
//
// librdmacm reaches ibv_modify_qp through the PLT (ucma_modify_qp_rtr/rts in cma.c), so the
// definition here is the one it binds to; the real one is found with RTLD_NEXT.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>

typedef int (*modify_fn)(struct ibv_qp*, struct ibv_qp_attr*, int);

static int mtu_bytes(enum ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0; }

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  static modify_fn real;
  if (real == NULL) real = (modify_fn)dlsym(RTLD_NEXT, "ibv_modify_qp");
  if (real == NULL) return ENOSYS;  // no libibverbs behind us: say so the way verbs do
  const int rc = real(qp, attr, mask);
  if (rc != 0 || !(mask & IBV_QP_STATE) || attr->qp_state != IBV_QPS_RTS) return rc;
  struct ibv_qp_attr a = {0};
  struct ibv_qp_init_attr ia = {0};
  const int q = ibv_query_qp(qp, &a,
                             IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ACCESS_FLAGS |
                                 IBV_QP_MIN_RNR_TIMER | IBV_QP_CAP,
                             &ia);
  if (q != 0) {
    fprintf(stderr, "qp_attr_spy qpn=0x%x ibv_query_qp failed: errno %d\n", qp->qp_num, q);
    return rc;
  }
  fprintf(stderr,
          "qp_attr_spy qpn=0x%x path_mtu=%d timeout=%u retry_cnt=%u rnr_retry=%u max_rd_atomic=%u "
          "max_dest_rd_atomic=%u access=0x%x min_rnr_timer=%u max_inline=%u\n",
          qp->qp_num, mtu_bytes(a.path_mtu), a.timeout, a.retry_cnt, a.rnr_retry, a.max_rd_atomic,
          a.max_dest_rd_atomic, (unsigned)a.qp_access_flags, a.min_rnr_timer, a.cap.max_inline_data);
  return rc;
}
