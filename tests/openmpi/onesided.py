"""MPI one-sided over the BTL through osc pt2pt: each rank exposes a window, Puts a pattern into
its right neighbour's, Gets its left neighbour's back, and Accumulates (MPI.SUM) into rank 0's,
between fences; every value is checked. osc pt2pt refuses MPI_THREAD_MULTIPLE (Open MPI issue
2614), mpi4py's default, so the script asks for MPI_THREAD_SINGLE. One verdict line per rank:
"onesided: rank R: PASS ..." or "... FAIL ..."."""
import array
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402

N = 1 << 18  # 256 Ki doubles: 2 MiB per window, past the eager limit


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    mem = MPI.Alloc_mem(8 * N)
    win = MPI.Win.Create(mem, disp_unit=8, comm=comm)
    local = memoryview(mem).cast("d")
    for i in range(N):
        local[i] = 0.0
    win.Fence()
    out = array.array("d", (rank * 1e6 + i for i in range(N)))
    win.Put(out, right)
    win.Fence()
    ok = all(local[i] == left * 1e6 + i for i in range(0, N, 997))
    got = array.array("d", bytes(8 * N))
    win.Get(got, left)
    win.Fence()
    ok = ok and all(got[i] == ((left - 1) % size) * 1e6 + i for i in range(0, N, 997))
    win.Fence()
    if rank == 0:
        for i in range(N):
            local[i] = 0.0
    win.Fence()
    ones = array.array("d", [1.0] * 1024)
    win.Accumulate(ones, 0, op=MPI.SUM)
    win.Fence()
    if rank == 0:
        ok = ok and all(local[i] == float(size) for i in range(1024))
    win.Free()
    MPI.Free_mem(mem)
    print(f"onesided: rank {rank}: {'PASS' if ok else 'FAIL'}: Put/Get of {8 * N} bytes, Accumulate of 1024 doubles",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
