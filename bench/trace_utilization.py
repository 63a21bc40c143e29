#!/usr/bin/env python3
"""trace_utilization.py -- how busy the cores were, from `sk profile` traces.

    python3 bench/trace_utilization.py DIR [DIR ...]

DIR is a directory written by `sk profile MODEL --out OUT` (OUT/no_sk_model or
OUT/sk_model) holding trace.json. For each launch on the host track (an eager
op's launch, or a super kernel) it adds up, per core, the time the core spent
running blocks (eager blocks and sub-kernel RUN records; waits and barriers
are not work) and prints, per step and in total, per run:

    wall      the launches' time on the host track
    busy      each core's block time
    idle      wall * cores - sum(busy): what a perfect schedule could win back

A last line gives the idle share of the median run: on a machine that
preempts its cores now and then (a VM), the totals carry those runs' stalls
and the median does not.

The total idle share bounds what any fusion of these launches can gain with
the same kernels: fused <= eager only by removing idle time (launch gaps,
joins, imbalance), never by making the blocks faster.
"""
import collections
import json
import os
import sys

WORK = ("eager", "subkernel")  # categories of block records (RUN)
HOST = ("launch", "superkernel")  # categories of host-track launch records


def load(path):
    with open(os.path.join(path, "trace.json")) as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def summarize(path):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    cores = sorted({e["tid"] for e in ev if e.get("cat") in WORK})
    launches = sorted((e for e in ev if e.get("cat") in HOST), key=lambda e: e["ts"])
    work = sorted((e for e in ev if e.get("cat") in WORK), key=lambda e: e["ts"])
    runs = collections.Counter(e["name"] for e in launches)
    n_runs = max(runs.values()) if runs else 1
    wall = collections.OrderedDict()
    busy = collections.defaultdict(lambda: collections.defaultdict(float))
    per_run = []  # [wall, busy] of each run: a run starts at each launch of the first step
    j = 0
    for launch in launches:
        name, t0, t1 = launch["name"], launch["ts"], launch["ts"] + launch["dur"]
        if not per_run or name == launches[0]["name"]:
            per_run.append([0.0, 0.0])
        wall[name] = wall.get(name, 0.0) + launch["dur"]
        per_run[-1][0] += launch["dur"]
        while j < len(work) and work[j]["ts"] < t0:
            j += 1
        k = j
        while k < len(work) and work[k]["ts"] < t1:
            w = work[k]
            busy[name][w["tid"]] += min(w["ts"] + w["dur"], t1) - w["ts"]
            per_run[-1][1] += min(w["ts"] + w["dur"], t1) - w["ts"]
            k += 1
    return cores, n_runs, wall, busy, per_run


def median_idle(per_run, n):
    """The median run's idle share: a run the machine preempted (a VM's
    stolen time) weighs in the totals above but not here."""
    shares = sorted(1 - b / (w * n) for w, b in per_run if w > 0)
    if not shares:
        return 0.0
    mid = len(shares) // 2
    return shares[mid] if len(shares) % 2 else (shares[mid - 1] + shares[mid]) / 2


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    for path in argv[1:]:
        cores, n_runs, wall, busy, per_run = summarize(path)
        n = max(len(cores), 1)
        print("%s: %d core(s), per run (us), %d runs" % (path, n, n_runs))
        print("  %-10s %9s  %s  %7s" % ("step", "wall", "  ".join("busy c%-3d" % c for c in cores), "idle%"))
        tw, tb = 0.0, collections.defaultdict(float)
        for name, w in wall.items():
            b = busy[name]
            idle = 1 - sum(b.values()) / (w * n) if w > 0 else 0
            print("  %-10s %9.1f  %s  %6.1f%%" % (name, w / n_runs, "  ".join("%9.1f" % (b[c] / n_runs) for c in cores),
                                                100 * idle))
            tw += w
            for c in cores:
                tb[c] += b[c]
        idle = 1 - sum(tb.values()) / (tw * n) if tw > 0 else 0
        print("  %-10s %9.1f  %s  %6.1f%%" % ("total", tw / n_runs, "  ".join("%9.1f" % (tb[c] / n_runs) for c in cores),
                                             100 * idle))
        print("  median run: idle %.1f%% of core time" % (100 * median_idle(per_run, n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
