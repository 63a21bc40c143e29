"""softmax, argmax, embedding and rotary_embedding against torch and
transformers (oracles independent of the library's reference), through
torch.ops.superkernel.*: softmax within a few fp32 ulps of torch.softmax
(one rounding of the fp16 / bf16 output), argmax and embedding bit for bit,
RoPE within the table's ulp of transformers' rotary classes and
apply_rotary_pos_emb (default, linear, YaRN as DeepSeek-V3 uses it, partial
and interleaved); edge rows; run-time errors as exceptions.

test_torch_ops.py checks the same ops bit for bit against the library's
reference; this file checks that the reference computes the right thing.
"""

import math

import pytest
import torch

import superkernel  # noqa: F401  (registers torch.ops.superkernel)

sk = torch.ops.superkernel
GEN = torch.Generator().manual_seed(42)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
# One unit in the last place, relative, of each dtype at 1.
ULP = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def rand(shape, dtype, lo=-3.0, hi=3.0):
    return (torch.rand(shape, generator=GEN, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def close(got, want, rtol, atol):
    got, want = got.double(), want.double()
    bad = (got - want).abs() > atol + rtol * want.abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float((got - want).abs().max()):.3g}"


# ---- softmax ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 7, 16, 100, 4099])
def test_softmax_matches_torch(dtype, n):
    x = rand((6, n), dtype, -20, 20)
    y = sk.softmax(x)
    assert y.dtype == dtype and y.shape == x.shape
    want = torch.softmax(x.float(), dim=-1)
    if dtype == torch.float32:
        close(y, want, 4 * ULP[dtype], 1e-30)  # exp's ulp, the sums' and the division's roundings
    else:
        close(y, want, ULP[dtype], 1e-7)  # one rounding of the dtype (fp16 subnormals: absolute)


def test_softmax_edge_rows_as_torch():
    inf, nan = math.inf, math.nan
    x = torch.tensor([[1.0, nan, 2.0], [-inf, -inf, -inf], [inf, 1.0, 2.0], [-inf, 0.0, 0.0], [0.0, -0.0, 0.0]])
    y, want = sk.softmax(x), torch.softmax(x, dim=-1)
    assert torch.equal(y.isnan(), want.isnan())
    close(y.nan_to_num(), want.nan_to_num(), 4 * ULP[torch.float32], 0)
    assert y[3, 0].item() == 0.0 and float((y[4] - 1 / 3).abs().max()) < 1e-7  # -0 and +0 alike


# ---- argmax ----


@pytest.mark.parametrize("dtype", FLOATS + (torch.int8, torch.uint8, torch.int32, torch.int64))
def test_argmax_matches_torch(dtype):
    if dtype.is_floating_point:
        x = rand((5, 3, 700), dtype, -2, 2).to(dtype)
        x = (x * 8).round() / 8  # many ties
    else:
        lo = 0 if dtype == torch.uint8 else -5
        x = torch.randint(lo, lo + 10, (5, 3, 700), generator=GEN).to(dtype)
    y = sk.argmax(x)
    assert y.dtype == torch.int64 and y.shape == (5, 3)
    assert torch.equal(y, torch.argmax(x, dim=-1))
    assert torch.equal(sk.argmax(x, keepdim=1), torch.argmax(x, dim=-1, keepdim=True))


def test_argmax_nan_and_vocabulary_rows():
    v = 152064
    x = rand((4, v), torch.float32, -10, 10)
    x[0, 100_000] = x[0, 151_999] = 50.0  # a tie across chunks: the first
    x[1, 7] = math.nan
    x[1, 9] = math.nan  # the first NaN wins
    x[2, :] = -math.inf  # all equal: index 0
    x[3, 152_063] = math.inf
    y = sk.argmax(x)
    assert y.tolist() == torch.argmax(x, dim=-1).tolist() == [100_000, 7, 0, 152_063]
    assert torch.equal(sk.argmax(x.to(torch.bfloat16)), torch.argmax(x.to(torch.bfloat16), dim=-1))


# ---- embedding ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("id_dtype", (torch.int32, torch.int64))
def test_embedding_is_torch_bitwise(dtype, id_dtype):
    table = rand((100, 24), dtype)
    ids = torch.randint(0, 100, (3, 5), generator=GEN).to(id_dtype)
    y = sk.embedding(table, ids)
    assert torch.equal(y.view(torch.int8), torch.nn.functional.embedding(ids.long(), table).view(torch.int8))


@pytest.mark.parametrize("out", (None, torch.bfloat16, torch.float16))
def test_embedding_int8_table_times_its_row_scale(out):
    table = torch.randint(-128, 128, (50, 33), generator=GEN).to(torch.int8)
    scale = rand((50,), torch.float32, 0.001, 0.05)
    ids = torch.randint(0, 50, (11,), generator=GEN)
    y = sk.embedding(table, ids, scale) if out is None else sk.embedding(table, ids, scale, output_dtype=out)
    want = (table.float() * scale[:, None])[ids]  # one fp32 product, then one rounding
    assert torch.equal(y, want.to(out or torch.float32))


def test_embedding_out_of_range_id_fails_naming_it():
    table = rand((10, 4), torch.float32)
    with pytest.raises(Exception, match=r"ids\[2\] = 10 is out of range for a table of 10 rows"):
        sk.embedding(table, torch.tensor([0, 9, 10, 3]))
    with pytest.raises(Exception, match=r"ids\[0\] = -1 is out of range"):
        sk.embedding(table, torch.tensor([-1], dtype=torch.int32))


# ---- rotary_embedding ----

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

SCALINGS = {
    "default": ({"rope_type": "default"}, {}),
    "linear": ({"rope_type": "linear", "factor": 4.0}, {"scaling_type": 1, "factor": 4.0}),
    # DeepSeek-V3's: mscale / mscale_all_dim 1 (attention factor 1)
    "yarn-deepseek": (
        {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32,
         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
        {"scaling_type": 2, "factor": 40.0, "original_max_positions": 4096, "mscale": 1.0, "mscale_all_dim": 1.0}),
    # the paper's attention factor 0.1 ln(s) + 1 scales cos and sin
    "yarn": (
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048},
        {"scaling_type": 2, "factor": 8.0, "original_max_positions": 2048}),
}


def hf_cos_sin(params, dim, theta, positions, max_positions):
    cfg = LlamaConfig(hidden_size=dim * 4, num_attention_heads=4, head_dim=dim, max_position_embeddings=max_positions,
                      rope_parameters=dict(params, rope_theta=theta))
    rope = LlamaRotaryEmbedding(cfg)
    return rope(torch.zeros(1, dtype=torch.float32), positions[None])  # [1, T, dim] each, fp32


@pytest.mark.parametrize("scaling", sorted(SCALINGS))
def test_rotary_matches_transformers(scaling):
    params, attrs = SCALINGS[scaling]
    t, d, theta, maxpos = 9, 64, 10000.0, 16384
    pos = torch.tensor([0, 1, 2, 17, 511, 2047, 4096, 9000, 16383])
    q, k = rand((t, 4, d), torch.float32, -1, 1), rand((t, 2, d), torch.float32, -1, 1)
    cos, sin = hf_cos_sin(params, d, theta, pos, maxpos)
    want_q, want_k = apply_rotary_pos_emb(q.transpose(0, 1)[None], k.transpose(0, 1)[None], cos, sin)
    got_q, got_k = sk.rotary_embedding(q, k, pos, max_positions=maxpos, theta=theta, **attrs)
    # the table's cos / sin are within an ulp of torch's fp32 ones
    close(got_q, want_q[0].transpose(0, 1), 0, 2e-6)
    close(got_k, want_k[0].transpose(0, 1), 0, 2e-6)
    for dtype in (torch.bfloat16, torch.float16):  # one rounding of the fp32 result
        lq, _ = sk.rotary_embedding(q.to(dtype), k.to(dtype), pos, max_positions=maxpos, theta=theta, **attrs)
        fq, _ = sk.rotary_embedding(q.to(dtype).float(), k.to(dtype).float(), pos, max_positions=maxpos, theta=theta,
                                    **attrs)
        assert torch.equal(lq, fq.to(dtype))


def test_rotary_partial_and_interleaved():
    t, d, r, theta, maxpos = 5, 48, 32, 1e6, 4096
    pos = torch.tensor([3, 0, 4095, 100, 7], dtype=torch.int32)
    q, k = rand((t, 3, d), torch.float32, -1, 1), rand((t, 1, d), torch.float32, -1, 1)
    cos, sin = hf_cos_sin({"rope_type": "default"}, r, theta, pos.long(), maxpos)
    # partial (neox): the first r dims rotate, as transformers' partial_rotary_factor models apply it
    want_q, _ = apply_rotary_pos_emb(q[..., :r].transpose(0, 1)[None], k[..., :r].transpose(0, 1)[None], cos, sin)
    got_q, got_k = sk.rotary_embedding(q, k, pos, max_positions=maxpos, theta=theta, rotary_dim=r)
    close(got_q[..., :r], want_q[0].transpose(0, 1), 0, 2e-6)
    assert torch.equal(got_q[..., r:], q[..., r:]) and torch.equal(got_k[..., r:], k[..., r:])
    # interleaved (GPT-J): pairs (2i, 2i + 1) with transformers' gptj rotate_every_two
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_rope

    want = gptj_rope(q[None, ..., :r], sin[..., : r // 2], cos[..., : r // 2])  # [1, T, H, r]
    got_q, _ = sk.rotary_embedding(q, k, pos, max_positions=maxpos, theta=theta, rotary_dim=r, layout=1)
    close(got_q[..., :r], want[0], 0, 2e-6)
    assert torch.equal(got_q[..., r:], q[..., r:])


def test_rotary_out_of_range_position_fails_naming_it():
    q = rand((3, 2, 8), torch.float32)
    with pytest.raises(Exception, match=r"positions\[1\] = 16 is out of range for max_positions 16"):
        sk.rotary_embedding(q, q, torch.tensor([0, 16, 3]), max_positions=16)
