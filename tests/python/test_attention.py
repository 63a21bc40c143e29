"""kv_cache_write and attention through torch.ops.superkernel (docs/ops.md):

- attention computes the right thing: against
  torch.nn.functional.scaled_dot_product_attention over the cache prefix
  with a causal mask and grouped-query heads (enable_gqa), in fp32 and
  bf16, and against a float64 softmax for the sliding window and the soft
  cap, within the tolerances below;
- the invariance promise through the torch ops: a sequence prefilled in one
  pass, in chunks and token by token gives every token bitwise the same
  output and the same caches;
- the torch kv_cache_write is functional (its argument is left as it was),
  and an out-of-range position raises naming it.

test_torch_ops.py checks the ops bit for bit against the library's reference
on the case table; tests/test_attention.c checks the invariance on every
executor, team size and ISA path.
"""

import pytest
import torch

import superkernel  # noqa: F401  (registers torch.ops.superkernel)

OPS = torch.ops.superkernel
GEN = torch.Generator().manual_seed(42)
# |got - want| <= ATOL + RTOL * |want|, want from the same (rounded) inputs in
# float64: fp32 keeps the fp32 sums' rounding, bf16 adds the output's rounding.
TOL = {torch.float32: (2e-5, 1e-4), torch.bfloat16: (1e-2, 1.6e-2)}


def rand(shape, dtype):
    return (torch.rand(shape, generator=GEN, dtype=torch.float64) * 4 - 2).to(dtype)


def close(got, want, dtype):
    atol, rtol = TOL[dtype]
    err = (got.double() - want).abs()
    bad = err > atol + rtol * want.abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float(err.max()):.3g}"


def prefill(dtype, s, hq, hkv, d, prior, t):
    """Caches holding `prior` tokens, then t new tokens written and attended."""
    k_cache, v_cache = torch.zeros(s, hkv, d, dtype=dtype), torch.zeros(s, hkv, d, dtype=dtype)
    k_all, v_all = rand((prior + t, hkv, d), dtype), rand((prior + t, hkv, d), dtype)
    k_cache[:prior], v_cache[:prior] = k_all[:prior], v_all[:prior]
    q = rand((t, hq, d), dtype)
    pos = torch.arange(prior, prior + t, dtype=torch.int64)
    k_cache = OPS.kv_cache_write(k_cache, k_all[prior:], pos)
    v_cache = OPS.kv_cache_write(v_cache, v_all[prior:], pos)
    return q, k_cache, v_cache, pos


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("hq,hkv,d", [(8, 2, 64), (4, 4, 128), (6, 1, 256)])
def test_attention_matches_torch_sdpa(dtype, hq, hkv, d):
    s, prior, t = 50, 13, 9
    q, k_cache, v_cache, pos = prefill(dtype, s, hq, hkv, d, prior, t)
    got = OPS.attention(q, k_cache, v_cache, pos)
    n = prior + t  # the cache prefix; token i attends keys 0 .. prior + i
    mask = torch.arange(n)[None, :] <= pos[:, None]
    want = torch.nn.functional.scaled_dot_product_attention(
        q.double().transpose(0, 1), k_cache[:n].double().transpose(0, 1), v_cache[:n].double().transpose(0, 1),
        attn_mask=mask, enable_gqa=True).transpose(0, 1)
    assert got.dtype == dtype and got.shape == q.shape
    close(got, want, dtype)


def oracle(q, k_cache, v_cache, pos, scale, softcap, window):
    """float64 attention with the soft cap and the window, head by head."""
    t, hq, d = q.shape
    group = hq // k_cache.shape[1]
    out = torch.empty(t, hq, d, dtype=torch.float64)
    for i in range(t):
        p = int(pos[i])
        lo = max(0, p - window + 1) if window else 0
        for h in range(hq):
            k = k_cache[lo:p + 1, h // group].double()
            v = v_cache[lo:p + 1, h // group].double()
            s = (k @ q[i, h].double()) * scale
            if softcap:
                s = softcap * torch.tanh(s / softcap)
            out[i, h] = torch.softmax(s, 0) @ v
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_window_softcap_and_scale_match_a_float64_softmax(dtype):
    q, k_cache, v_cache, pos = prefill(dtype, 40, 4, 2, 64, 20, 7)
    q = q * 4  # wide scores, so the soft cap matters
    got = OPS.attention(q, k_cache, v_cache, pos, scale=0.2, softcap=3.0, window=6)
    close(got, oracle(q, k_cache, v_cache, pos, 0.2, 3.0, 6), dtype)
    got = OPS.attention(q, k_cache, v_cache, pos)
    close(got, oracle(q, k_cache, v_cache, pos, 64 ** -0.5, 0.0, 0), dtype)


def run_layer(q, k_new, v_new, s, chunks, **attrs):
    """The sequence through cache writes and attention, chunk by chunk."""
    k_cache = torch.zeros((s,) + k_new.shape[1:], dtype=k_new.dtype)
    v_cache = torch.zeros_like(k_cache)
    outs, t0 = [], 0
    for n in chunks:
        pos = torch.arange(t0, t0 + n, dtype=torch.int32)
        k_cache = OPS.kv_cache_write(k_cache, k_new[t0:t0 + n], pos)
        v_cache = OPS.kv_cache_write(v_cache, v_new[t0:t0 + n], pos)
        outs.append(OPS.attention(q[t0:t0 + n], k_cache, v_cache, pos, **attrs))
        t0 += n
    return torch.cat(outs), k_cache, v_cache


@pytest.mark.parametrize("dtype,attrs", [(torch.bfloat16, {}), (torch.float32, {"window": 5, "softcap": 10.0}),
                                         (torch.float16, {"scale": 0.5})])
def test_one_pass_chunks_and_token_by_token_are_bitwise_equal(dtype, attrs):
    s, length = 64, 37
    q, k_new, v_new = rand((length, 8, 64), dtype), rand((length, 2, 64), dtype), rand((length, 2, 64), dtype)
    one = run_layer(q, k_new, v_new, s, [length], **attrs)
    gen = torch.Generator().manual_seed(7)
    chunks, left = [], length
    while left:
        chunks.append(min(left, int(torch.randint(1, 12, (1,), generator=gen))))
        left -= chunks[-1]
    for split in (chunks, [1] * length):
        other = run_layer(q, k_new, v_new, s, split, **attrs)
        for a, b in zip(one, other):
            assert torch.equal(a.view(torch.int16 if a.element_size() == 2 else torch.int32),
                               b.view(torch.int16 if b.element_size() == 2 else torch.int32)), split


def test_torch_kv_cache_write_is_functional_and_refuses_bad_positions():
    cache = torch.zeros(6, 1, 16)
    new = torch.ones(2, 1, 16)
    out = OPS.kv_cache_write(cache, new, torch.tensor([4, 1]))
    assert cache.eq(0).all(), "the argument was written"
    assert out[4].eq(1).all() and out[1].eq(1).all() and out[[0, 2, 3, 5]].eq(0).all()
    with pytest.raises(superkernel.SuperkernelError, match=r"positions\[1\] = 6"):
        OPS.kv_cache_write(cache, new, torch.tensor([0, 6]))
    with pytest.raises(superkernel.SuperkernelError, match=r"positions\[0\] = -1"):
        OPS.attention(torch.ones(1, 1, 16), cache, cache, torch.tensor([-1]))
