"""bf16 GEMM against PyTorch: torch.mm on bf16 tensors (oneDNN: AMX-BF16
or the CPU's bf16 dot products where it has them) and the library's
grouped_matmul with the weight a constant (packed once, as a model's are),
under each numerics contract asked for: medians of interleaved rounds and
the ratio torch / superkernel (> 1: the library is faster). torch's bits
are its own order of sums; the library's are those of its contract
(docs/ops.md, "Numerics": default, the exact one-chain contract; amx, the
sums of AMX-BF16's TDPBF16PS, at its rate where the CPU has it).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        .venv/bin/python bench/python/gemm_bf16_torch.py --threads 2 [--numerics default,amx] [--shapes 512x2048x768]
        [--op linear]
"""

import argparse
import statistics
import time

import torch

import superkernel
from superkernel import Graph, Team

SHAPES = [(512, 2048, 768), (64, 2048, 2048), (256, 2048, 2048), (1024, 2048, 2048), (256, 4096, 1024),
          (512, 7168, 2048), (2048, 2048, 2048)]
PAUSE_S = 0.05


def build(m, w, team, numerics, op="grouped_matmul"):
    g = Graph()
    x = g.add_input("x", "bf16", [m, w.shape[0]])
    if op == "linear":  # a model's projection: the weight [n, k], torch's layout
        (y,) = g.add_op("linear", {"x": x, "weight": g.add_constant("w", w.t().contiguous())})
    else:
        (y,) = g.add_op("grouped_matmul", {"x": x, "weight": g.add_constant("w", w, borrow=True)})
    g.mark_output(y, "y")
    return g.compile(team, numerics=numerics)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--numerics", default="default,amx", help="comma-separated contracts (default, amx)")
    ap.add_argument("--shapes", default=None, help="comma-separated MxKxN (default: the list in the file)")
    ap.add_argument("--op", default="grouped_matmul", choices=["grouped_matmul", "linear"],
                    help="the library's op: grouped_matmul (a [k, n] weight) or linear (a model's [n, k] projection)")
    ap.add_argument("--batch", type=int, default=5,
                    help="calls timed back to back per round after one untimed (warm: the AMX unit and oneDNN's "
                         "primitive cache; a first call after the pause pays their waking)")
    args = ap.parse_args()
    contracts = args.numerics.split(",")
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    torch.set_num_threads(args.threads)
    team = Team(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads; superkernel {superkernel.__version__}; "
          f"medians of {args.rounds} interleaved rounds of {args.batch} calls each after a warm one")
    head = f"{'m x k x n':>18} {'torch.mm ms':>12}"
    for c in contracts:
        head += f" {'sk ' + c + ' ms':>15} {'torch/sk':>9} {'GFLOP/s':>8}"
    print(head)
    for m, k, n in shapes:
        torch.manual_seed(0)
        x = torch.randn(m, k).to(torch.bfloat16)
        w = torch.randn(k, n).to(torch.bfloat16)
        progs = {c: build(m, w, team, c, args.op) for c in contracts}
        y_sk = torch.empty(m, n, dtype=torch.bfloat16)
        times = {"torch": [], **{c: [] for c in contracts}}
        for r in range(args.rounds + 1):  # round 0 warms up
            # A pause before each: torch's OpenMP workers spin for a while
            # after an op (libgomp's GOMP_SPINCOUNT), on the cores the
            # library's team would use, and the team's workers wait too.
            time.sleep(PAUSE_S)
            torch.mm(x, w)
            t0 = time.perf_counter()
            for _ in range(args.batch):
                torch.mm(x, w)
            t1 = time.perf_counter()
            if r:
                times["torch"].append((t1 - t0) / args.batch)
            for c in contracts:
                time.sleep(PAUSE_S)
                progs[c].run_into([x], [y_sk])
                t2 = time.perf_counter()
                for _ in range(args.batch):
                    progs[c].run_into([x], [y_sk])
                t3 = time.perf_counter()
                if r:
                    times[c].append((t3 - t2) / args.batch)
        ta = statistics.median(times["torch"])
        line = f"{m:>6}x{k:>5}x{n:>5} {ta * 1e3:>12.2f}"
        for c in contracts:
            ts = statistics.median(times[c])
            line += f" {ts * 1e3:>15.2f} {ta / ts:>9.2f} {2 * m * k * n / ts * 1e-9:>8.1f}"
        print(line)


if __name__ == "__main__":
    main()
