"""split and sigmoid against torch (oracles independent of the library's
reference), through torch.ops.superkernel.*: split bit for bit
torch.split(x, sizes, dim)[i].contiguous() on every dtype and dimension;
sigmoid within the tolerance docs/ops.md states of torch.sigmoid (fp32: 2
ulps where torch's result is normal; fp16 / bf16: one unit of the dtype);
edges; errors with the library's message; the torch.compile backend runs
the torch ops fused and leaves torch.sigmoid and torch.split to torch.

test_torch_ops.py checks both bit for bit against the library's reference.
"""

import math

import pytest
import torch
from conftest import assert_bitwise
from torch._subclasses.fake_tensor import FakeTensorMode

import superkernel

sk = torch.ops.superkernel
GEN = torch.Generator().manual_seed(43)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool)
# One unit in the last place, relative, of each dtype at 1.
ULP = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def rand(shape, dtype, lo=-3.0, hi=3.0):
    if dtype == torch.bool:
        return torch.rand(shape, generator=GEN) < 0.5
    v = torch.rand(shape, generator=GEN, dtype=torch.float64) * (hi - lo) + lo
    return v.to(dtype) if dtype.is_floating_point else (v * 40).to(dtype)


def close(got, want, rtol, atol):
    got, want = got.double(), want.double()
    bad = (got - want).abs() > atol + rtol * want.abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float((got - want).abs().max()):.3g}"


# ---- split ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,sizes,dim",
    [
        ((6, 10), [3, 7], -1),
        ((4, 576), [512, 64], -1),  # DeepSeek MLA: [c_kv, k_pe]
        ((9, 4), [2, 3, 4], 0),
        ((4, 6, 5), [1, 2, 3], 1),
        ((2, 3, 40), [40], 2),
        ((3, 2, 5, 7), [1, 1, 3], -2),
        ((11,), [5, 6], 0),
    ],
)
def test_split_is_torch_split_contiguous(dtype, shape, sizes, dim):
    x = rand(shape, dtype)
    got = sk.split(x, sizes=sizes, dim=dim)
    want = [t.contiguous() for t in torch.split(x, sizes, dim)]
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.is_contiguous()
        assert_bitwise(g, w)


def test_split_default_dim_and_strided_input():
    x = rand((8, 12), torch.bfloat16).t()  # not contiguous: read as torch reads it
    got = sk.split(x, sizes=[5, 3])
    for g, w in zip(got, torch.split(x, [5, 3], -1)):
        assert_bitwise(g, w.contiguous())


def test_split_fake_kernel_shapes():
    with FakeTensorMode():
        x = torch.empty(5, 7, 9, dtype=torch.float16)
        parts = sk.split(x, sizes=[2, 5], dim=1)
    assert [tuple(p.shape) for p in parts] == [(5, 2, 9), (5, 5, 9)]
    assert all(p.dtype == torch.float16 for p in parts)


@pytest.mark.parametrize(
    "sizes,dim,message",
    [
        ([3, 6], -1, "2 sizes summing to 9, expected the length 10 of dimension 1"),
        ([3, 0, 7], -1, r"sizes\[1\]: expected a size >= 1, got 0"),
        ([4], 2, "dim: expected -2..1"),
    ],
)
def test_split_errors_name_the_attribute(sizes, dim, message):
    with pytest.raises(ValueError, match=message):
        sk.split(torch.zeros(4, 10), sizes=sizes, dim=dim)


# ---- sigmoid ----


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16))
def test_sigmoid_matches_torch(dtype):
    x = rand((7, 5003), dtype, -120, 40)
    y = sk.sigmoid(x)
    assert y.dtype == dtype and y.shape == x.shape
    want = torch.sigmoid(x.float())
    if dtype == torch.float32:
        # 2 ulps where torch's result is normal; below x = -88.72 torch gives 0
        # (its e^-x overflows) where the library keeps a subnormal result
        close(y, want, 2 * ULP[dtype], 2.0**-126)
        close(y, torch.sigmoid(x.double()), 1.5 * ULP[dtype], 2.0**-149)  # the library's bound against the truth
    else:
        # one rounding of the dtype from fp32 results within 2 fp32 ulps of torch's
        close(y, want.to(dtype), ULP[dtype], 2.0**-24 if dtype == torch.float16 else 2.0**-126)


def test_sigmoid_edges():
    nan, inf = math.nan, math.inf
    x = torch.tensor([nan, -nan, inf, -inf, 0.0, -0.0, 17.3287, 17.3286, -103.98, -103.97, 3e38, -3e38])
    y = sk.sigmoid(x)
    assert y.view(torch.int32)[:2].tolist() == [0x7FC00000] * 2  # the canonical NaN
    assert y[2:6].tolist() == [1.0, 0.0, 0.5, 0.5] and y.view(torch.int32)[3].item() == 0  # +0
    assert y[6].item() == 1.0 and y[7].item() < 1.0  # saturates to 1 from x = 17.32868
    assert y[8].item() == 0.0 and y[9].item() > 0.0  # and to +0 below x = -103.97208
    assert y[10].item() == 1.0 and y[11].item() == 0.0
    for dtype, canonical in ((torch.float16, 0x7E00), (torch.bfloat16, 0x7FC0)):
        h = sk.sigmoid(torch.tensor([nan, inf, -inf], dtype=dtype))
        assert h.view(torch.int16)[0].item() == canonical and h[1:].tolist() == [1.0, 0.0]


# ---- the torch.compile backend ----


def test_backend_fuses_the_torch_ops_and_leaves_torch_sigmoid_and_split():
    x = rand((6, 40), torch.float32)

    def lib(t):
        a, b = sk.split(t * t, sizes=[30, 10])
        return sk.sigmoid(a), b

    def aten(t):
        a, b = torch.split(t, [30, 10], -1)
        return torch.sigmoid(a), b

    b = superkernel.get_backend()
    with torch.no_grad():
        got = torch.compile(lib, backend=b, fullgraph=True)(x)
    want = lib(x)
    for g, w in zip(got, want):
        assert_bitwise(g, w)
    (program,) = b.programs()
    text = program.describe()
    assert "op split" in text and "op sigmoid" in text, text
    b2 = superkernel.get_backend()
    with torch.no_grad():
        got = torch.compile(aten, backend=b2, fullgraph=True)(x)
    for g, w in zip(got, aten(x)):
        assert_bitwise(g, w)  # torch's bits: neither is mapped
    assert b2.programs() == []
