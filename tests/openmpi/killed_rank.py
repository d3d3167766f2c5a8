"""A rank killed mid-job under mpirun: ranks pass messages around a ring until rank 1 kills
itself (SIGKILL, as an OOM killer or a node failure would); the job must end, not hang, and
say which rank died (tests/openmpi/btl-check.sh --expect-death checks both)."""
import os
import signal

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
buf = bytearray(4096)
for i in range(1000000):
    if rank == 1 and i == 50:
        print("killed-rank: rank 1 kills itself now", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    comm.Sendrecv(buf, dest=(rank + 1) % size, recvbuf=buf, source=(rank - 1) % size)
print(f"killed-rank: rank {rank}: the ring ran to its end: the kill did not happen", flush=True)
