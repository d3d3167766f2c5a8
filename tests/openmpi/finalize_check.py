"""Moves a known number of bytes around a ring of ranks through MPI (mpi4py), finalizes MPI,
then asks the kernel what RDMA objects this process still holds (`rdma -j resource show`):
after MPI_Finalize there must be none (every QP, CQ, SRQ, MR, PD and CM id of the BTL gone).

Run under mpirun with btl self,wireup (tests/openmpi/btl-check.sh). Prints one verdict line
per rank: "finalize-check: rank R: PASS ..." or "... FAIL ...".
"""
import json
import os
import subprocess
import sys

import mpi4py

mpi4py.rc.finalize = False  # MPI.Finalize() below, before the kernel is asked
from mpi4py import MPI  # noqa: E402

import array  # noqa: E402

ROUNDS = 20
SIZES = (8, 4096, 65536, 1 << 20)  # eager, send path and RDMA rendezvous


def ring():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    moved = 0
    pattern = bytes(range(251)) * ((max(SIZES) + 2 * 251) // 251)
    for n in SIZES:
        out = array.array("B", pattern[rank % 251:rank % 251 + n])
        want = pattern[left % 251:left % 251 + n]
        inp = array.array("B", bytes(n))
        for _ in range(ROUNDS):
            comm.Sendrecv(out, dest=right, recvbuf=inp, source=left)
            if inp.tobytes() != want:
                print(f"finalize-check: rank {rank}: FAIL: {n} bytes from rank {left} differ", flush=True)
                return False, moved
            moved += n
    return True, moved


def held():
    pid = os.getpid()
    counts = {}
    details = []
    for kind in ("qp", "cq", "mr", "pd", "cm_id", "srq"):
        r = subprocess.run(["rdma", "-j", "resource", "show", kind], capture_output=True, text=True)
        if r.returncode != 0:
            # an older iproute2 may not know a kind (srq): counted as unknown, not as none
            counts[kind] = None
            continue
        entries = json.loads(r.stdout or "[]")
        mine = [e for e in entries if e.get("pid") == pid]
        counts[kind] = len(mine)
        details += [f"{kind} {e}" for e in mine]
    return counts, details


def main():
    rank = MPI.COMM_WORLD.Get_rank()
    ok, moved = ring()
    before, _ = held()
    MPI.COMM_WORLD.Barrier()
    MPI.Finalize()
    after, details = held()
    # librdmacm keeps one PD per device it has used for as long as it is loaded, once
    # rdma_get_devices() was called ("Devices remain opened while the librdmacm is loaded",
    # rdma_cma.h): wireup's provider calls it, so a PD with no users may stay, one per device.
    left = {k: v for k, v in after.items() if v and k != "pd"}
    pds = [d for d in details if d.startswith("pd ")]
    if after.get("pd") and (after["pd"] > 1 or "'users': 0" not in pds[0]):
        left["pd"] = after["pd"]
    verdict = "PASS" if ok and not left else "FAIL"
    print(f"finalize-check: rank {rank}: {verdict}: moved {moved} bytes; held before finalize "
          f"{before}; after {after}", flush=True)
    for d in details:
        print(f"finalize-check: rank {rank}: still held: {d}", flush=True)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
