/* first_alltoall: the time from just before MPI_Init to the end of a first MPI_Alltoall (of
 * one int per pair), the slowest rank's, as a user of an MPI library meets it: the transport's
 * start-up and every connection that first collective needs. The ranks share one node's clock
 * (CLOCK_REALTIME), so their start and end times compare. Prints one line on rank 0:
 *   first-alltoall: np N init_ms X alltoall_ms Y total_ms Z
 * (init_ms: the slowest MPI_Init; total_ms: the earliest start to the latest end). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  const double t0 = now_ms();
  MPI_Init(&argc, &argv);
  const double t1 = now_ms();
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int* out = malloc(sizeof(int) * (size_t)size);
  int* in = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < size; ++i) out[i] = rank * size + i;
  MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
  const double t2 = now_ms();
  int bad = 0;
  for (int i = 0; i < size; ++i) bad += in[i] != i * size + rank;
  double mine[3] = {-t0, t1 - t0, t2}, all[3];
  MPI_Reduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const double start = -all[0], end = all[2];
    printf("first-alltoall: np %d init_ms %.1f alltoall_ms %.1f total_ms %.1f%s\n", size, all[1],
           end - start - all[1], end - start, allbad ? " WRONG DATA" : "");
  }
  free(out), free(in);
  MPI_Finalize();
  return allbad != 0;
}
