/* The smallest transport: every rank of an MPI job connects one RC QP of its own to every
 * other rank through wireup, then each QP is at RTS and the transport may post on it. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <mpi.h>
#include <stdio.h>
#include <wireup/wireup.h>

static struct ibv_pd* pd;
static struct ibv_cq* cq;

static int make_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** out) {
  (void)arg, (void)req;
  struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};
  *out = ibv_create_qp(pd, &a);
  return *out ? 0 : errno;
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_Comm_size(MPI_COMM_WORLD, &size);
  wireup_context_t* ctx;
  if (wireup_context_create(NULL, &ctx) != WIREUP_OK) return fprintf(stderr, "%s\n", wireup_last_error(NULL)), 1;
  pd = ibv_alloc_pd(wireup_context_ibv_context(ctx));
  cq = ibv_create_cq(wireup_context_ibv_context(ctx), 4096, NULL, NULL, 0);

  wireup_params_t p;
  wireup_params_init(&p);
  p.rank = rank, p.nranks = size, p.qp_create = make_qp;
  p.job_key = 0x5eed;  /* a real job broadcasts a random key from rank 0 */
  wireup_t* w;
  if (wireup_create(ctx, &p, &w) != WIREUP_OK) return fprintf(stderr, "%s\n", wireup_last_error(NULL)), 1;

  /* Publish the address, collect everyone's (fixed-size records for MPI_Allgather). */
  struct { size_t len; uint8_t bytes[WIREUP_ADDRESS_MAX]; } mine = {sizeof mine.bytes, {0}}, all[size];
  wireup_local_address(w, mine.bytes, &mine.len);
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  wireup_peer_t peers[size];
  for (int r = 0; r < size; ++r) peers[r] = (wireup_peer_t){(uint32_t)r, all[r].bytes, all[r].len};
  wireup_set_peers(w, peers, (size_t)size);

  wireup_start(w);
  while (wireup_done(w) == 0)
    if (wireup_progress(w, NULL) != WIREUP_OK || wireup_wait(w, 1000) != WIREUP_OK) break;

  const size_t n = wireup_result_count(w), failed = wireup_error_count(w);
  printf("rank %d: %zu connections, %zu lanes failed\n", rank, n, failed);
  struct ibv_qp* qps[n];  /* each result: a QP of ours at RTS, its peer, lane, remote QPN */
  for (size_t i = 0; i < n; ++i) {
    wireup_result_t r;
    WIREUP_STRUCT_INIT(&r);
    wireup_result_get(w, i, &r);
    qps[i] = r.qp;  /* ... the transport posts on it here ... */
  }
  wireup_destroy(w);  /* disconnects; the QPs stay ours to destroy */
  for (size_t i = 0; i < n; ++i) ibv_destroy_qp(qps[i]);
  ibv_destroy_cq(cq), ibv_dealloc_pd(pd), wireup_context_destroy(ctx);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
