"""What the Python front end costs: the seed model compiled by
torch.compile(backend="superkernel") and called from Python, against the same
model run by `sk bench` in C at the same thread count; beside them, the model
in plain PyTorch, eager and torch.compile (Inductor).

    .venv/bin/python bench/python/bench_python_overhead.py [--scenarios seed,decode]
        [--threads 1,2] [--iters 300] [--rounds 3]

Every tensor of the model is a forward input (as in the seed script), so the
C side runs `sk bench --weights-as-inputs`. The Python and C timings come
from different processes, so they alternate for --rounds rounds and the
median of each round's medians is reported; "overhead" is Python minus C.
Prints one table; exit status 0.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))

import superkernel  # noqa: E402
import superkernel.torch_ops  # noqa: E402,F401
from superkernel.scope import super_kernel  # noqa: E402

ops = torch.ops.superkernel
torch.set_grad_enabled(False)

# models.md: T rows in the large group; the small group keeps 64 (8 for decode).
SCENARIOS = {"seed": (256, 64), "decode": (16, 8)}


class SeedModel(torch.nn.Module):
    """example01 scaled by T, written with the superkernel torch ops."""

    def forward(self, x0, x1, w0, w1, b0, b1, v0, v1, moe_bias, ws, acts, qs, data1, data2, scale):
        with super_kernel("sk1"):
            g1 = ops.grouped_matmul([x0, x1], [w0, w1], [b0, b1])
            g2 = ops.grouped_matmul(g1, [v0, v1])
            _, idx, _ = ops.moe_gating_topk(
                g2[1], moe_bias, k=8, k_group=4, group_count=8, group_select_mode=1, norm_type=1
            )
        r1 = torch.reshape(idx, (-1, 128))
        c = torch.cat((torch.square(r1), data1), dim=0)
        r2 = torch.reshape(c, (-1, 128))
        with super_kernel("sk2"):
            q, _ = ops.dequant_swiglu_quant(r2, ws, acts, None, qs, quant_mode=1)
            return ops.quant_matmul(q, data2, scale, output_dtype=torch.float16)


def inputs_for(T, small, rng):
    def u(shape, lo, hi, dtype):
        return torch.from_numpy(rng.uniform(lo, hi, shape).astype(np.float32)).to(dtype)

    h = torch.float16
    rows = T * 8 // 128 + 32
    scale = superkernel.trans_quant_param(np.array([0.0001], np.float32))
    return [
        u((small, 128), -1, 1, h), u((T, 180), -1, 1, h),
        u((128, 64), -0.088, 0.088, h), u((180, 320), -0.075, 0.075, h),
        u((64,), -0.1, 0.1, h), u((320,), -0.1, 0.1, h),
        u((64, 56), -0.125, 0.125, h), u((320, 256), -0.056, 0.056, h),
        u((256,), -0.1, 0.1, h),
        u((128,), 1e-5, 1e-4, torch.float32), u((rows, 1), 0.5, 1.5, torch.float32),
        u((1, 64), 0.5, 1.5, torch.float32),
        torch.from_numpy(rng.integers(0, 65536, (32, 128), dtype=np.int32)),
        torch.from_numpy(rng.integers(-128, 128, (6, 64, 64), dtype=np.int8)),
        torch.from_numpy(scale),
    ]


def median_call_us(fn, iters, warmup=20):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000.0


def c_median_us(scenario, threads, iters):
    sk = os.path.join(ROOT, "build", "bin", "sk")
    out = subprocess.run(
        [sk, "bench", scenario, "--threads", str(threads), "--iters", str(iters), "--json", "--no-floor",
         "--weights-as-inputs"],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["results"][0]["modes"]["jit"]["median_us"]


def plain_torch_medians(T, small, threads, iters, rng):
    """The peers' plain-PyTorch seed model, eager and Inductor."""
    import peer_torch

    args = inputs_for(T, small, rng)
    eager = median_call_us(lambda: peer_torch.forward(*args), iters)
    torch._dynamo.reset()
    compiled = torch.compile(peer_torch.forward, dynamic=False, fullgraph=True)
    compiled(*args)
    return eager, median_call_us(lambda: compiled(*args), iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="seed,decode")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="skip plain PyTorch eager / Inductor")
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    for scenario in a.scenarios.split(","):
        T, small = SCENARIOS[scenario]
        for threads in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(threads)
            torch._dynamo.reset()
            config = superkernel.CompilerConfig(executor="jit", num_threads=threads)
            model = torch.compile(SeedModel(), backend=superkernel.get_backend(config), fullgraph=True,
                                  dynamic=False)
            args = inputs_for(T, small, rng)
            model(*args)
            py, c = [], []
            for _ in range(a.rounds):
                py.append(median_call_us(lambda: model(*args), a.iters))
                c.append(c_median_us(scenario, threads, a.iters))
            py_us, c_us = statistics.median(py), statistics.median(c)
            peers = (None, None) if a.no_peers else plain_torch_medians(T, small, threads, a.iters, rng)
            rows.append((scenario, threads, c_us, py_us, *peers))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"CPU: {cpu}; torch {torch.__version__}; superkernel {superkernel.version()}")
    print("| scenario | threads | sk bench (C) µs | torch.compile(backend=superkernel) µs | Python overhead µs "
          "| torch eager µs | Inductor µs | eager/sk-py | Inductor/sk-py |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scenario, threads, c_us, py_us, eager, inductor in rows:
        ratio = (lambda x: "-" if x is None else f"{x / py_us:.2f}")
        fmt = (lambda x: "-" if x is None else f"{x:.1f}")
        print(f"| {scenario} | {threads} | {c_us:.1f} | {py_us:.1f} | {py_us - c_us:+.1f} | {fmt(eager)} "
              f"| {fmt(inductor)} | {ratio(eager)} | {ratio(inductor)} |")


if __name__ == "__main__":
    main()
