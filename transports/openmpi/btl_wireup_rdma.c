/*
 * btl_wireup_rdma.c -- memory registration through Open MPI's registration cache (rcache
 * grdma: it keeps registrations of the user's buffers across messages, and its memory hooks
 * drop one whose memory is freed), and RDMA WRITE / READ on a peer's lanes.
 */
#include "btl_wireup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/rcache/base/base.h"
#include "opal/util/output.h"

static const int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_ATOMIC;

/* The rcache's miss: register [base, base + size) on every rail's PD. */
static int reg_native(void* reg_data, void* base, size_t size, mca_rcache_base_registration_t* reg) {
  mca_btl_wireup_module_t* m = reg_data;
  btl_wireup_reg_t* r = (btl_wireup_reg_t*)reg;
  memset(r->mr, 0, sizeof r->mr);
  for (size_t i = 0; i < m->nrails; ++i) {
    r->mr[i] = ibv_reg_mr(m->rails[i].pd, base, size, kAccess);
    if (r->mr[i] == NULL) {
      opal_output(0, "btl wireup: ibv_reg_mr(%p, %zu bytes) on rail %zu: %s", base, size, i, strerror(errno));
      for (size_t j = 0; j < i; ++j) ibv_dereg_mr(r->mr[j]);
      return OPAL_ERR_OUT_OF_RESOURCE;
    }
    r->handle.lkey[i] = r->mr[i]->lkey;
    r->handle.rkey[i] = r->mr[i]->rkey;
  }
  ++m->counters.reg_native;
  return OPAL_SUCCESS;
}

static int dereg_native(void* reg_data, mca_rcache_base_registration_t* reg) {
  mca_btl_wireup_module_t* m = reg_data;
  btl_wireup_reg_t* r = (btl_wireup_reg_t*)reg;
  for (size_t i = 0; i < m->nrails; ++i)
    if (r->mr[i] != NULL) {
      ibv_dereg_mr(r->mr[i]);
      r->mr[i] = NULL;
    }
  ++m->counters.dereg_native;
  return OPAL_SUCCESS;
}

int btl_wireup_rcache_create(mca_btl_wireup_module_t* m) {
  mca_rcache_base_resources_t res = {
      .cache_name = "wireup",
      .reg_data = m,
      .sizeof_reg = sizeof(btl_wireup_reg_t),
      .register_mem = reg_native,
      .deregister_mem = dereg_native,
  };
  m->rcache = mca_rcache_base_module_create("grdma", m, &res);
  if (m->rcache == NULL) {
    opal_output(0, "btl wireup: Open MPI's rcache grdma could not be created");
    return OPAL_ERROR;
  }
  return OPAL_SUCCESS;
}

mca_btl_base_registration_handle_t* btl_wireup_register_mem(mca_btl_base_module_t* btl,
                                                            struct mca_btl_base_endpoint_t* ep, void* base,
                                                            size_t size, uint32_t flags) {
  (void)ep, (void)flags; /* every registration gets every access: one cache entry per range */
  mca_btl_wireup_module_t* m = (mca_btl_wireup_module_t*)btl;
  uint32_t access = MCA_RCACHE_ACCESS_LOCAL_WRITE | MCA_RCACHE_ACCESS_REMOTE_READ | MCA_RCACHE_ACCESS_REMOTE_WRITE |
                    MCA_RCACHE_ACCESS_REMOTE_ATOMIC;
  mca_rcache_base_registration_t* reg = NULL;
  BTL_WIREUP_LOCK(m);
  ++m->counters.reg_requests;
  int rc = m->rcache->rcache_register(m->rcache, base, size, 0 /* host memory only: no CUDA here */,
                                      (int32_t)access, &reg);
  BTL_WIREUP_UNLOCK(m);
  if (rc != OPAL_SUCCESS || reg == NULL) return NULL;
  return &((btl_wireup_reg_t*)reg)->handle;
}

int btl_wireup_deregister_mem(mca_btl_base_module_t* btl, mca_btl_base_registration_handle_t* h) {
  mca_btl_wireup_module_t* m = (mca_btl_wireup_module_t*)btl;
  btl_wireup_reg_t* r = (btl_wireup_reg_t*)((char*)h - offsetof(btl_wireup_reg_t, handle));
  BTL_WIREUP_LOCK(m);
  m->rcache->rcache_deregister(m->rcache, &r->base);
  BTL_WIREUP_UNLOCK(m);
  return OPAL_SUCCESS;
}

static btl_wireup_rdma_op_t* op_alloc(mca_btl_wireup_module_t* m) {
  btl_wireup_rdma_op_t* op = m->free_ops;
  if (op != NULL)
    m->free_ops = op->next_free;
  else
    op = malloc(sizeof *op);
  if (op != NULL) op->kind = BTL_WIREUP_WR_RDMA;
  return op;
}

void btl_wireup_rdma_complete(mca_btl_wireup_module_t* m, btl_wireup_rdma_op_t* op, int status) {
  struct mca_btl_base_endpoint_t* ep = op->endpoint;
  if (ep->lanes[op->lane].sq_used > 0) --ep->lanes[op->lane].sq_used;
  mca_btl_base_rdma_completion_fn_t cb = op->cbfunc;
  void *addr = op->local_address, *ctx = op->cbcontext, *data = op->cbdata;
  mca_btl_base_registration_handle_t* lh = op->local_handle;
  op->next_free = m->free_ops;
  m->free_ops = op;
  if (cb) cb(&m->super, ep, addr, lh, ctx, data, status);
}

/* One RDMA WRITE or READ on the next ready lane of `ep`. OPAL_ERR_OUT_OF_RESOURCE (ob1 tries
 * again later) when no lane is ready yet or its send queue is full. */
static int post_rdma(mca_btl_wireup_module_t* m, struct mca_btl_base_endpoint_t* ep, enum ibv_wr_opcode opcode,
                void* local_address, uint64_t remote_address, mca_btl_base_registration_handle_t* lh,
                mca_btl_base_registration_handle_t* rh, size_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                void* cbcontext, void* cbdata) {
  if (ep->failed) return OPAL_ERR_UNREACH;
  int lane = -1;
  for (uint32_t i = 0; i < m->lanes; ++i) {
    uint32_t l = (ep->next_lane + i) % m->lanes;
    if (ep->lanes[l].ready && ep->lanes[l].sq_used < 255) {
      lane = (int)l;
      break;
    }
  }
  if (lane < 0) {
    if (!ep->lanes[0].ready && !ep->connect_asked) btl_wireup_conn_ask(m, ep);
    return OPAL_ERR_OUT_OF_RESOURCE;
  }
  ep->next_lane = (uint32_t)(lane + 1) % m->lanes;
  btl_wireup_lane_t* ln = &ep->lanes[lane];
  btl_wireup_rdma_op_t* op = op_alloc(m);
  if (op == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  *op = (btl_wireup_rdma_op_t){.kind = BTL_WIREUP_WR_RDMA, .endpoint = ep, .lane = lane,
                               .local_address = local_address, .local_handle = lh, .cbfunc = cbfunc,
                               .cbcontext = cbcontext, .cbdata = cbdata};
  struct ibv_sge sge = {.addr = (uintptr_t)local_address, .length = (uint32_t)size, .lkey = lh->lkey[ln->rail]};
  struct ibv_send_wr wr = {.wr_id = (uintptr_t)&op->kind, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
                           .send_flags = IBV_SEND_SIGNALED,
                           .wr.rdma = {.remote_addr = remote_address, .rkey = rh->rkey[ln->rail]}},
                     *bad;
  int rc = ibv_post_send(ln->qp, &wr, &bad);
  if (rc != 0) {
    op->next_free = m->free_ops;
    m->free_ops = op;
    if (rc == ENOMEM) return OPAL_ERR_OUT_OF_RESOURCE;
    opal_output(0, "btl wireup: ibv_post_send (RDMA %s of %zu bytes to rank %u, QPN 0x%x): %s",
                opcode == IBV_WR_RDMA_READ ? "READ" : "WRITE", size, ep->rank, ln->qp->qp_num, strerror(rc));
    return OPAL_ERROR;
  }
  ++ln->sq_used;
  ++m->counters.rdma_by_rail[ln->rail];
  if (opcode == IBV_WR_RDMA_READ) {
    ++m->counters.gets;
    m->counters.get_bytes += size;
  } else {
    ++m->counters.puts;
    m->counters.put_bytes += size;
  }
  return OPAL_SUCCESS;
}

/* post_rdma under the module's lock (taken only with MPI threads). */
static int rdma(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, enum ibv_wr_opcode opcode,
                void* local_address, uint64_t remote_address, mca_btl_base_registration_handle_t* lh,
                mca_btl_base_registration_handle_t* rh, size_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                void* cbcontext, void* cbdata) {
  mca_btl_wireup_module_t* m = (mca_btl_wireup_module_t*)btl;
  BTL_WIREUP_LOCK(m);
  int rc = post_rdma(m, ep, opcode, local_address, remote_address, lh, rh, size, cbfunc, cbcontext, cbdata);
  BTL_WIREUP_UNLOCK(m);
  return rc;
}

int btl_wireup_put(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                   uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                   mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
  (void)flags, (void)order;
  return rdma(btl, ep, IBV_WR_RDMA_WRITE, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
              cbcontext, cbdata);
}

int btl_wireup_get(mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                   uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                   mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
  (void)flags, (void)order;
  return rdma(btl, ep, IBV_WR_RDMA_READ, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
              cbcontext, cbdata);
}
