"""Attention against PyTorch (issue 42): the library's `attention` op, in a
compiled program (superkernel.Graph -> Program.run_into: one launch, no
per-call graph work, the least overhead the Python package has; the torch
op torch.ops.superkernel.attention adds a dispatcher call and an output
allocation per run), against torch.nn.functional.scaled_dot_product_attention
on the same bf16 KV cache, at Qwen3-30B-A3B's heads (32 q / 4 kv, D = 128):

    decode   T = 1 query at the last position of a `ctx`-row cache
    prefill  T tokens from an empty cache (causal), T = S

Torch sees the cache as [1, Hkv, S, D] views (no copy) with enable_gqa=True
(its CPU flash-attention kernel), is_causal for prefill only (its mask is
top-left aligned: at T = 1 the one query attends every row, as ours at the
last position does). The decode floor is the cache's bytes over the read
bandwidth of bench/e2e/bandwidth.py at the same thread count. Medians of
interleaved rounds; torch/sk > 1: the library is faster. The two do not
give the same bits (torch's order of sums is its own).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        /work/main/.venv/bin/python bench/python/attention_torch.py --threads 2
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import superkernel
from superkernel import Graph, Team

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from bandwidth import read_bandwidth_gbs  # noqa: E402

HQ, HKV, D = 32, 4, 128
PAUSE_S = 0.02  # torch's OpenMP workers spin a while after an op, on the team's cores


def build(t, s, team):
    g = Graph()
    q = g.add_input("q", "bf16", [t, HQ, D])
    k = g.add_input("k_cache", "bf16", [s, HKV, D])
    v = g.add_input("v_cache", "bf16", [s, HKV, D])
    pos = g.add_input("positions", "int64", [t])
    (o,) = g.add_op("attention", {"q": q, "k_cache": k, "v_cache": v, "positions": pos})
    g.mark_output(o, "o")
    return g.compile(team)


def case(name, t, s, team, rounds):
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(t, HQ, D, generator=gen).to(torch.bfloat16)
    k = torch.randn(s, HKV, D, generator=gen).to(torch.bfloat16)
    v = torch.randn(s, HKV, D, generator=gen).to(torch.bfloat16)
    pos = torch.arange(s - t, s, dtype=torch.int64)
    prog = build(t, s, team)
    o_sk = torch.empty(t, HQ, D, dtype=torch.bfloat16)
    qt, kt, vt = q.permute(1, 0, 2).unsqueeze(0), k.permute(1, 0, 2).unsqueeze(0), v.permute(1, 0, 2).unsqueeze(0)
    causal = t > 1

    def run_torch():
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=True)

    times = {"torch": [], "sk": []}
    for r in range(rounds + 1):  # round 0 warms up
        time.sleep(PAUSE_S)
        t0 = time.perf_counter()
        o_t = run_torch()
        t1 = time.perf_counter()
        time.sleep(PAUSE_S)
        t2 = time.perf_counter()
        prog.run_into([q, k, v, pos], [o_sk])
        t3 = time.perf_counter()
        if r:
            times["torch"].append(t1 - t0)
            times["sk"].append(t3 - t2)
    err = (o_t[0].permute(1, 0, 2).float() - o_sk.float()).abs().max().item()
    return statistics.median(times["torch"]), statistics.median(times["sk"]), err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=51)
    ap.add_argument("--cases", default="decode:4096,prefill:512,prefill:4096",
                    help="comma-separated decode:CTX / prefill:T")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    team = Team(args.threads)
    gbs = read_bandwidth_gbs(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads; superkernel {superkernel.__version__}; "
          f"bf16, Hq {HQ} / Hkv {HKV}, D {D}; medians of {args.rounds} interleaved rounds; "
          f"read bandwidth {gbs:.1f} GB/s (bench/e2e/bandwidth.py)")
    print(f"{'case':>14} {'torch ms':>9} {'sk ms':>8} {'torch/sk':>9} {'floor ms':>9} {'sk/floor':>9} {'max |diff|':>10}")
    for c in args.cases.split(","):
        kind, n = c.split(":")
        n = int(n)
        t, s = (1, n) if kind == "decode" else (n, n)
        rounds = args.rounds if kind == "decode" or n <= 512 else max(5, args.rounds // 5)
        tt, ts, err = case(c, t, s, team, rounds)
        floor = 2 * s * HKV * D * 2 / (gbs * 1e9)  # K and V rows read once
        fl = f"{floor * 1e3:>9.3f} {ts / floor:>9.2f}" if kind == "decode" else f"{'':>9} {'':>9}"
        print(f"{c:>14} {tt * 1e3:>9.3f} {ts * 1e3:>8.3f} {tt / ts:>9.2f} {fl} {err:>10.3g}")


if __name__ == "__main__":
    main()
