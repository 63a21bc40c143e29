"""rms_norm, add_rms_norm and swiglu against torch's own arithmetic in
float64 (an oracle independent of the library's reference), through the
torch_npu compat functions: results within a few units in the last place
of the output dtype, rstd within 4 fp32 ulps; edge rows (zeros, epsilon 0,
NaN, one element); and the library's errors as exceptions.

test_torch_ops.py checks the same ops bit for bit against the library's
reference; this file checks that the reference computes the right thing.
"""

import math

import pytest
import torch

from superkernel.compat import torch_npu

GEN = torch.Generator().manual_seed(77)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
# Relative error allowed against the float64 result: a few roundings of the
# output dtype (fp32 compute, one final rounding, plus the fp32 steps).
RTOL = {torch.float32: 4e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rand(shape, dtype, lo=-3.0, hi=3.0):
    return (torch.rand(shape, generator=GEN, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def rms_oracle(v, gamma, eps):
    """v float64 [..., H]: y and rstd in float64."""
    rstd = 1.0 / torch.sqrt((v * v).mean(dim=-1, keepdim=True) + eps)
    return v * rstd * gamma.double(), rstd


def close(got, want, rtol, atol):
    got = got.double()
    bad = (got - want).abs() > atol + rtol * want.abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float((got - want).abs().max()):.3g}"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("h", [1, 7, 16, 100, 4096])
def test_rms_norm_matches_float64(dtype, h):
    x, gamma, eps = rand((5, h), dtype), rand((h,), dtype, 0.5, 1.5), 1e-6
    y, rstd = torch_npu.npu_rms_norm(x, gamma, epsilon=eps)
    assert y.dtype == dtype and y.shape == x.shape
    assert rstd.dtype == torch.float32 and rstd.shape == (5, 1)
    want_y, want_rstd = rms_oracle(x.double(), gamma, eps)
    close(rstd, want_rstd, 4 * 2.0**-23, 0)
    close(y, want_y, RTOL[dtype], 1e-30)


@pytest.mark.parametrize("dtype", FLOATS)
def test_add_rms_norm_matches_float64(dtype):
    x1, x2, gamma = rand((3, 2, 64), dtype), rand((3, 2, 64), dtype), rand((64,), torch.float32, 0.5, 1.5)
    y, rstd, x = torch_npu.npu_add_rms_norm(x1, x2, gamma)
    s = x1.double() + x2.double()  # exact in float64; the library's fp32 sum rounds it once
    assert torch.equal(x, (x1.float() + x2.float()).to(dtype))
    want_y, want_rstd = rms_oracle(s, gamma, 1e-6)
    assert rstd.shape == (3, 2, 1)
    close(rstd, want_rstd, 8 * 2.0**-23, 0)
    close(y, want_y, RTOL[dtype] * 2, 1e-30)


def test_rms_norm_edges():
    gamma = torch.ones(4)
    y, rstd = torch_npu.npu_rms_norm(torch.zeros(2, 4), gamma, epsilon=0.25)
    assert torch.equal(rstd, torch.full((2, 1), 2.0)) and torch.equal(y, torch.zeros(2, 4))
    y, rstd = torch_npu.npu_rms_norm(torch.zeros(1, 4), gamma, epsilon=0.0)
    assert math.isinf(rstd.item()) and torch.isnan(y).all()  # 0 * inf
    x = torch.tensor([[1.0, float("nan"), 2.0, 3.0]])
    y, rstd = torch_npu.npu_rms_norm(x, gamma)
    assert torch.isnan(rstd).all() and torch.isnan(y).all()
    y, rstd = torch_npu.npu_rms_norm(torch.tensor([[-3.0]]), torch.tensor([2.0]), epsilon=0.0)
    assert rstd.item() == pytest.approx(1 / 3, rel=1e-7) and y.item() == pytest.approx(-2.0, rel=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_swiglu_matches_float64(dtype, dim):
    x = rand((6, 10, 4), dtype, -8, 8)
    y = torch_npu.npu_swiglu(x, dim=dim)
    a, b = x.double().chunk(2, dim=dim)
    want = torch.nn.functional.silu(a) * b
    assert y.dtype == dtype and y.shape == want.shape
    close(y, want, RTOL[dtype] * 2, 1e-30)


def test_errors_name_the_culprit():
    with pytest.raises(Exception, match="gamma"):
        torch_npu.npu_rms_norm(torch.ones(2, 8), torch.ones(7))
    with pytest.raises(Exception, match="epsilon"):
        torch_npu.npu_rms_norm(torch.ones(2, 8), torch.ones(8), epsilon=-1.0)
    with pytest.raises(Exception, match="x2"):
        torch_npu.npu_add_rms_norm(torch.ones(2, 8), torch.ones(2, 9), torch.ones(8))
    with pytest.raises(Exception, match="even"):
        torch_npu.npu_swiglu(torch.ones(3, 5))
    with pytest.raises(Exception, match="int32"):
        torch_npu.npu_swiglu(torch.ones(3, 4, dtype=torch.int32))
