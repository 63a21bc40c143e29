"""mla_attention through torch.ops.superkernel (docs/ops.md):

- it computes what transformers' DeepseekV3Attention computes: a small
  random DeepseekV3Config (YaRN rope included), the module's forward over a
  prompt and then a second chunk with a DynamicCache; its attention output
  before o_proj is compared with mla_attention fed the module's own
  intermediates (the rotated query its attention function receives, the
  latent cache the DynamicCache holds, kv_b_proj's weight, module.scaling),
  in fp32 and bf16, within the tolerances below;
- the absorbed form against the expanded one in float64 from the same
  inputs (the maths, without transformers' roundings);
- the invariance promise through the torch ops: kv_cache_write of the latent
  rows and mla_attention, prefilled in one pass, in chunks and token by
  token: every output and the cache bitwise equal;
- an out-of-range position raises naming it.

test_torch_ops.py checks the op bit for bit against the library's reference
on the case table; tests/test_mla_attention.c checks the invariance on every
executor, team size and ISA path.
"""

import pytest
import torch
from transformers import AttentionInterface, DeepseekV3Config, DynamicCache
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds

import superkernel  # noqa: F401  (registers torch.ops.superkernel)

OPS = torch.ops.superkernel
GEN = torch.Generator().manual_seed(42)
# |got - want| <= ATOL + RTOL * |want|. Against the float64 expanded form
# from the same inputs: fp32 sums' rounding; bf16 adds the output's. Against
# transformers' module run in the dtype: its own roundings too (in bf16 it
# rounds the expanded keys and values, the probabilities and every matmul).
TOL64 = {torch.float32: (2e-5, 1e-4), torch.bfloat16: (1e-2, 1.6e-2)}
TOL_HF = {torch.float32: (1e-5, 1e-4), torch.bfloat16: (4e-2, 3e-2)}

CAPTURED = {}


def _capture(module, query, key, value, attention_mask, **kwargs):
    """transformers' eager attention, recording its query (q_nope, rotated q_pe) and output."""
    out, weights = ds.eager_attention_forward(module, query, key, value, attention_mask, **kwargs)
    CAPTURED["query"], CAPTURED["out"] = query.detach(), out.detach()
    return out, weights


AttentionInterface.register("sk_capture", _capture)


def close(got, want, tol):
    atol, rtol = tol
    err = (got.double() - want.double()).abs()
    bad = err > atol + rtol * want.double().abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float(err.max()):.3g}"


def make_module(h, nope, rope, v, rank, yarn, dtype):
    rope_parameters = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 32,
                       "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0} if yarn else \
        {"rope_type": "default", "rope_theta": 10000.0}
    cfg = DeepseekV3Config(hidden_size=64, num_attention_heads=h, num_key_value_heads=h, q_lora_rank=32,
                           kv_lora_rank=rank, qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=v,
                           max_position_embeddings=128, rope_parameters=rope_parameters, num_hidden_layers=1)
    cfg._attn_implementation = "sk_capture"
    attn = ds.DeepseekV3Attention(cfg, layer_idx=0)
    with torch.no_grad():  # weights of unit-scale outputs, so the softmax is far from uniform
        for name, p in attn.named_parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=GEN) * (1.5 / p.shape[1] ** 0.5))
            elif "layernorm" in name:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=GEN))
    return cfg, attn.to(dtype), ds.DeepseekV3RotaryEmbedding(cfg)


def hf_chunk(cfg, attn, rotary, cache, hidden, start):
    """The module's forward over tokens start .. start + T - 1 after `start` cached ones."""
    t = hidden.shape[1]
    pos = torch.arange(start, start + t)
    cos, sin = rotary(hidden, pos[None])
    mask = torch.full((t, start + t), float("-inf"))
    mask[torch.arange(start + t)[None, :] <= pos[:, None]] = 0
    with torch.no_grad():
        attn(hidden, (cos.to(hidden.dtype), sin.to(hidden.dtype)), mask[None, None].to(hidden.dtype), cache=cache)
    return pos


def expanded64(q_nope, q_pe, latent, pos, w, scale):
    """transformers' expanded form in float64: per head keys [W_UK c_kv, k_pe], values W_UV c_kv."""
    t, h, nope = q_nope.shape
    rank = w.shape[1]
    w = w.double().view(h, -1, rank)
    c_kv, k_pe = latent[:, 0, :rank].double(), latent[:, 0, rank:].double()
    out = torch.empty(t, h, w.shape[1] - nope, dtype=torch.float64)
    for i in range(t):
        n = int(pos[i]) + 1
        for hh in range(h):
            k = torch.cat([c_kv[:n] @ w[hh, :nope].T, k_pe[:n]], 1)
            s = k @ torch.cat([q_nope[i, hh].double(), q_pe[i, hh].double()]) * scale
            out[i, hh] = torch.softmax(s, 0) @ (c_kv[:n] @ w[hh, nope:].T)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("h,nope,rope,v,rank,yarn", [(4, 32, 16, 32, 64, False), (2, 16, 16, 24, 32, True),
                                                      (3, 24, 32, 16, 48, True)])
def test_matches_transformers_deepseek_v3_attention(dtype, h, nope, rope, v, rank, yarn):
    cfg, attn, rotary = make_module(h, nope, rope, v, rank, yarn, dtype)
    prompt, more, s = 11, 6, 24
    hidden = torch.randn(1, prompt + more, 64, generator=GEN).to(dtype)
    cache = DynamicCache(config=cfg)
    hf_chunk(cfg, attn, rotary, cache, hidden[:, :prompt], 0)
    pos = hf_chunk(cfg, attn, rotary, cache, hidden[:, prompt:], prompt)
    query = CAPTURED["query"][0].transpose(0, 1)  # [T, H, N + P]
    q_nope, q_pe = query[..., :nope].contiguous(), query[..., nope:].contiguous()
    layer = cache.layers[0]  # the compressed latents: c_kv as keys, rotated k_pe as values
    rows = torch.cat([layer.keys[0, 0], layer.values[0, 0]], -1)
    latent = torch.zeros(s, 1, rank + rope, dtype=dtype)
    latent[:rows.shape[0], 0] = rows
    w = attn.kv_b_proj.weight.detach()
    got = OPS.mla_attention(q_nope, q_pe, latent, pos, w, scale=attn.scaling)
    assert got.dtype == dtype and got.shape == (more, h, v)
    close(got, expanded64(q_nope, q_pe, latent, pos, w, attn.scaling), TOL64[dtype])
    close(got, CAPTURED["out"][0], TOL_HF[dtype])
    # and after o_proj, as a model runs it: o reshaped to [T, H * V], then linear
    with torch.no_grad():
        want = attn.o_proj(CAPTURED["out"][0].reshape(more, h * v))
        mine = torch.nn.functional.linear(got.reshape(more, h * v), attn.o_proj.weight)
    close(mine, want, (TOL_HF[dtype][0] * 10, TOL_HF[dtype][1] * 2))


def run_layer(q_nope, q_pe, rows, w, s, chunks, **attrs):
    """The sequence through latent cache writes and mla_attention, chunk by chunk."""
    cache = torch.zeros((s, 1, rows.shape[-1]), dtype=rows.dtype)
    outs, t0 = [], 0
    for n in chunks:
        pos = torch.arange(t0, t0 + n, dtype=torch.int32)
        cache = OPS.kv_cache_write(cache, rows[t0:t0 + n], pos)
        outs.append(OPS.mla_attention(q_nope[t0:t0 + n], q_pe[t0:t0 + n], cache, pos, w, **attrs))
        t0 += n
    return torch.cat(outs), cache


def bits(x):
    return x.view(torch.int16 if x.element_size() == 2 else torch.int32)


@pytest.mark.parametrize("dtype,attrs", [(torch.bfloat16, {}), (torch.float32, {"scale": 0.3}), (torch.float16, {})])
def test_one_pass_chunks_and_token_by_token_are_bitwise_equal(dtype, attrs):
    s, length, h, nope, rope, v, rank = 48, 33, 4, 32, 16, 24, 64
    q_nope = torch.randn(length, h, nope, generator=GEN).to(dtype)
    q_pe = torch.randn(length, h, rope, generator=GEN).to(dtype)
    rows = torch.randn(length, 1, rank + rope, generator=GEN).to(dtype)
    w = (torch.randn(h * (nope + v), rank, generator=GEN) * 0.2).to(dtype)
    one = run_layer(q_nope, q_pe, rows, w, s, [length], **attrs)
    gen = torch.Generator().manual_seed(7)
    chunks, left = [], length
    while left:
        chunks.append(min(left, int(torch.randint(1, 12, (1,), generator=gen))))
        left -= chunks[-1]
    for split in (chunks, [1] * length):
        other = run_layer(q_nope, q_pe, rows, w, s, split, **attrs)
        for a, b in zip(one, other):
            assert torch.equal(bits(a), bits(b)), split


def test_a_position_past_the_cache_raises():
    q = torch.ones(1, 2, 16)
    with pytest.raises(superkernel.SuperkernelError, match=r"positions\[0\] = 6"):
        OPS.mla_attention(q, q, torch.zeros(6, 1, 48), torch.tensor([6]), torch.zeros(64, 32))
