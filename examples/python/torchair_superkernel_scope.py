# The seed's superkernel_scope.py (graph-autofusion, super_kernel/examples/jit/
# example01_super_kernel_base) on superkernel: only the imports differ, and
# the .npu() calls and torch.npu.set_device(0) are dropped (docs/python.md).
import torch
import numpy as np
from superkernel.compat import torch_npu
from superkernel.compat import torchair as tng
from superkernel.compat.torchair.configs.compiler_config import CompilerConfig

#  data
#   |
#  sk1: GroupedMatmul -> GroupedMatmul -> MoeGatingTopK
#   |
#  reshape -> square -> concat -> reshape
#   |
#  sk2: DequantSwigluQuant -> QuantBatchMatmulV3
#   |
#  netoutput

gmm1_x = [torch.from_numpy(np.random.uniform(-1, 1, size=(64, 128))).to(torch.float16),
          torch.from_numpy(np.random.uniform(-1, 1, size=(256, 180))).to(torch.float16)]
gmm1_weight = [torch.from_numpy(np.random.uniform(-0.088, 0.088, size=(128, 64))).to(torch.float16),
               torch.from_numpy(np.random.uniform(-0.075, 0.075, size=(180, 320))).to(torch.float16)]
gmm1_bias = [torch.from_numpy(np.random.uniform(-0.1, 0.1, size=(64,))).to(torch.float16),
             torch.from_numpy(np.random.uniform(-0.1, 0.1, size=(320,))).to(torch.float16)]
gmm2_weight = [torch.from_numpy(np.random.uniform(-0.125, 0.125, size=(64, 56))).to(torch.float16),
               torch.from_numpy(np.random.uniform(-0.056, 0.056, size=(320, 256))).to(torch.float16)]
moe1_bias = torch.from_numpy(np.random.uniform(-0.1, 0.1, size=(256,))).to(torch.float16)
dsq_input = [torch.from_numpy(np.random.uniform(1e-5, 1e-4, size=(128,))).to(torch.float32),
             torch.from_numpy(np.random.uniform(0.5, 1.5, size=(48, 1))).to(torch.float32),
             torch.from_numpy(np.random.uniform(0.5, 1.5, size=(1, 64))).to(torch.float32)]
data1 = torch.from_numpy(np.random.uniform(0, 65536, size=(4, 8, 128))).to(torch.int32)
data2 = torch.from_numpy(np.random.uniform(-128, 128, size=(6, 64, 64))).to(torch.int8)
scale = torch_npu.npu_trans_quant_param(torch.from_numpy(np.array([1.0 / 4096.0])).to(torch.float32))


class Network(torch.nn.Module):
    def __init__(self):
        super(Network, self).__init__()

    def forward(self, gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale):
        with tng.scope.super_kernel("sk1"):
            grouped_matmul_01 = torch_npu.npu_grouped_matmul(group_type=-1, x=gmm1_x, weight=gmm1_weight,
                                                             bias=gmm1_bias)
            grouped_matmul_02 = torch_npu.npu_grouped_matmul(group_type=-1, x=grouped_matmul_01, weight=gmm2_weight)
            moe_gating_top_k_01 = torch_npu.npu_moe_gating_top_k(x=grouped_matmul_02[1], bias=moe1_bias, k=8,
                                                                 k_group=4, group_count=8, group_select_mode=1,
                                                                 norm_type=1)
        reshape_01 = torch.reshape(moe_gating_top_k_01[1], (2, 8, 128))
        square_01 = torch.square(reshape_01)
        concat_01 = torch.cat((square_01, data1), dim=0)
        reshape_02 = torch.reshape(concat_01, (-1, 128))
        with tng.scope.super_kernel("sk2"):
            dequant_swiglu_quant_01 = torch_npu.npu_dequant_swiglu_quant(x=reshape_02, weight_scale=dsq_input[0],
                                                                         activation_scale=dsq_input[1], bias=None,
                                                                         quant_scale=dsq_input[2],
                                                                         quant_offset=None, group_index=None,
                                                                         activate_left=False, quant_mode=1)
            quant_matmul_01 = torch_npu.npu_quant_matmul(x1=dequant_swiglu_quant_01[0], x2=data2, scale=scale,
                                                         offset=None, bias=None, pertoken_scale=None,
                                                         output_dtype=torch.float16)
        return quant_matmul_01


config = CompilerConfig()
npu_backend = tng.get_npu_backend(compiler_config=config)
model = Network()
model = torch.compile(model, fullgraph=True, backend=npu_backend, dynamic=False)
_npu_output = model(gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale)
print("execute sample success")
