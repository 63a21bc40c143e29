"""example02_super_kernel_profiling in Python: six scopes, profiled with super
kernels off and on (examples/example02_super_kernel_profiling/main.c's model).

    x - sk1: grouped_matmul -> moe_gating_topk -> cast   (sk1, sk2, sk4: identical)
        sk2: grouped_matmul -> moe_gating_topk -> cast
        sk3: grouped_matmul (+ bias) -> moe_gating_topk -> cast   (an extra bias: its own kernel)
        sk4: grouped_matmul -> moe_gating_topk -> cast
        sk5: grouped_matmul -> moe_gating_topk -> cast   (early-start=0: its own kernel)
        sk6: dequant_swiglu_quant                      (a different op)

The model is compiled twice with torch.compile: super kernels off (the
backend's executor "eager": every op its own launch) and on (executor
"auto": each scope one JIT-compiled launch). The JIT's log lines say which
scopes compile and which reuse an identical scope's kernel. Each run writes
op_statistic.csv (and per program trace.json) under prof_result/no_sk_model/
and prof_result/sk_model/; the example prints both tables, their totals and
the gain in percent (the seed's figure for its hardware: 5.61%).

    python examples/python/example02_super_kernel_profiling.py [--out prof_result] [--iters 50]
"""

import argparse
import os

import torch

import superkernel
import superkernel.torch_ops  # noqa: F401  torch.ops.superkernel.*
from superkernel.scope import super_kernel

sk = torch.ops.superkernel
T, E, H = 64, 128, 64


class SixScopes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(2)
        self.w = torch.nn.Parameter(((torch.rand(E, E, generator=g) - 0.5) * 0.25).half(), requires_grad=False)
        self.b = torch.nn.Parameter(((torch.rand(E, generator=g) - 0.5) * 0.25).half(), requires_grad=False)

    def routing(self, name, x, bias=None, options=""):
        with super_kernel(name, options):
            scores = sk.grouped_matmul([x], [self.w], None if bias is None else [bias])[0]
            _, _, out = sk.moe_gating_topk(
                scores, k=8, k_group=4, group_count=8, group_select_mode=1, norm_type=1, out_flag=1
            )
            return out.to(torch.float16)

    def forward(self, x, dsq_x, dsq_scale):
        h = self.routing("sk1", x)
        h = self.routing("sk2", h)
        h = self.routing("sk3", h, bias=self.b)
        h = self.routing("sk4", h)
        h = self.routing("sk5", h, options="early-start=0")
        with super_kernel("sk6"):
            quantized, _ = sk.dequant_swiglu_quant(dsq_x, weight_scale=dsq_scale, quant_mode=1)
        return h, quantized


def make_inputs():
    g = torch.Generator().manual_seed(3)
    x = ((torch.rand(T, E, generator=g) - 0.5) * 0.25).half()
    dsq_x = (torch.rand(T, 2 * H, generator=g) * 2000).to(torch.int32) - 1000
    dsq_scale = 0.001 + 0.01 * torch.rand(2 * H, generator=g)
    return x, dsq_x, dsq_scale


def profile(model, inputs, executor, directory, iters):
    """Compiles model with a profiling backend, runs it iters times after a
    warm-up and writes the profile; returns (outputs, merged csv path, the
    programs' op statistics rows)."""
    backend = superkernel.get_backend(superkernel.CompilerConfig(executor=executor, profiling_dir=directory))
    compiled = torch.compile(model, fullgraph=True, backend=backend, dynamic=False)
    superkernel.set_log_level("info" if executor != "eager" else "warn")  # the JIT's lines: compiled / reused
    outputs = compiled(*inputs)  # compiles; warm-up, not recorded
    superkernel.set_log_level("warn")
    backend.reset_profiles()
    for _ in range(iters):
        outputs = compiled(*inputs)
    path = backend.write_profiles()
    return outputs, path, [row for program in backend.programs() for row in program.op_statistics()]


def show(path, rows, iters):
    print(f"{path} ({iters} runs):")
    for row in rows:
        print(f"    {row.op_type:<22} {row.core_type:<8} {row.count:4d} launches {row.total_us:10.1f} us")
    return sum(row.total_us for row in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="prof_result", help="directory for no_sk_model/ and sk_model/")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args(argv)

    model, inputs = SixScopes(), make_inputs()
    with torch.no_grad():
        print("compiling the six scopes (super kernels off):")
        out_off, csv_off, rows_off = profile(model, inputs, "eager", os.path.join(args.out, "no_sk_model"), args.iters)
        print("compiling the six scopes (super kernels on):")
        out_on, csv_on, rows_on = profile(model, inputs, "auto", os.path.join(args.out, "sk_model"), args.iters)
        eager = model(*inputs)

    t_off = show(csv_off, rows_off, args.iters)
    t_on = show(csv_on, rows_on, args.iters)
    gain = (t_off - t_on) * 100.0 / t_off if t_off > 0 else 0.0
    print(f"total without super kernels: {t_off:.1f} us, with: {t_on:.1f} us, gain {gain:.2f}%")
    same = all(torch.equal(a, b) and torch.equal(a, c) for a, b, c in zip(out_off, out_on, eager))
    print(f"outputs {'bitwise equal' if same else 'DIFFER'} (super kernels off, on, and eager torch)")
    if not same or t_off <= 0 or t_on <= 0:
        return 1
    print("execute sample success")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
