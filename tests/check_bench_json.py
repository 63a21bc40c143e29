#!/usr/bin/env python3
"""check_bench_json.py — checks the JSON document of `sk bench --json`.

    check_bench_json.py [FILE] [--scenario NAME] [--threads N] [--require-blas] [--core STATUS]
                        [--set-by WHO] [--skip-isa ISA] [--stderr FRAG] [-- CMD [ARGS...]]

Reads FILE (default: stdin; with -- CMD: CMD's stdout, CMD must exit 0), parses it as JSON and asserts the structure:
the machine (cores; the CPU's name, vendor, family, model and ISA; the floor's
BLAS: null with blas_why, or OpenBLAS's version, config, core, the core's
status against the CPU and who set OPENBLAS_CORETYPE), and for every result
its scenario, threads, iters, the three modes' median_us / p10_us / p90_us
(p10 <= median <= p90), the three ratios (equal to the medians' ratios), the
OpenBLAS floor (null, or its percentiles, gflop and core_matches, and
jit_over_floor exactly when the core matches: never a ratio against a
mismatched core) and bitwise_equal true. With --scenario and --threads:
exactly one result, with those.

--require-blas: skip (exit 77) when OpenBLAS was not loaded. --core STATUS
(match, older, newer, unknown) and --set-by WHO (openblas, user, sk): what
machine.blas must say. --skip-isa ISA: skip when the CPU's ISA is ISA (the
case cannot happen there). --stderr FRAG: CMD's stderr must contain FRAG.
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


def skip(msg):
    print("SKIPPED: " + msg)
    sys.exit(77)


def text_or_null(obj, key, where):
    v = obj.get(key, 0)
    if v is not None and not isinstance(v, str):
        fail("%s: %r is neither a string nor null: %r" % (where, key, v))
    return v


def check_machine(machine, want):
    """machine.cpu and machine.blas; returns machine.blas (None: no OpenBLAS)."""
    if not isinstance(machine, dict) or number(machine, "cores", "machine") < 1:
        fail("machine.cores missing or < 1")
    cpu = machine.get("cpu")
    if not isinstance(cpu, dict):
        fail("machine.cpu missing")
    text_or_null(cpu, "name", "machine.cpu")
    if cpu.get("vendor") not in ("Intel", "AMD", "other") or cpu.get("isa") not in ("sse", "avx", "avx2", "avx512"):
        fail("machine.cpu: vendor or isa unexpected: %r" % cpu)
    number(cpu, "family", "machine.cpu")
    number(cpu, "model", "machine.cpu")
    if want["skip_isa"] == cpu["isa"]:
        skip("this CPU's ISA is %s" % cpu["isa"])
    blas, why = machine.get("blas", 0), text_or_null(machine, "blas_why", "machine")
    if blas is None:
        if not why:
            fail("machine.blas is null without blas_why")
        if want["require_blas"]:
            skip("no floor: " + why)
        if want["core"] or want["set_by"]:
            fail("machine.blas is null (%s), expected a core %s set by %s" % (why, want["core"], want["set_by"]))
        return None
    if not isinstance(blas, dict) or blas.get("name") != "OpenBLAS":
        fail("machine.blas: neither null nor an OpenBLAS object: %r" % blas)
    for key in ("version", "config", "core", "coretype", "openblas_chose"):
        text_or_null(blas, key, "machine.blas")
    status, set_by = blas.get("core_status"), blas.get("coretype_set_by")
    if status not in ("none", "match", "older", "newer", "unknown"):
        fail("machine.blas.core_status: %r" % status)
    if blas.get("core_matches") is not (status == "match"):
        fail("machine.blas.core_matches %r with core_status %r" % (blas.get("core_matches"), status))
    if blas.get("core_isa") not in ("unknown", "sse", "avx", "avx2", "avx512"):
        fail("machine.blas.core_isa: %r" % blas.get("core_isa"))
    if set_by not in ("openblas", "user", "sk") or (set_by == "openblas") != (blas["coretype"] is None):
        fail("machine.blas: coretype %r set by %r" % (blas["coretype"], set_by))
    if (status in ("none", "newer")) != bool(why):
        fail("machine.blas: core_status %r with blas_why %r" % (status, why))
    if want["core"] and status != want["core"]:
        fail("machine.blas.core_status %r, expected %r" % (status, want["core"]))
    if want["set_by"] and set_by != want["set_by"]:
        fail("machine.blas.coretype_set_by %r, expected %r" % (set_by, want["set_by"]))
    return blas


def main(argv):
    path, scenario, threads, cmd = None, None, None, None
    want = {"require_blas": False, "core": None, "set_by": None, "skip_isa": None, "stderr": None}
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
        elif argv[i] == "--require-blas":
            want["require_blas"] = True
            i += 1
        elif argv[i] in ("--core", "--set-by", "--skip-isa", "--stderr"):
            want[argv[i][2:].replace("-", "_")] = argv[i + 1]
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
        if want["stderr"] is not None and want["stderr"] not in run.stderr:
            fail("stderr lacks %r" % want["stderr"])
        text = run.stdout
    else:
        text = open(path).read() if path else sys.stdin.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail("not JSON: %s\n%s" % (e, text))
    blas = check_machine(doc.get("machine"), want)
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
            if blas is None or blas["core_status"] in ("none", "newer"):
                fail(where + ": a floor without a core that runs here")
            if floor.get("core_matches") is not blas["core_matches"]:
                fail("%s: floor.core_matches %r, machine.blas.core_matches %r" % (where, floor.get("core_matches"),
                                                                                  blas["core_matches"]))
            if not floor["core_matches"]:
                if "jit_over_floor" in ratios or "eager_over_floor" in ratios:
                    fail(where + ": a ratio against a floor on a mismatched core")
            else:
                v = number(ratios, "jit_over_floor", where + " ratios")
                if not math.isclose(v, med["jit"] / p50, rel_tol=1e-3):
                    fail("%s: jit_over_floor %r is not %r / %r" % (where, v, med["jit"], p50))
        elif "jit_over_floor" in ratios or "eager_over_floor" in ratios:
            fail(where + ": a ratio against no floor")
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
