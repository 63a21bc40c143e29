"""bf16 GEMM against PyTorch: torch.mm on bf16 tensors (oneDNN, the CPU's
bf16 dot products where it has them) and the library's grouped_matmul with
the weight a constant (packed once, as a model's are), at the shapes of
issue 32's GEMM target: medians of interleaved rounds and the ratio
torch / superkernel (> 1: the library is faster). The two do not give the
same bits (torch's order of sums is its own); the library's are those of
its exact bf16 contract (docs/ops.md).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        .venv/bin/python bench/python/gemm_bf16_torch.py --threads 2
"""

import argparse
import statistics
import time

import torch

import superkernel
from superkernel import Graph, Team

SHAPES = [(64, 2048, 2048), (256, 2048, 2048), (1024, 2048, 2048), (256, 4096, 1024), (512, 7168, 2048),
          (2048, 2048, 2048)]
PAUSE_S = 0.05


def build(m, w, team):
    g = Graph()
    x = g.add_input("x", "bf16", [m, w.shape[0]])
    (y,) = g.add_op("grouped_matmul", {"x": x, "weight": g.add_constant("w", w, borrow=True)})
    g.mark_output(y, "y")
    return g.compile(team)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    team = Team(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads; superkernel {superkernel.__version__}; "
          f"medians of {args.rounds} interleaved rounds")
    print(f"{'m x k x n':>18} {'torch.mm ms':>12} {'superkernel ms':>15} {'torch/sk':>9} {'sk GFLOP/s':>11}")
    for m, k, n in SHAPES:
        torch.manual_seed(0)
        x = torch.randn(m, k).to(torch.bfloat16)
        w = torch.randn(k, n).to(torch.bfloat16)
        prog = build(m, w, team)
        y_sk = torch.empty(m, n, dtype=torch.bfloat16)
        times = {"torch": [], "sk": []}
        for r in range(args.rounds + 1):  # round 0 warms up
            # A pause before each: torch's OpenMP workers spin for a while
            # after an op (libgomp's GOMP_SPINCOUNT), on the cores the
            # library's team would use, and the team's workers wait too.
            time.sleep(PAUSE_S)
            t0 = time.perf_counter()
            torch.mm(x, w)
            t1 = time.perf_counter()
            time.sleep(PAUSE_S)
            t2 = time.perf_counter()
            prog.run_into([x], [y_sk])
            t3 = time.perf_counter()
            if r:
                times["torch"].append(t1 - t0)
                times["sk"].append(t3 - t2)
        ta, ts = statistics.median(times["torch"]), statistics.median(times["sk"])
        print(f"{m:>6}x{k:>5}x{n:>5} {ta * 1e3:>12.2f} {ts * 1e3:>15.2f} {ta / ts:>9.2f} "
              f"{2 * m * k * n / ts * 1e-9:>11.1f}")


if __name__ == "__main__":
    main()
