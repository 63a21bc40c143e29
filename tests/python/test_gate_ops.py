"""linear and moe_gating_topk_softmax against torch itself (an oracle
independent of the library's reference): linear against
torch.nn.functional.linear in float64, the gating against torch.softmax and
torch.topk; the torch_npu compat functions; errors.

test_torch_ops.py checks the same ops bit for bit against the library's
reference; this file checks that the reference computes the right thing.
"""

import pytest
import torch

from superkernel import torch_ops  # noqa: F401  (defines torch.ops.superkernel.*)
from superkernel.compat import torch_npu

GEN = torch.Generator().manual_seed(11)
RTOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rand(shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(shape, generator=GEN, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 64, 128), (5, 3, 96, 40), (17, 2048, 256)])
def test_linear_matches_torch(dtype, shape):
    *lead, k, n = shape
    x, w, b = rand((*lead, k), dtype), rand((n, k), dtype), rand((n,), dtype)
    y = torch.ops.superkernel.linear(x, w, b)
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    assert y.dtype == dtype and y.shape == want.shape
    # fp32 accumulation over k terms, then one rounding to the dtype
    atol = 1e-5 * k**0.5 + (0 if dtype == torch.float32 else RTOL[dtype])
    assert torch.allclose(y.double(), want, rtol=RTOL[dtype], atol=atol)


def test_linear_without_bias_is_exact_in_fp32_for_small_integers():
    x = torch.randint(-8, 8, (6, 30), generator=GEN).float()
    w = torch.randint(-8, 8, (12, 30), generator=GEN).float()
    assert torch.equal(torch.ops.superkernel.linear(x, w), x @ w.T)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_topk_softmax_matches_torch(dtype):
    t, e, k = 12, 64, 8
    # Distinct logits 0.1 apart (exact enough in bf16): no ties, so torch's
    # order is the only one. Ties are test_torch_ops's (the lower index first).
    x = torch.stack([(torch.randperm(e, generator=GEN) - e // 2) * 0.1 for _ in range(t)]).to(dtype)
    y, idx, row_idx = torch_npu.npu_moe_gating_top_k_softmax(x, k=k)
    p = torch.softmax(x.double(), dim=-1)
    want_v, want_i = torch.topk(p, k, dim=-1)
    assert torch.equal(idx.long(), want_i)
    assert torch.allclose(y.double(), want_v, rtol=RTOL[dtype] * 2, atol=1e-7)
    assert torch.equal(row_idx, (torch.arange(k)[None, :] * t + torch.arange(t)[:, None]).int())


def test_topk_softmax_ties_go_to_the_lower_index():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0]])
    _, idx, _ = torch_npu.npu_moe_gating_top_k_softmax(x, k=3)
    assert idx.tolist() == [[1, 2, 4]]


def test_topk_softmax_v2_renorm_and_softmax():
    x = rand((9, 32), torch.float32, -3, 3)
    y, idx, soft = torch_npu.npu_moe_gating_top_k_softmax_v2(x, k=4, renorm=1, output_softmax=True)
    p = torch.softmax(x.double(), dim=-1)
    assert torch.allclose(soft.double(), p, rtol=1e-6, atol=1e-9)
    v, i = torch.topk(p, 4, dim=-1)
    assert torch.equal(idx.long(), i)
    assert torch.allclose(y.double(), v / v.sum(dim=-1, keepdim=True), rtol=1e-6)
    assert torch.allclose(y.sum(dim=-1), torch.ones(9), rtol=1e-6)


def test_errors():
    with pytest.raises(Exception, match="weight"):
        torch.ops.superkernel.linear(torch.ones(2, 8), torch.ones(4, 7))
    with pytest.raises(Exception, match="bias"):
        torch.ops.superkernel.linear(torch.ones(2, 8), torch.ones(4, 8), torch.ones(5))
    with pytest.raises(Exception, match="attribute k"):
        torch_npu.npu_moe_gating_top_k_softmax(torch.ones(3, 4), k=5)
    with pytest.raises(NotImplementedError, match="finished"):
        torch_npu.npu_moe_gating_top_k_softmax(torch.ones(3, 4), finished=torch.zeros(3, dtype=torch.bool), k=2)
