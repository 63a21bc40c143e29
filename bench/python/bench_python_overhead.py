"""What the Python front end costs: the seed model compiled for superkernel
and called from Python, against the same program run straight from C.

    .venv/bin/python bench/python/bench_python_overhead.py [--scenarios seed,decode]
        [--threads 1,2] [--iters 300] [--no-peers]

Per scenario and team size, in one process:
  C        the model's one library program run by a bare ctypes call of
           sk_program_run_by_index on bound buffers (what `sk bench` times
           in C, plus one foreign call);
  export   superkernel.export(model, args): the model called from Python
           without torch.compile (checks its inputs, allocates its output);
  torch.compile  torch.compile(model, backend=superkernel.get_backend(...)):
           the same programs behind Dynamo and AOTAutograd.
These three are timed one block after another, for 3 rounds (the median
of the round medians). The machine's noise is larger than the Python path,
so that path is also timed on its own: the same calls with the library's
run replaced by a no-op ("Python path": everything a call does but the run;
the least of 5 rounds' medians, since noise only adds to it), and, for
scale, torch.compile(backend="aot_eager") of a model that only returns its
first input, with the same inputs (what torch.compile costs per call before
any backend code runs). Medians in microseconds. Beside them, `sk bench` in
C (a separate process; --weights-as-inputs for the all-inputs form) and the
model in plain PyTorch, eager and Inductor (bench/peers/peer_torch.py).
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
import superkernel.dtypes  # noqa: E402
import superkernel.torch_ops  # noqa: E402,F401
from superkernel.scope import super_kernel  # noqa: E402
from common import time_each  # noqa: E402  bench/peers/common.py

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


# The inputs `sk bench` folds in as constants by default (tools/models: the
# weights); the others are the activations a call passes.
WEIGHT_POSITIONS = (2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 14)
ACTIVATION_POSITIONS = (0, 1, 10, 12)


class SeedModelWithWeights(torch.nn.Module):
    """The same model holding its weights as buffers, as a deployed model
    does: a call passes only the activations (gmm1_x, dsq activation scale,
    data1); torch.export and the backend fold the weights in as constants."""

    def __init__(self, all_inputs):
        super().__init__()
        self.inner = SeedModel()
        for k in WEIGHT_POSITIONS:
            self.register_buffer(f"w{k}", all_inputs[k].clone())

    def forward(self, x0, x1, acts, data1):
        given = dict(zip(ACTIVATION_POSITIONS, (x0, x1, acts, data1)))
        return self.inner(*[given[k] if k in given else getattr(self, f"w{k}") for k in range(15)])


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


def c_median_us(scenario, threads, iters, flags):
    sk = os.path.join(ROOT, "build", "bin", "sk")
    out = subprocess.run(
        [sk, "bench", scenario, "--threads", str(threads), "--iters", str(iters), "--json", "--no-floor", *flags],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["results"][0]["modes"]["jit"]["median_us"]


def plain_torch_medians(T, small, threads, iters, rng):
    """The peers' plain-PyTorch seed model, eager and Inductor."""
    import peer_torch

    args = inputs_for(T, small, rng)
    torch._dynamo.reset()
    compiled = torch.compile(peer_torch.forward, dynamic=False, fullgraph=True)
    compiled(*args)
    med = block_medians({"eager": lambda: peer_torch.forward(*args), "inductor": lambda: compiled(*args)}, iters)
    return med["eager"], med["inductor"]


class FirstInput(torch.nn.Module):
    def forward(self, *xs):
        return xs[0]


def block_medians(runners, iters, rounds=3, warmup=20):
    """{name: median µs}: the runners timed one block after another
    (bench/peers' time_each), for rounds rounds; the median of each
    runner's round medians."""
    medians = {name: [] for name in runners}
    for _ in range(rounds):
        for name, summary in time_each(runners, iters, warmup).items():
            medians[name].append(summary["median_us"])
    return {name: statistics.median(v) for name, v in medians.items()}


def best_median_us(call, iters, rounds=5):
    """The least of rounds medians: for the few microseconds of a Python
    path, which this machine's noise (other guests, frequency) only adds to."""
    return min(time_each({"x": call}, iters, 20)["x"]["median_us"] for _ in range(rounds))


def bare_c_runner(exported, args):
    """A bare foreign call of the exported model's one program on buffers
    bound once (exported is used for nothing else: its buffer arrays keep
    pointing at args and at outputs kept alive here)."""
    (program,) = exported.programs
    exported(*args)  # binds the inputs (args stay alive) in declaration order
    outs = [torch.empty(o.shape, dtype=superkernel.dtypes.to_torch(o.dtype)) for o in program.outputs]
    program._out_rows[: len(outs), 1] = [o.data_ptr() for o in outs]
    lib, handle, team = program._lib, program.handle, program.team.handle
    ins, outb = program._in_bufs, program._out_bufs
    n_in, n_out = len(program.inputs), len(program.outputs)

    def run():
        outs  # alive as long as the runner
        return lib.sk_program_run_by_index(handle, team, ins, n_in, outb, n_out)

    return run


class _NoRunLib:
    """The library with sk_program_run_by_index replaced by a no-op."""

    def __init__(self, lib):
        self._real = lib

    def __getattr__(self, name):
        if name == "sk_program_run_by_index":
            return lambda *a: 0
        return getattr(self._real, name)


def python_only_us(call, programs, iters):
    """call's median with every program's run replaced by a no-op: the
    time the Python path itself takes (the foreign call of the run aside)."""
    saved = [p._lib for p in programs]
    for p in programs:
        p._lib = _NoRunLib(p._lib)
    try:
        return best_median_us(call, iters)
    finally:
        for p, lib in zip(programs, saved):
            p._lib = lib


def measure(model, args, threads, iters):
    """The medians of one model form (see the module docstring)."""
    config = superkernel.CompilerConfig(executor="jit", num_threads=threads)
    exported = superkernel.export(model, args, compiler_config=config)
    backend = superkernel.get_backend(config)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
    if not torch.equal(compiled(*args), exported(*args)):
        raise SystemExit("bench: torch.compile and export outputs differ")
    bare = bare_c_runner(superkernel.export(model, args, compiler_config=config), args)
    med = block_medians({"C": bare, "export": lambda: exported(*args), "compile": lambda: compiled(*args)}, iters)
    backend_programs = [s.program for g in backend.graphs() for s in g.all_segments()]
    med["export_py"] = python_only_us(lambda: exported(*args), exported.programs, iters * 10)
    med["compile_py"] = python_only_us(lambda: compiled(*args), backend_programs, iters * 10)
    floor = torch.compile(FirstInput(), backend="aot_eager", fullgraph=True, dynamic=False)
    floor(*args)
    med["dynamo_py"] = best_median_us(lambda: floor(*args), iters * 10)
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="seed,decode")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--no-peers", action="store_true", help="skip plain PyTorch eager / Inductor")
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    for scenario in a.scenarios.split(","):
        T, small = SCENARIOS[scenario]
        for threads in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(threads)
            args = inputs_for(T, small, rng)
            activations = [args[k] for k in ACTIVATION_POSITIONS]
            for form, model, call_args, c_flags in (
                ("weights in the module", SeedModelWithWeights(args), activations, []),
                ("all 15 as inputs", SeedModel(), args, ["--weights-as-inputs"]),
            ):
                med = measure(model, call_args, threads, a.iters)
                sk_c = c_median_us(scenario, threads, a.iters, c_flags)
                rows.append((scenario, threads, form, len(call_args), med, sk_c))
            if not a.no_peers:
                eager, inductor = plain_torch_medians(T, small, threads, a.iters, rng)
                rows.append((scenario, threads, "plain PyTorch", eager, inductor))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"CPU: {cpu}; torch {torch.__version__}; superkernel {superkernel.version()}; medians in µs")
    print("| scenario | threads | model | inputs | C | export | torch.compile | export: Python path "
          "| torch.compile: Python path | torch.compile alone | sk bench (C) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    peers = []
    for row in rows:
        if row[2] == "plain PyTorch":
            peers.append(row)
            continue
        scenario, threads, form, n, m, sk_c = row
        print(f"| {scenario} | {threads} | {form} | {n} | {m['C']:.1f} | {m['export']:.1f} | {m['compile']:.1f} "
              f"| {m['export_py']:.1f} | {m['compile_py']:.1f} | {m['dynamo_py']:.1f} | {sk_c:.1f} |")
    if peers:
        print()
        print("| scenario | threads | torch eager | Inductor | superkernel export (weights in the module) "
              "| eager / superkernel | Inductor / superkernel |")
        print("|---|---|---|---|---|---|---|")
        for scenario, threads, _, eager, inductor in peers:
            ours = next(r[4]["export"] for r in rows if r[:3] == (scenario, threads, "weights in the module"))
            print(f"| {scenario} | {threads} | {eager:.1f} | {inductor:.1f} | {ours:.1f} | {eager / ours:.2f} "
                  f"| {inductor / ours:.2f} |")


if __name__ == "__main__":
    main()
