"""example01_super_kernel_base in Python: the seed model through torch.compile.

The seed's superkernel_scope.py (shared/spec/models.md), written with
torch.ops.superkernel.* and the backend "superkernel":

    sk1:  grouped_matmul -> grouped_matmul -> moe_gating_topk      (one super kernel)
          reshape -> square -> concat -> reshape                  (torch ops, outside the scopes)
    sk2:  dequant_swiglu_quant -> quant_matmul                     (one super kernel)

Inputs come from np.random.uniform with the seed's shapes (value ranges as
examples/example01_super_kernel_base/main.c). The model runs eagerly (every
op its own launch through the library) and compiled (each scope one
launch); every output must be bitwise equal.

    python examples/python/example01_super_kernel_base.py [--executor auto|jit|interp|eager]
"""

import argparse

import numpy as np
import torch

import superkernel
import superkernel.torch_ops  # noqa: F401  torch.ops.superkernel.*
from superkernel.scope import super_kernel

sk = torch.ops.superkernel


def uniform(rng, lo, hi, shape, dtype):
    return torch.from_numpy(rng.uniform(lo, hi, size=shape)).to(dtype)


def make_inputs(seed=20261129):
    rng = np.random.default_rng(seed)
    f16, f32 = torch.float16, torch.float32
    gmm1_x = [uniform(rng, -1, 1, (64, 128), f16), uniform(rng, -1, 1, (256, 180), f16)]
    gmm1_weight = [uniform(rng, -0.088, 0.088, (128, 64), f16), uniform(rng, -0.075, 0.075, (180, 320), f16)]
    gmm1_bias = [uniform(rng, -0.1, 0.1, (64,), f16), uniform(rng, -0.1, 0.1, (320,), f16)]
    gmm2_weight = [uniform(rng, -0.125, 0.125, (64, 56), f16), uniform(rng, -0.056, 0.056, (320, 256), f16)]
    moe1_bias = uniform(rng, -0.1, 0.1, (256,), f16)
    dsq_input = [
        uniform(rng, 1e-5, 1e-4, (128,), f32),
        uniform(rng, 0.5, 1.5, (48, 1), f32),
        uniform(rng, 0.5, 1.5, (1, 64), f32),
    ]
    data1 = torch.from_numpy(np.floor(rng.uniform(0, 65536, size=(4, 8, 128)))).to(torch.int32)
    data2 = torch.from_numpy(np.floor(rng.uniform(-128, 128, size=(6, 64, 64)))).to(torch.int8)
    scale = sk.trans_quant_param(torch.tensor([1.0 / 4096.0]))  # int64 [1], keeps |output| inside fp16
    return gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale


class Network(torch.nn.Module):
    def forward(self, gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale):
        with super_kernel("sk1"):
            grouped_matmul_01 = sk.grouped_matmul(gmm1_x, gmm1_weight, gmm1_bias, group_type=-1)
            grouped_matmul_02 = sk.grouped_matmul(grouped_matmul_01, gmm2_weight, group_type=-1)
            moe_gating_top_k_01 = sk.moe_gating_topk(
                grouped_matmul_02[1], moe1_bias, k=8, k_group=4, group_count=8, group_select_mode=1, norm_type=1
            )
        reshape_01 = torch.reshape(moe_gating_top_k_01[1], (2, 8, 128))
        square_01 = torch.square(reshape_01)
        concat_01 = torch.cat((square_01, data1), dim=0)
        reshape_02 = torch.reshape(concat_01, (-1, 128))
        with super_kernel("sk2"):
            dequant_swiglu_quant_01 = sk.dequant_swiglu_quant(
                reshape_02,
                weight_scale=dsq_input[0],
                activation_scale=dsq_input[1],
                quant_scale=dsq_input[2],
                activate_left=0,
                quant_mode=1,
            )
            quant_matmul_01 = sk.quant_matmul(
                dequant_swiglu_quant_01[0], data2, scale=scale, output_dtype=torch.float16
            )
        return quant_matmul_01


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="auto", help="auto (default), jit, interp or eager")
    args = parser.parse_args(argv)

    inputs = make_inputs()
    model = Network()
    with torch.no_grad():
        eager_output = model(*inputs)  # every op its own launch
        backend = superkernel.get_backend(superkernel.CompilerConfig(executor=args.executor))
        compiled = torch.compile(model, fullgraph=True, backend=backend, dynamic=False)
        npu_output = compiled(*inputs)

    graph = backend.graphs()[-1]
    print(f"output: {npu_output.dtype} {list(npu_output.shape)}  mean |x| {npu_output.float().abs().mean():.4f}")
    for program in graph.programs:
        stats = program.stats
        print(
            f"program: {stats['n_steps']} launches, {stats['n_super_kernels']} super kernels, "
            f"executor {stats['executor']}"
        )
    if not torch.equal(npu_output, eager_output):
        print("compiled output DIFFERS from eager")
        return 1
    print("compiled output bitwise equal to eager")
    print("execute sample success")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
