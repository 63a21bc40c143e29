"""moe_init_routing and moe_finalize_routing against plain numpy / torch
code written from torch_npu's definitions (a stable argsort by expert, as
op-plugin's own CPU check does; the combine in float64), through the
torch_npu compat functions; the round trip init -> experts -> finalize as a
MoE layer uses it; dropped ids; and errors, at build and at run time.

test_torch_ops.py checks the ops bit for bit against the library's
reference; this file checks that the reference computes the right thing.
"""

import numpy as np
import pytest
import torch

from superkernel.compat import torch_npu

GEN = torch.Generator().manual_seed(5)


def ids(n, k, e, lo=0):
    return torch.randint(lo, e, (n, k), generator=GEN, dtype=torch.int32)


def numpy_init(x, expert_idx, e, lo, hi):
    """sorted pairs (stable by expert), scatter map, counts."""
    flat = expert_idx.reshape(-1).numpy()
    keep = np.nonzero((flat >= lo) & (flat < hi))[0]
    order = keep[np.argsort(flat[keep], kind="stable")]
    scatter = np.full(flat.shape, -1, dtype=np.int32)
    scatter[order] = np.arange(len(order), dtype=np.int32)
    counts = np.array([(flat == j).sum() for j in range(lo, hi)], dtype=np.int64)
    return order, scatter, counts


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_init_routing_matches_argsort(dtype):
    n, k, h, e = 13, 4, 24, 6
    x = torch.randn(n, h, generator=GEN).to(dtype)
    expert_idx = ids(n, k, e)
    ex, row_idx, tokens, scale = torch_npu.npu_moe_init_routing_v2(x, expert_idx, expert_num=e)
    order, scatter, counts = numpy_init(x, expert_idx, e, 0, e)
    assert ex.shape == (n * k, h) and ex.dtype == dtype
    assert torch.equal(ex, x[torch.from_numpy(order // k)])
    assert np.array_equal(row_idx.numpy(), scatter)
    assert np.array_equal(tokens.numpy(), np.cumsum(counts))
    assert torch.equal(scale, torch.zeros(n * k))


def test_init_routing_range_gather_counts_active():
    n, k, h, e = 10, 3, 8, 8
    x = torch.randn(n, h, generator=GEN)
    expert_idx = ids(n, k, e)
    expert_idx[0, 0] = -1  # an invalid id: left out
    ex, row_idx, tokens, _ = torch_npu.npu_moe_init_routing_v2(
        x, expert_idx, expert_num=e, active_expert_range=[2, 6], row_idx_type=1, expert_tokens_num_type=1, active_num=12)
    order, _, counts = numpy_init(x, expert_idx, e, 2, 6)
    a = len(order)
    assert ex.shape == (12, h)
    rows = min(a, 12)
    assert torch.equal(ex[:rows], x[torch.from_numpy(order[:rows] // k)])
    assert torch.equal(ex[rows:], torch.zeros(12 - rows, h))
    assert np.array_equal(row_idx.numpy()[:a], order) and (row_idx.numpy()[a:] == -1).all()
    assert np.array_equal(tokens.numpy(), counts)


def test_init_routing_dynamic_int8():
    n, k, h, e = 6, 2, 16, 4
    x = torch.randn(n, h, generator=GEN) * 3
    x[2] = 0  # a zero row: scale 0, all zeros
    expert_idx = ids(n, k, e)
    ex, _, _, scale = torch_npu.npu_moe_init_routing_v2(x, expert_idx, expert_num=e, quant_mode=1)
    order, _, _ = numpy_init(x, expert_idx, e, 0, e)
    src = x[torch.from_numpy(order // k)]
    want_scale = src.abs().amax(dim=1) / 127
    assert ex.dtype == torch.int8
    assert torch.allclose(scale, want_scale, rtol=1e-6, atol=0)
    deq = ex.float() * scale[:, None]
    assert (deq - src).abs().max() <= want_scale.max() * 0.5 + 1e-6  # within half a step


@pytest.mark.parametrize("order", [0, 2])
def test_finalize_matches_float64(order):
    n, k, h, e = 9, 3, 20, 5
    rows = torch.randn(n * k, h, generator=GEN).half()
    skip1, skip2 = torch.randn(n, h, generator=GEN).half(), torch.randn(n, h, generator=GEN).half()
    bias = torch.randn(e, h, generator=GEN).half()
    scales = torch.rand(n, k, generator=GEN)
    expert = ids(n, k, e)
    perm = torch.randperm(n * k, generator=GEN).to(torch.int32)
    perm[4] = -1  # a dropped pair
    y = torch_npu.npu_moe_finalize_routing(rows, skip1, skip2, bias, scales, perm, expert, drop_pad_mode=order)
    want = skip1.double() + skip2.double()
    for t in range(n):
        for j in range(k):
            d = int(perm[j * n + t] if order == 0 else perm[t * k + j])
            if d >= 0:
                want[t] += scales[t, j].double() * (rows[d].double() + bias[expert[t, j]].double())
    assert y.dtype == torch.float16 and y.shape == (n, h)
    assert torch.allclose(y.double(), want, rtol=4e-3, atol=4e-3)


def test_round_trip_is_a_moe_layer():
    """init -> each expert scales its rows by (e + 1) -> finalize with the
    routing weights: sum_k w[n,k] * (expert[n,k] + 1) * x[n]."""
    n, k, h, e = 11, 2, 16, 4
    x = torch.randn(n, h, generator=GEN)
    expert_idx = ids(n, k, e)
    w = torch.rand(n, k, generator=GEN)
    ex, row_idx, tokens, _ = torch_npu.npu_moe_init_routing_v2(x, expert_idx, expert_num=e)
    ends = [0] + tokens.tolist()
    out_rows = ex.clone()
    for j in range(e):
        out_rows[ends[j]:ends[j + 1]] *= j + 1
    y = torch_npu.npu_moe_finalize_routing(out_rows, None, None, None, w, row_idx, expert_idx, drop_pad_mode=2)
    want = (w * (expert_idx.float() + 1)).sum(dim=1, keepdim=True) * x
    assert torch.allclose(y, want, rtol=1e-5, atol=1e-5)


def test_errors():
    x, e = torch.randn(4, 8), ids(4, 2, 3)
    with pytest.raises(Exception, match="expert_idx"):
        torch_npu.npu_moe_init_routing_v2(x, e.long(), expert_num=3)
    with pytest.raises(Exception, match="active_expert_range"):
        torch_npu.npu_moe_init_routing_v2(x, e, expert_num=3, active_expert_range=[2, 5])
    with pytest.raises(ValueError, match="expert_num"):
        torch_npu.npu_moe_init_routing_v2(x, e)
    rows = torch.randn(8, 8)
    with pytest.raises(Exception, match="export_for_source_row"):
        torch_npu.npu_moe_finalize_routing(rows, None, None, torch.zeros(3, 8), None, torch.arange(8, dtype=torch.int32),
                                           None, k=2)
    # Run-time data: a row index past the rows fails the run, naming the entry.
    bad = torch.arange(8, dtype=torch.int32)
    bad[5] = 8
    with pytest.raises(Exception, match=r"expanded_src_to_dst_row\[5\] = 8"):
        torch_npu.npu_moe_finalize_routing(rows, None, None, None, None, bad, None, k=2)
