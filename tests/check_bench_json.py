#!/usr/bin/env python3
"""check_bench_json.py — checks the JSON document of `sk bench --json`.

    check_bench_json.py [FILE] [--scenario NAME] [--threads N] [-- CMD [ARGS...]]

Reads FILE (default: stdin; with -- CMD: CMD's stdout, CMD must exit 0), parses it as JSON and asserts the structure:
machine.cores, and for every result its scenario, threads, iters, the three
modes' median_us / p10_us / p90_us (p10 <= median <= p90), the three ratios
(equal to the medians' ratios), the OpenBLAS floor (null, or its
percentiles, gflop and jit_over_floor) and bitwise_equal true. With --scenario and
--threads: exactly one result, with those.
"""
import json
import math
import subprocess
import sys


def fail(msg):
    print("check_bench_json: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def number(obj, key, where):
    v = obj.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        fail("%s: %r is not a finite number: %r" % (where, key, v))
    return v


def main(argv):
    path, scenario, threads, cmd = None, None, None, None
    i = 1
    while i < len(argv):
        if argv[i] == "--":
            cmd = argv[i + 1:]
            if not cmd:
                fail("no command after --")
            break
        elif argv[i] == "--scenario":
            scenario = argv[i + 1]
            i += 2
        elif argv[i] == "--threads":
            threads = int(argv[i + 1])
            i += 2
        else:
            path = argv[i]
            i += 1
    if cmd:
        print("check_bench_json: running: " + " ".join(cmd))
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        print("---- stdout ----\n" + run.stdout + "---- stderr ----\n" + run.stderr)
        if run.returncode != 0:
            fail("exit status %d, expected 0" % run.returncode)
        text = run.stdout
    else:
        text = open(path).read() if path else sys.stdin.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail("not JSON: %s\n%s" % (e, text))
    machine = doc.get("machine")
    if not isinstance(machine, dict) or number(machine, "cores", "machine") < 1:
        fail("machine.cores missing or < 1")
    results = doc.get("results")
    if not isinstance(results, list) or not results:
        fail("no results")
    for r in results:
        where = "result %r" % r.get("scenario")
        if not isinstance(r.get("scenario"), str):
            fail(where + ": no scenario")
        if number(r, "threads", where) < 1 or number(r, "iters", where) < 1:
            fail(where + ": threads or iters < 1")
        modes = r.get("modes")
        if not isinstance(modes, dict):
            fail(where + ": no modes")
        med = {}
        for m in ("eager", "interp", "jit"):
            mo = modes.get(m)
            if not isinstance(mo, dict):
                fail("%s: no mode %s" % (where, m))
            p10, p50, p90 = (number(mo, k, where + " " + m) for k in ("p10_us", "median_us", "p90_us"))
            if not (0 < p10 <= p50 <= p90):
                fail("%s %s: expected 0 < p10 <= median <= p90, got %r %r %r" % (where, m, p10, p50, p90))
            med[m] = p50
        ratios = r.get("ratios")
        if not isinstance(ratios, dict):
            fail(where + ": no ratios")
        for key, a, b in (("interp_over_eager", "interp", "eager"), ("jit_over_eager", "jit", "eager"),
                          ("jit_over_interp", "jit", "interp")):
            v = number(ratios, key, where + " ratios")
            if not math.isclose(v, med[a] / med[b], rel_tol=1e-3):
                fail("%s: ratio %s %r is not %r / %r" % (where, key, v, med[a], med[b]))
        if "floor" not in r:
            fail(where + ": no floor (null when OpenBLAS is absent)")
        floor = r["floor"]
        if floor is not None:
            if not isinstance(floor, dict):
                fail(where + ": floor is neither null nor an object")
            p10, p50, p90 = (number(floor, k, where + " floor") for k in ("p10_us", "median_us", "p90_us"))
            if not (0 < p10 <= p50 <= p90) or number(floor, "gflop", where + " floor") <= 0:
                fail("%s floor: expected 0 < p10 <= median <= p90 and gflop > 0" % where)
            v = number(ratios, "jit_over_floor", where + " ratios")
            if not math.isclose(v, med["jit"] / p50, rel_tol=1e-3):
                fail("%s: jit_over_floor %r is not %r / %r" % (where, v, med["jit"], p50))
        if r.get("bitwise_equal") is not True:
            fail(where + ": bitwise_equal is not true")
    if scenario is not None or threads is not None:
        if len(results) != 1:
            fail("expected one result, got %d" % len(results))
        if scenario is not None and results[0]["scenario"] != scenario:
            fail("scenario %r, expected %r" % (results[0]["scenario"], scenario))
        if threads is not None and results[0]["threads"] != threads:
            fail("threads %r, expected %r" % (results[0]["threads"], threads))
    print("check_bench_json: ok (%d result%s)" % (len(results), "" if len(results) == 1 else "s"))


if __name__ == "__main__":
    main(sys.argv)
