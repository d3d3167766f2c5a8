#!/usr/bin/env python3
"""Where the engine's instructions go beyond SimMesh's, by what they pay for.

Reads the two profiles bench/scripts/callgrind-engine.sh writes (SimMesh's and the engines'),
takes each function's exclusive instructions in the engine's profile minus those in
SimMesh's, divides by the connections, and sums the differences into groups by the
function's name (the first rule that matches wins). The groups add up to the whole
difference; a function both sides run (the simulated fabric, the allocator) counts only
for what the engine runs of it beyond SimMesh.

usage: callgrind-groups.py MESH.out ENGINE.out CONNECTIONS
"""
import re
import subprocess
import sys

# (group, what it pays for, pattern matched at the start of the function's qualified name,
# its signature cut off). Order matters: the first match wins.
GROUPS = [
    ("MACs", "libsodium's MAC (mac.h), 4 per connection: authentication both ways",
     r"crypto_|libsodium|sodium_|blake2b|siphash|wireup::MacKey::"),
    ("wire and gate", "private data encoded, decoded and checked before any QP; the REP's check",
     r"wireup::(encode|decode|Wire::|check_request|check_reply|check_pair|decode_address|Engine::check_reply|RequestGate|GateContext)"),
    ("QP transitions", "init_qp_attr answers overridden and their required attributes checked, 3 per QP",
     r"wireup::qp::(?!DefaultQpFactory)"),
    ("QP factory", "the transport's QP factory (std::function) and its defaults",
     r"wireup::qp::DefaultQpFactory|_Function_handler<wireup::Result<std::unique_ptr<wireup::prov::Qp"),
    ("ECE", "ibv_query_ece / rdma_set_local_ece / rdma_get_remote_ece / ibv_set_ece negotiated",
     r"wireup::ece::"),
    ("cm::Connection", "the per-connection CM state machine: one object per attempt, timings",
     r"wireup::cm::"),
    ("results and stats", "a result per endpoint, its time stamps, counters",
     r"wireup::(Records|ResultTimings|Stats|stats::|PhaseSamples|Counters)"),
    ("orchestration", "progress loop, windows, retries, notices, pacing, settling, pair table, plan",
     r"wireup::(Engine|PairTable|Admission|RetryScheduler|NoticeLines|KeyQueue|incast|plan|PeerTable|Pair\b)"),
    ("provider seam", "event dispatch and acks, migration, the route to each id's sink",
     r"wireup::prov::(?!sim::)"),
    ("simulated fabric", "the provider calls the engine makes beyond SimMesh's (ECE, migration, init_qp_attr)",
     r"wireup::prov::sim::(?!SimMesh)"),
    ("drivers", "sim_drive's loop minus SimMesh's own loop (listen/connect/run)",
     r"wireup::sim_drive|wireup::prov::sim::SimMesh"),
    ("allocator", "malloc/free: ~5 allocations per connection more than SimMesh's ~31 (BM_EngineVsMesh *_allocs_per_conn)",
     r"malloc|free|_int_|operator new|operator delete|tcache|unlink_chunk"),
    ("memcpy/memset", "copies and zeroing", r"__mem|mem(move|cpy|set|cmp)"),
]
OTHER = ("other", "everything else (inlined std code attributed to its own frame, libc)")

LINE = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$")


def load(path):
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    funcs = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        obj = re.search(r" \[([^\]]*)\]$", m.group(2))
        label = re.sub(r" \[[^\]]*\]$", "", m.group(2))
        # "file:function": the function is what follows the file's path.
        fn = label.split(":", 1)[1] if re.match(r"^[^ ]*?:", label) else label
        # A library's unnamed internals (no symbols: "???:0x..."): named by the library.
        if label.startswith("???:0x") and obj:
            fn = obj.group(1).rsplit("/", 1)[-1] + label[3:]
        funcs[fn] = funcs.get(fn, 0) + int(m.group(1).replace(",", ""))
    return funcs


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    mesh, engine, conns = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
    sums = {g[0]: 0.0 for g in GROUPS + [OTHER]}
    for fn in set(mesh) | set(engine):
        d = (engine.get(fn, 0) - mesh.get(fn, 0)) / conns
        qname = fn.split("(", 1)[0]
        qname = re.sub(r"^non-virtual thunk to ", "", qname)
        for name, _, pat in GROUPS:
            if re.match(pat, qname):
                sums[name] += d
                break
        else:
            sums[OTHER[0]] += d
    total = sum(sums.values())
    print(f"callgrind-groups: engine minus SimMesh, exclusive instructions per connection: {total:,.0f}")
    for name, what, *_ in sorted(GROUPS + [OTHER], key=lambda g: -sums[g[0]]):
        print(f"  {sums[name]:8,.0f}  {name:18s} {what}")


if __name__ == "__main__":
    main()
