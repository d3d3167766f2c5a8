#!/usr/bin/env python3
"""Compares wireup's data path with perftest's by distribution, from the "raw" lines that
bench/scripts/dp-vs-perftest.sh prints (one "raw <side> <metric> <value>" per number, in round
order, perftest's then wireup's within a round).

  dp-compare.py OUTPUT.txt [--resamples 20000] [--seed 1]

Per metric: each side's median and quartiles; the ratio wireup/perftest of the medians with a
bootstrap 95% interval (rounds resampled with replacement, each side on its own); the median
of the per-round ratios (each round's wireup over the same round's perftest, so that what
slowed the host during one round falls on both) with its own bootstrap interval; and a verdict:
  within 5%     the interval of the per-round ratio lies inside [0.95, 1.05]
  wireup ahead  the interval lies on wireup's better side of 1 (higher bandwidth, lower latency)
  behind        the interval lies beyond 5% on wireup's worse side
  undecided     otherwise (the interval is wider than the question: more rounds, a quieter host)
No third-party module: Debian's python3 alone.
"""
import argparse
import random
import statistics
import sys


def quantile(xs, q):
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def interval(stat, samples, rng, resamples):
    """95% percentile bootstrap interval of stat(samples...) (each list resampled on its own)."""
    values = []
    for _ in range(resamples):
        drawn = [[rng.choice(xs) for _ in xs] for xs in samples]
        values.append(stat(*drawn))
    return quantile(values, 0.025), quantile(values, 0.975)


def verdict(lo, hi, higher_is_better):
    if lo >= 0.95 and hi <= 1.05:
        return "within 5%"
    if (higher_is_better and lo > 1.0) or (not higher_is_better and hi < 1.0):
        return "wireup ahead"
    if (higher_is_better and hi < 0.95) or (not higher_is_better and lo > 1.05):
        return "behind"
    return "undecided"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output")
    ap.add_argument("--resamples", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    data = {}  # metric -> side -> [values in round order]
    with open(a.output, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4 or parts[0] != "raw" or parts[1] not in ("perftest", "wireup"):
                continue
            try:
                value = float(parts[3])
            except ValueError:
                continue
            data.setdefault(parts[2], {}).setdefault(parts[1], []).append(value)
    if not data:
        sys.exit("dp-compare: no raw lines in %s (dp-vs-perftest.sh prints them since the raw-output change)" % a.output)

    rng = random.Random(a.seed)
    print("%-22s %5s %22s %22s %24s %24s  %s" % ("metric", "n", "perftest median [q1-q3]", "wireup median [q1-q3]",
                                                 "ratio of medians [95%]", "per-round ratio [95%]", "verdict"))
    for metric in sorted(data):
        p, w = data[metric].get("perftest", []), data[metric].get("wireup", [])
        n = min(len(p), len(w))
        if n < 3:
            print("%-22s %5d  too few rounds" % (metric, n))
            continue
        higher = "MiBps" in metric
        ratio_of_medians = statistics.median(w) / statistics.median(p)
        rm_lo, rm_hi = interval(lambda x, y: statistics.median(y) / statistics.median(x), [p, w], rng, a.resamples)
        per_round = [w[i] / p[i] for i in range(n) if p[i] > 0]
        pr = statistics.median(per_round)
        pr_lo, pr_hi = interval(statistics.median, [per_round], rng, a.resamples)
        print("%-22s %5d %9.2f [%.2f-%.2f] %9.2f [%.2f-%.2f] %8.3f [%.3f-%.3f] %8.3f [%.3f-%.3f]  %s" % (
            metric, n, statistics.median(p), quantile(p, .25), quantile(p, .75), statistics.median(w),
            quantile(w, .25), quantile(w, .75), ratio_of_medians, rm_lo, rm_hi, pr, pr_lo, pr_hi,
            verdict(pr_lo, pr_hi, higher)))


if __name__ == "__main__":
    main()
