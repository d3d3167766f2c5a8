#!/usr/bin/env python3
"""Splits a massif detailed snapshot (bench/massif_mark.h) into who holds the bytes.

Each allocation is charged to the first wireup frame above it on its stack (the code that
asked for it, through any std:: container): the simulated fabric (wireup::prov::sim::, the
stand-in for the kernel and the driver: ids, QPs, CM state), the benchmark and its driver
(wireup::bench::, sim_drive), or the library (every other wireup:: frame: engine, cm, qp,
wire, records). Allocations with no wireup frame (runtime start-up) are "other".

usage: massif_split.py SNAPSHOT RANKS
"""
import re
import sys

FRAME = re.compile(r"^( *)n(\d+): (\d+) (.*)$")


def owner(stack):
    for fr in stack:
        m = re.search(r"(wireup::[\w:]+)", fr)
        if not m:
            continue
        name = m.group(1)
        if name.startswith("wireup::prov::sim::"):
            return "sim"
        if name.startswith("wireup::bench::") or name.startswith("wireup::sim_drive"):
            return "bench"
        return "library"
    return "other"


def split(path):
    totals = {"library": 0, "sim": 0, "bench": 0, "other": 0}
    stack = []
    for line in open(path):
        m = FRAME.match(line.rstrip("\n"))
        if not m:
            continue
        depth, children, size, text = len(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        del stack[depth:]
        stack.append(text)
        if children == 0 and depth > 0:
            if "below massif's threshold" in text:
                raise SystemExit("run massif with --threshold=0: some bytes cannot be attributed")
            # stack[0] is the root (malloc/new); stack[1] called it, each next line its caller.
            totals[owner(stack[1:])] += size
    return totals


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    t = split(path)
    for k in ("library", "sim", "bench", "other"):
        print(f"{k:8s} {t[k]:>12d} B  {t[k] / ranks:>10.1f} B/rank")


if __name__ == "__main__":
    main()
