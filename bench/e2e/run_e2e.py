"""The end-to-end benchmark: every engine on one checkpoint, 1 and 2
threads, and llama.cpp's llama-bench on GGUFs of the same checkpoint
(bench/e2e/README.md says how to make them).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
      .venv/bin/python bench/e2e/run_e2e.py CHECKPOINT [--threads 1,2] \\
        [--llama-bench PATH --gguf bf16=FILE --gguf q8_0=FILE] [--engines LIST]

Prints a markdown table: prefill and decode tokens/s (median [min, max]
of the repetitions), the share of the time in MoE blocks, the MoE time of
a decode step against its bandwidth floor (the bytes of the experts a
decode step reads — top-k routed experts and the shared ones per MoE
layer, and the router — over the read bandwidth of bandwidth.py measured
in this run), ratios to eager and Inductor, the first decoded tokens and
the max relative logit difference against eager in fp32.
"""

import argparse
import json
import os
import subprocess
import sys

import bandwidth

HERE = os.path.dirname(os.path.abspath(__file__))


def run_engine(checkpoint, engine, threads, a):
    cmd = [sys.executable, os.path.join(HERE, "engines.py"), checkpoint, "--engine", engine, "--threads", str(threads),
           "--prompt", str(a.prompt), "--gen", str(a.gen), "--reps", str(a.reps)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"engine": engine, "threads": threads, "error": tail[:200]}
    return json.loads(lines[-1])


def run_llama(path, gguf, kind, threads, a):
    cmd = [path, "-m", gguf, "-p", str(a.prompt), "-n", str(a.gen), "-t", str(threads), "-r", str(a.reps),
           "-o", "json"] + a.llama_args.split()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"engine": f"llama.cpp {kind}", "threads": threads, "error": p.stderr.strip()[-200:]}
    out = {"engine": f"llama.cpp {kind}", "threads": threads}
    for test in json.loads(p.stdout):
        samples = test.get("samples_ts") or [test["avg_ts"]]
        key = "pp" if test.get("n_prompt", 0) > 0 else "tg"
        out[key] = {"median": sorted(samples)[len(samples) // 2], "min": min(samples), "max": max(samples)}
    return out


def decode_bytes(checkpoint):
    """Bytes of expert, shared-expert and router weights one decode token
    reads over all MoE layers (bf16 weights; w8a8 reads about half)."""
    with open(os.path.join(checkpoint, "config.json")) as f:
        c = json.load(f)
    h, inter = c["hidden_size"], c["moe_intermediate_size"]
    experts = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    dense = c.get("first_k_dense_replace", 0)
    layers = c["num_hidden_layers"] - dense
    per_layer = c["num_experts_per_tok"] * 3 * h * inter * 2 + c.get("n_shared_experts", 0) * 3 * h * inter * 2
    per_layer += experts * h * 2
    return layers * per_layer


def fmt(s):
    return f"{s['median']:.1f} [{s['min']:.1f}, {s['max']:.1f}]" if s else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--engines",
                    default="fp32,eager,inductor,sk-experts,sk-optimize,sk-optimize-w8a8,sk-whole,sk-whole-w8a8")
    ap.add_argument("--llama-bench")
    ap.add_argument("--gguf", action="append", default=[], help="KIND=FILE (bf16=..., q8_0=...)")
    ap.add_argument("--llama-args", default="", help="more llama-bench flags: '--repack 0' on Intel, where "
                    "llama-bench 0c1e570 crashes (SIGSEGV) repacking Q8_0 weights")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="also write every result here")
    a = ap.parse_args()
    engines = a.engines.split(",")
    floor_bytes = decode_bytes(a.checkpoint)
    results, ref = [], None
    for threads in (int(t) for t in a.threads.split(",")):
        bw = bandwidth.read_bandwidth_gbs(threads)
        for engine in engines:
            r = run_engine(a.checkpoint, engine, threads, a)
            r["bandwidth_gbs"] = bw
            results.append(r)
            print(f"# {engine} at {threads} threads: {r.get('error') or 'done'}", file=sys.stderr, flush=True)
        for kind, path in (g.split("=", 1) for g in a.gguf):
            results.append(run_llama(a.llama_bench, path, kind, threads, a))
        bw_after = bandwidth.read_bandwidth_gbs(threads)
        for r in results:
            if r["threads"] == threads:
                r["bandwidth_gbs"] = max(bw, bw_after)
    # The logits' reference: eager fp32, else (where fp32 does not fit in memory) eager bf16.
    ref = next((r for r in results if r["engine"] in ("fp32", "eager") and "logits" in r and r["engine"] == "fp32"),
               None) or next((r for r in results if r["engine"] == "eager" and "logits" in r), None)
    print(f"decode floor: {floor_bytes / 1e6:.1f} MB of expert weights per token (bf16)")
    print("| engine | threads | prefill tok/s | decode tok/s | prefill / eager | decode / eager | decode / Inductor "
          "| MoE share prefill / decode | MoE ms per decode step / floor | first tokens "
          f"| max rel logit diff vs {ref['engine'] if ref else '-'} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['engine']} | {r['threads']} | failed: {r['error']} |||||||||")
            continue
        same = {x["engine"]: x for x in results if x["threads"] == r["threads"] and "pp" in x}
        ratio = lambda key, base: f"{r[key]['median'] / same[base][key]['median']:.2f}" if base in same else "-"
        share = (f"{r['moe_share_prefill']:.0%} / {r['moe_share_decode']:.0%}" if "moe_share_decode" in r else "-")
        floor = "-"
        if r.get("moe_decode_ms_per_step"):  # not for sk-whole: its blocks are inside the library
            w8 = r["engine"].endswith("w8a8")
            floor_ms = floor_bytes * (0.5 if w8 else 1.0) / (r["bandwidth_gbs"] * 1e9) * 1e3
            floor = f"{r['moe_decode_ms_per_step']:.2f} / {floor_ms:.2f} = {r['moe_decode_ms_per_step'] / floor_ms:.2f}"
        diff = "-"
        if ref is not None and "logits" in r:
            d = max(abs(x - y) for x, y in zip(r["logits"], ref["logits"]))
            diff = f"{d / max(abs(y) for y in ref['logits']):.2e}"
        print(f"| {r['engine']} | {r['threads']} | {fmt(r.get('pp'))} | {fmt(r.get('tg'))} | {ratio('pp', 'eager')} "
              f"| {ratio('tg', 'eager')} | {ratio('tg', 'inductor')} | {share} | {floor} "
              f"| {' '.join(map(str, r.get('tokens', [])[:4])) or '-'} | {diff} |")
    print("read bandwidth: " + ", ".join(sorted({f"{r['threads']} threads {r.get('bandwidth_gbs', 0):.1f} GB/s"
                                                for r in results})))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "logits"} for r in results], f, indent=1)


if __name__ == "__main__":
    main()
