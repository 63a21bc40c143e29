#!/usr/bin/env python3
"""Peer benchmarks: the seed / decode / prefill scenarios of superkernel
(shared/spec/models.md) in PyTorch eager, torch.compile (Inductor, CPU) and
ONNX Runtime (CPU), on exactly sk's inputs, checked against sk's output and
timed next to `sk bench`'s eager and JIT medians.

  python3 bench/peers/run_peers.py [--scenarios seed,decode,prefill]
      [--threads 1,2] [--iters N] [--sk build/bin/sk] [--json FILE]

See bench/peers/README.md.
"""
import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import (compare_idx, compare_output, decode_packed_scale,  # noqa: E402
                    load_inputs, reference_routing, time_each)

SCENARIOS = ("seed", "decode", "prefill")
PEERS = ("torch", "compile", "ort")
PEER_TITLE = {"torch": "torch eager", "compile": "torch.compile", "ort": "ORT"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="seed,decode,prefill",
                    help="comma-separated subset of seed,decode,prefill")
    ap.add_argument("--threads", default="2",
                    help="comma-separated thread counts, e.g. 1,2 (default 2)")
    ap.add_argument("--iters", type=int, default=200,
                    help="timed runs per peer (default 200); prefill runs N/10, at "
                         "least 5 -- the same rule as `sk bench --iters N`")
    ap.add_argument("--warmup", type=int, default=10,
                    help="untimed runs per peer before timing (prefill: N/5, at least 2)")
    ap.add_argument("--sk", default=os.path.join(ROOT, "build", "bin", "sk"),
                    help="path of the sk CLI (default build/bin/sk)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated subset of torch,compile,ort")
    ap.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    ap.add_argument("--workdir", help="where sk saves the .npy inputs/outputs "
                                      "(default: a temporary directory)")
    ap.add_argument("--no-sk-bench", action="store_true",
                    help="skip `sk bench` (the sk columns print n/a)")
    ap.add_argument("--inductor-default-casts", action="store_true",
                    help="leave torch._inductor.config.emulate_precision_casts at its "
                         "default (False): Inductor then drops the fp16 rounding of "
                         "the first grouped_matmul's output inside fused code (see README)")
    a = ap.parse_args()
    a.scenarios = [s for s in a.scenarios.split(",") if s]
    for s in a.scenarios:
        if s not in SCENARIOS:
            ap.error("unknown scenario %r (choose from %s)" % (s, ",".join(SCENARIOS)))
    try:
        a.threads = [int(t) for t in a.threads.split(",") if t]
    except ValueError:
        ap.error("--threads takes a comma-separated list of integers")
    if not a.threads or min(a.threads) < 1:
        ap.error("--threads needs positive integers")
    a.peers = [p for p in a.peers.split(",") if p]
    for p in a.peers:
        if p not in PEERS:
            ap.error("unknown peer %r (choose from %s)" % (p, ",".join(PEERS)))
    if a.iters < 1:
        ap.error("--iters must be >= 1")
    return a


def iters_for(scenario, iters):
    """`sk bench`'s rule: prefill runs N/10, at least 5 (N when N < 5)."""
    if scenario != "prefill":
        return iters
    return iters if iters < 5 else max(5, iters // 10)


def warmup_for(scenario, warmup):
    return max(2, warmup // 5) if scenario == "prefill" else warmup


# ------------------------------------------------------------------ peers

def load_peer_modules(wanted, default_casts):
    """Import what is installed; returns ({peer: factory}, {peer: reason})."""
    factories, missing = {}, {}
    if "torch" in wanted or "compile" in wanted:
        try:
            import torch  # noqa: F401
            import peer_torch
        except ImportError as e:
            for p in ("torch", "compile"):
                if p in wanted:
                    missing[p] = "not installed (%s)" % e
        else:
            if "torch" in wanted:
                factories["torch"] = lambda: peer_torch.TorchPeer(compiled=False)
            if "compile" in wanted:
                import torch._inductor.config as inductor_config
                # Keep the fp16 storage rounding between ops that the model
                # specifies (see README): without this, Inductor fuses
                # `.half()` followed by `.float()` into a no-op.
                if hasattr(inductor_config, "emulate_precision_casts"):
                    inductor_config.emulate_precision_casts = not default_casts
                elif not default_casts:
                    print("warning: this torch has no inductor emulate_precision_casts; "
                          "torch.compile may skip the fp16 rounding between the GEMMs")
                logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
                factories["compile"] = lambda: peer_torch.TorchPeer(compiled=True)
    if "ort" in wanted:
        try:
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
            import peer_onnx
        except ImportError as e:
            missing["ort"] = "not installed (%s)" % e
        else:
            factories["ort"] = peer_onnx.OrtPeer
    return factories, missing


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "machine": platform.machine(), "cpus": os.cpu_count()}
    for mod in ("torch", "onnx", "onnxruntime"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    try:
        import torch
        v["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001
        pass
    return v


# ------------------------------------------------------------------ sk

def sk_save(sk, scenario, workdir):
    din = os.path.join(workdir, scenario, "inputs")
    dout = os.path.join(workdir, scenario, "outputs")
    cmd = [sk, "run", scenario, "--executor", "eager", "--iters", "2",
           "--save-inputs", din, "--save-outputs", dout]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("'%s' failed (%d):\n%s%s" % (" ".join(cmd), r.returncode,
                                                      r.stdout, r.stderr))
    return din, dout, " ".join(cmd)


def sk_bench(sk, scenarios, threads, iters):
    """Runs `sk bench --json` once for all scenarios and thread counts;
    returns ({(scenario, threads): {"eager": us, "jit": us, ...}}, its machine object, command)."""
    cmd = [sk, "bench"] + list(scenarios) + ["--threads", ",".join(map(str, threads)),
                                             "--iters", str(iters), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        print("warning: '%s' gave no JSON (exit %d): %s" % (" ".join(cmd), r.returncode,
                                                          r.stderr.strip()[:500]))
        return {}, None, " ".join(cmd)
    if r.stderr.strip():  # e.g. sk running again with the CPU's OPENBLAS_CORETYPE
        print(r.stderr.strip())
    if r.returncode != 0:
        print("warning: '%s' exited %d (its modes' outputs differ?); times kept"
              % (" ".join(cmd), r.returncode))
    res = {}
    for e in doc.get("results", []):
        modes = e.get("modes", {})
        res[(e["scenario"], int(e["threads"]))] = {
            m: modes[m] for m in ("eager", "interp", "jit") if m in modes}
        res[(e["scenario"], int(e["threads"]))]["bitwise_equal"] = e.get("bitwise_equal")
        if e.get("floor"):  # OpenBLAS's fp32 GEMM floor, when sk found OpenBLAS
            res[(e["scenario"], int(e["threads"]))]["floor"] = e["floor"]
    return res, doc.get("machine"), " ".join(cmd)


def describe_machine(machine):
    """sk bench's machine object in one line: the CPU and the floor's OpenBLAS and core."""
    cpu = machine.get("cpu") or {}
    line = "cpu %s (%s family %s model %s, %s)" % (cpu.get("name"), cpu.get("vendor"), cpu.get("family"),
                                                   cpu.get("model"), cpu.get("isa"))
    blas = machine.get("blas")
    if not blas:
        return line + "; floor none: %s" % machine.get("blas_why")
    who = {"openblas": "OpenBLAS's choice", "user": "OPENBLAS_CORETYPE=%s, set by the user" % blas.get("coretype"),
           "sk": "OPENBLAS_CORETYPE=%s, set by sk: OpenBLAS chose %s" % (blas.get("coretype"),
                                                                         blas.get("openblas_chose"))}
    return line + "; floor OpenBLAS %s, core %s (%s), %s%s" % (
        blas.get("version"), blas.get("core"), who.get(blas.get("coretype_set_by")), blas.get("core_isa"),
        "" if blas.get("core_matches") else ": MISMATCHED CORE, no jit/floor")


# ------------------------------------------------------------------ main

def fmt_us(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.1f" % v


def fmt_ratio(a, b):
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or b <= 0:
        return "-"
    return "%.2fx" % (a / b)


def main():
    args = parse_args()
    t_start = time.time()
    if not os.access(args.sk, os.X_OK):
        raise SystemExit("sk CLI not found at %s (build it: make -C %s build)" % (args.sk, ROOT))
    factories, missing = load_peer_modules(args.peers, args.inductor_default_casts)
    vers = versions()
    print("peers: " + ", ".join(
        "%s %s" % (PEER_TITLE[p], "ok" if p in factories else missing.get(p, "skipped"))
        for p in PEERS if p in args.peers))
    print("versions: " + ", ".join("%s %s" % (k, vers[k]) for k in
                                   ("python", "numpy", "torch", "onnx", "onnxruntime")))
    load0 = os.getloadavg()
    print("cpus %s, load average at start %.2f %.2f %.2f (other load skews the 2-thread "
          "numbers most)" % ((vers["cpus"],) + load0))

    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="sk_peers_")
        workdir = tmp.name

    sk_times, sk_machine, sk_cmd = {}, None, None
    if not args.no_sk_bench:
        print("running: %s" % " ".join([os.path.relpath(args.sk, ROOT) if args.sk.startswith(ROOT)
                                        else args.sk, "bench"] + args.scenarios +
                                       ["--threads", ",".join(map(str, args.threads)),
                                        "--iters", str(args.iters), "--json"]))
        sk_times, sk_machine, sk_cmd = sk_bench(args.sk, args.scenarios, args.threads, args.iters)
        if sk_machine:
            print(describe_machine(sk_machine))

    rows, accuracy, report = [], [], {"versions": vers, "args": vars(args).copy(),
                                      "sk_bench_command": sk_cmd, "sk_machine": sk_machine, "results": []}
    for scenario in args.scenarios:
        din, dout, save_cmd = sk_save(args.sk, scenario, workdir)
        inputs = load_inputs(din)
        ref = np.load(os.path.join(dout, "output.npy"))
        scale = float(decode_packed_scale(inputs["scale"])[0])
        ref_idx, gmargin, emargin = reference_routing(inputs)
        print("\n== %s: %s; output %s %s; packed scale -> %g"
              % (scenario, save_cmd.replace(args.sk, "sk"), list(ref.shape), ref.dtype, scale))
        it, wu = iters_for(scenario, args.iters), warmup_for(scenario, args.warmup)
        for threads in args.threads:
            runners, entry = {}, {"scenario": scenario, "threads": threads, "peers": {}}
            for p in args.peers:
                if p not in factories:
                    entry["peers"][p] = {"status": missing.get(p, "skipped")}
                    continue
                peer = factories[p]()
                t0 = time.time()
                try:
                    got = peer.build(inputs, threads)
                except Exception as e:  # noqa: BLE001 -- a broken peer must not stop the rest
                    msg = "failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
                    print("  %-13s t=%d %s" % (PEER_TITLE[p], threads, msg))
                    entry["peers"][p] = {"status": msg}
                    continue
                build_s = time.time() - t0
                acc = compare_output("output", got["out"], ref, got["q"], got["qpos"],
                                     inputs["data2"], scale)
                idx = compare_idx(got["idx"], ref_idx, gmargin, emargin)
                print("  %-13s t=%d build %5.1fs | output %s: %s; max|diff| %g, mismatches "
                      "%d/%d (%.3g%%); q near x.5: %s | idx vs fp64 ref: %d/%d rows differ"
                      % (PEER_TITLE[p], threads, build_s, acc["verdict"], acc["reason"],
                         acc.get("max_abs_diff", float("nan")), acc.get("mismatches", -1),
                         ref.size, 100.0 * acc.get("mismatch_fraction", float("nan")),
                         "%d/%d" % (acc["q_near_boundary"], acc["q_elements"])
                         if "q_near_boundary" in acc else "n/a",
                         idx["rows_differing"], ref_idx.shape[0]))
                if acc["verdict"] != "pass" and "unexplained" in acc:
                    for u in acc["unexplained"][:3]:
                        print("      unexplained row %d (boundary candidates %d): first "
                              "output%s sk %g peer %g"
                              % (u["row"], u["boundary_candidates"], u["first"]["index"],
                                 u["first"]["sk"], u["first"]["peer"]))
                if idx["rows_differing"]:
                    f = idx["first"]
                    print("      idx row %d: peer %s ref %s (group margin %.3g, expert "
                          "margin %.3g)" % (f["row"], f["peer"], f["ref"],
                                            f["group_margin"], f["expert_margin"]))
                entry["peers"][p] = {"status": "ok", "build_s": build_s,
                                     "output_check": acc, "idx_check": idx}
                accuracy.append((scenario, threads, p, acc["verdict"]))
                runners[p] = peer.runner()
            if runners:
                timed = time_each(runners, it, wu)
                for p, s in timed.items():
                    entry["peers"][p]["time"] = s
            entry["sk"] = sk_times.get((scenario, threads))
            rows.append(entry)
            report["results"].append(entry)

    # ---- table
    def peer_med(entry, p):
        d = entry["peers"].get(p)
        if d is None:
            return "skipped"
        if "time" in d:
            return d["time"]["median_us"]
        return "not installed" if d["status"].startswith("not installed") else "failed"

    hdr = ["scenario", "threads", "GEMM floor us", "sk eager us", "sk interp us", "sk jit us",
           "torch eager us", "torch.compile us", "ORT us", "jit/floor", "jit/eager", "torch/jit",
           "compile/jit", "ORT/jit"]
    table = []
    for e in rows:
        def sk_med(m):
            return e["sk"][m]["median_us"] if e["sk"] and m in e["sk"] else None
        ske, ski, skj, flo = sk_med("eager"), sk_med("interp"), sk_med("jit"), sk_med("floor")
        pm = [peer_med(e, p) for p in PEERS]
        # Never a ratio against a floor on kernels that are not the CPU's.
        floor_ok = bool(e["sk"]) and (e["sk"].get("floor") or {}).get("core_matches", True)
        table.append([e["scenario"], str(e["threads"]), fmt_us(flo), fmt_us(ske), fmt_us(ski), fmt_us(skj)]
                     + [fmt_us(v) for v in pm]
                     + [fmt_ratio(skj, flo) if floor_ok else "mismatched core", fmt_ratio(skj, ske)]
                     + [fmt_ratio(v, skj) for v in pm])
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h)
              for i, h in enumerate(hdr)]
    print("\nmedian time of one whole-model forward, microseconds (GEMM floor: OpenBLAS "
          "cblas_sgemm fp32 on the model's products alone, from sk bench; jit/floor and "
          "jit/eager: < 1 is faster; peer/jit: > 1, sk is faster)")
    print("  ".join(h.rjust(w) for h, w in zip(hdr, widths)))
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print("\np10 / p90 (us):")
    for e in rows:
        parts = []
        if e["sk"]:
            for m in ("eager", "jit"):
                if m in e["sk"]:
                    parts.append("sk %s %.1f/%.1f" % (m, e["sk"][m]["p10_us"], e["sk"][m]["p90_us"]))
        for p in PEERS:
            d = e["peers"].get(p, {})
            if "time" in d:
                parts.append("%s %.1f/%.1f" % (PEER_TITLE[p], d["time"]["p10_us"], d["time"]["p90_us"]))
        print("  %s t=%d: %s" % (e["scenario"], e["threads"], "; ".join(parts)))
    fails = [a for a in accuracy if a[3] != "pass"]
    print("\naccuracy: %d peer run(s) checked against sk's output.npy, %d pass, %d FAIL%s"
          % (len(accuracy), len(accuracy) - len(fails), len(fails),
             "" if not fails else ": " + ", ".join("%s t=%d %s" % (s, t, PEER_TITLE[p])
                                                   for s, t, p, _ in fails)))
    load1 = os.getloadavg()
    print("total %.1f s; load average at end %.2f %.2f %.2f" % ((time.time() - t_start,) + load1))
    report["loadavg_start"], report["loadavg_end"] = load0, load1

    if args.json:
        report["total_s"] = time.time() - t_start
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
        print("wrote %s" % args.json)
    if tmp is not None:
        tmp.cleanup()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
