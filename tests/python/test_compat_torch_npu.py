"""superkernel.compat.torch_npu: torch_npu's signatures, defaults and return
structures; each function equals the torch.ops.superkernel call it makes;
unsupported arguments raise NotImplementedError naming them; the seed's
example01 forward runs eagerly and traces whole under torch.compile."""

import inspect

import numpy as np
import pytest
import torch
from _helpers import assert_bits_equal
from torch._subclasses.fake_tensor import FakeTensorMode

import superkernel
import superkernel.compat.torch_npu as torch_npu_module
from superkernel.compat import torch_npu

sk = torch.ops.superkernel
GEN = torch.Generator().manual_seed(7)


def rand(shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(shape, generator=GEN) * (hi - lo) + lo).to(dtype)


def randint(shape, dtype, lo, hi):
    return torch.randint(lo, hi, shape, generator=GEN, dtype=torch.int64).to(dtype)


def test_both_import_forms_give_the_module():
    assert torch_npu is torch_npu_module
    assert superkernel.compat.torch_npu is torch_npu


# ---- signatures: torch_npu's names, kinds and defaults (shared/spec/torch_npu.md)

KW = inspect.Parameter.KEYWORD_ONLY
POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
EMPTY = inspect.Parameter.empty

SIGNATURES = {
    "npu_grouped_matmul": [
        ("x", POS, EMPTY), ("weight", POS, EMPTY), ("bias", KW, None), ("scale", KW, None), ("offset", KW, None),
        ("antiquant_scale", KW, None), ("antiquant_offset", KW, None), ("per_token_scale", KW, None),
        ("group_list", KW, None), ("activation_input", KW, None), ("activation_quant_scale", KW, None),
        ("activation_quant_offset", KW, None), ("split_item", KW, 0), ("group_type", KW, None),
        ("group_list_type", KW, 0), ("act_type", KW, 0), ("tuning_config", KW, None), ("output_dtype", KW, None),
        ("x_dtype", KW, None), ("weight_dtype", KW, None), ("scale_dtype", KW, None),
        ("per_token_scale_dtype", KW, None),
    ],
    "npu_moe_gating_top_k": [
        ("x", POS, EMPTY), ("k", POS, EMPTY), ("bias", KW, None), ("input_ids", KW, None), ("tid2eid", KW, None),
        ("k_group", KW, 1), ("group_count", KW, 1), ("group_select_mode", KW, 0), ("renorm", KW, 0),
        ("norm_type", KW, 0), ("out_flag", KW, False), ("routed_scaling_factor", KW, 1.0), ("eps", KW, 1e-20),
    ],
    "npu_dequant_swiglu_quant": [
        ("x", POS, EMPTY), ("weight_scale", KW, None), ("activation_scale", KW, None), ("bias", KW, None),
        ("quant_scale", KW, None), ("quant_offset", KW, None), ("group_index", KW, None),
        ("activate_left", KW, False), ("quant_mode", KW, 0), ("dst_type", KW, None), ("round_mode", KW, None),
        ("activate_dim", KW, None), ("swiglu_mode", KW, 0), ("clamp_limit", KW, 7.0), ("glu_alpha", KW, 1.702),
        ("glu_bias", KW, 1.0),
    ],
    "npu_quant_matmul": [
        ("x1", POS, EMPTY), ("x2", POS, EMPTY), ("scale", POS, EMPTY), ("offset", KW, None),
        ("pertoken_scale", KW, None), ("bias", KW, None), ("output_dtype", KW, None), ("x1_dtype", KW, None),
        ("x2_dtype", KW, None), ("pertoken_scale_dtype", KW, None), ("scale_dtype", KW, None),
        ("group_sizes", KW, None), ("y_scale", KW, None),
    ],
    "npu_trans_quant_param": [("scale", POS, EMPTY), ("offset", POS, None), ("round_mode", POS, 0)],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_torch_npus(name):
    params = inspect.signature(getattr(torch_npu, name)).parameters.values()
    assert [(p.name, p.kind, p.default) for p in params] == SIGNATURES[name]


def test_scalar_type_codes_are_torchs():
    x = torch.ones(1)
    for code, dtype in torch_npu.SCALAR_TYPE_CODES.items():
        assert torch.ops.aten._to_copy.default(x, dtype=code).dtype == dtype


# ---- each function is its torch.ops.superkernel call, with torch_npu's return structure


def gmm_inputs(dtype=torch.float16):
    xs = [rand((8, 16), dtype), rand((5, 12), dtype)]
    ws = [rand((16, 6), dtype, -0.3, 0.3), rand((12, 4), dtype, -0.3, 0.3)]
    bs = [rand((6,), dtype), rand((4,), dtype)]
    return xs, ws, bs


def test_grouped_matmul_returns_a_list_equal_to_the_op():
    xs, ws, bs = gmm_inputs()
    got = torch_npu.npu_grouped_matmul(xs, ws, bias=bs, group_type=-1)
    assert isinstance(got, list) and len(got) == 2
    assert [tuple(t.shape) for t in got] == [(8, 6), (5, 4)]
    assert_bits_equal(got, sk.grouped_matmul(xs, ws, bias=bs, group_type=-1), "npu_grouped_matmul")
    # group_type None without a group_list is -1; output_dtype as a dtype or c10 code
    assert_bits_equal(torch_npu.npu_grouped_matmul(xs, ws, bias=bs), got, "group_type None")
    f32 = torch_npu.npu_grouped_matmul(xs, ws, group_type=-1, output_dtype=torch.float32)
    assert all(t.dtype == torch.float32 for t in f32)
    assert_bits_equal(torch_npu.npu_grouped_matmul(xs, ws, group_type=-1, output_dtype=6), f32, "output_dtype=6")


def test_grouped_matmul_int8_path():
    x, w = randint((6, 32), torch.int8, -100, 100), randint((32, 8), torch.int8, -100, 100)
    scale, pts = rand((8,), lo=0.001, hi=0.01), rand((6,), lo=0.5, hi=1.5)
    got = torch_npu.npu_grouped_matmul([x], [w], scale=[scale], per_token_scale=[pts], group_type=-1,
                                       output_dtype=torch.bfloat16)
    want = sk.grouped_matmul([x], [w], scale=[scale], per_token_scale=[pts], output_dtype=torch.bfloat16)
    assert got[0].dtype == torch.bfloat16
    assert_bits_equal(got, want, "int8 grouped_matmul")


def test_grouped_matmul_group_list_forms():
    x, w = rand((20, 8), torch.float16), rand((3, 8, 5), torch.float16, -0.5, 0.5)
    ends = [4, 11, 20]
    by_ints = torch_npu.npu_grouped_matmul([x], [w], group_list=ends, group_type=0, split_item=0)
    assert [tuple(t.shape) for t in by_ints] == [(4, 5), (7, 5), (9, 5)]
    assert_bits_equal(by_ints, sk.grouped_matmul([x], [w], group_type=0, group_list_ints=ends), "ints")
    # a tensor with split_item 0, eagerly: read once, the same as the ints
    t = torch.tensor(ends)
    assert_bits_equal(torch_npu.npu_grouped_matmul([x], [w], group_list=t, group_type=0), by_ints, "tensor s0")
    # split_item 3: the tensor goes to the run-time group_list input
    one = torch_npu.npu_grouped_matmul([x], [w], group_list=t, group_type=0, split_item=3)
    assert len(one) == 1 and one[0].shape == (20, 5)
    assert_bits_equal(one, sk.grouped_matmul([x], [w], group_list=t, group_type=0, split_item=3), "tensor s3")
    assert_bits_equal([one[0][4:11]], [by_ints[1]], "rows of group 1")
    # counts (group_list_type 1); group_type None with a group_list is 0
    counts = torch_npu.npu_grouped_matmul([x], [w], group_list=[4, 7, 9], group_list_type=1, split_item=2)
    assert_bits_equal(counts, one, "counts")
    # while tracing, a tensor's values are unknown: refused with a clear message
    with FakeTensorMode() as mode:
        with pytest.raises(NotImplementedError, match="group_list"):
            torch_npu.npu_grouped_matmul([mode.from_tensor(x)], [mode.from_tensor(w)],
                                         group_list=mode.from_tensor(t), group_type=0)


def test_moe_gating_top_k_returns_three_tensors_equal_to_the_op():
    x, bias = rand((16, 64), torch.float16, -3, 3), rand((64,), torch.float16, -0.1, 0.1)
    kw = dict(k=4, k_group=2, group_count=4, group_select_mode=1, norm_type=1)
    got = torch_npu.npu_moe_gating_top_k(x, bias=bias, routed_scaling_factor=2.5, out_flag=True, **kw)
    assert isinstance(got, tuple) and len(got) == 3
    y, idx, out = got
    assert (y.shape, y.dtype, idx.shape, idx.dtype, out.shape, out.dtype) == (
        (16, 4), torch.float16, (16, 4), torch.int32, (16, 64), torch.float32)
    want = sk.moe_gating_topk(x, bias, routed_scaling_factor=2.5, out_flag=1, **kw)
    assert_bits_equal(got, want, "npu_moe_gating_top_k")
    # defaults: softmax, no groups, k positional
    assert_bits_equal(torch_npu.npu_moe_gating_top_k(x, 3), sk.moe_gating_topk(x, k=3), "defaults")


def test_dequant_swiglu_quant_returns_two_tensors_equal_to_the_op():
    x = randint((12, 32), torch.int32, -500, 500)
    ws, acts, qs = rand((32,), lo=0.001, hi=0.01), rand((12, 1), lo=0.5, hi=1.5), rand((1, 16), lo=0.5, hi=1.5)
    got = torch_npu.npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=acts, quant_scale=qs,
                                             activate_left=False, quant_mode=1)
    assert isinstance(got, tuple) and len(got) == 2
    assert (got[0].shape, got[0].dtype, got[1].shape, got[1].dtype) == ((12, 16), torch.int8, (12,), torch.float32)
    assert_bits_equal(got, sk.dequant_swiglu_quant(x, ws, acts, None, qs, quant_mode=1), "dequant_swiglu_quant")
    left = torch_npu.npu_dequant_swiglu_quant(x, weight_scale=ws, quant_mode=1, activate_left=True)
    assert_bits_equal(left, sk.dequant_swiglu_quant(x, ws, activate_left=1, quant_mode=1), "activate_left")
    # torch_npu's accepted spellings of its defaults
    same = torch_npu.npu_dequant_swiglu_quant(x, weight_scale=ws, quant_mode=1, activate_left=True,
                                              dst_type=torch.int8, round_mode=0, activate_dim=-1)
    assert_bits_equal(same, left, "explicit defaults")


def test_dequant_swiglu_quant_flattens_leading_dimensions():
    x = randint((2, 6, 32), torch.int32, -500, 500)
    acts = rand((2, 6), lo=0.5, hi=1.5)
    y, scale = torch_npu.npu_dequant_swiglu_quant(x, activation_scale=acts, quant_mode=1)
    assert y.shape == (2, 6, 16) and scale.shape == (2, 6)
    y2, s2 = sk.dequant_swiglu_quant(x.reshape(12, 32), None, acts.reshape(12), quant_mode=1)
    assert_bits_equal([y, scale], [y2.reshape(2, 6, 16), s2.reshape(2, 6)], "3-D x")


def test_quant_matmul_returns_a_tensor_equal_to_the_op():
    x1, x2 = randint((6, 32), torch.int8, -100, 100), randint((3, 32, 8), torch.int8, -100, 100)
    scale = torch_npu.npu_trans_quant_param(torch.tensor([0.0123]))
    got = torch_npu.npu_quant_matmul(x1, x2, scale, output_dtype=torch.float16)
    assert isinstance(got, torch.Tensor) and got.shape == (3, 6, 8) and got.dtype == torch.float16
    assert_bits_equal([got], [sk.quant_matmul(x1, x2, scale, output_dtype=torch.float16)], "quant_matmul")
    # output_dtype None is int8 (torch_npu's default); c10 codes accepted
    i8 = torch_npu.npu_quant_matmul(x1, x2, scale)
    assert i8.dtype == torch.int8
    assert_bits_equal([torch_npu.npu_quant_matmul(x1, x2, scale, output_dtype=1)], [i8], "output_dtype=1")
    assert_bits_equal([torch_npu.npu_quant_matmul(x1, x2, scale, output_dtype=5)], [got], "output_dtype=5")
    # a transposed (non-contiguous) x2, as torch_npu users pass weights, is made dense
    x2t = x2.transpose(1, 2).contiguous().transpose(1, 2)
    assert not x2t.is_contiguous()
    assert_bits_equal([torch_npu.npu_quant_matmul(x1, x2t, scale, output_dtype=torch.float16)], [got], "x2.t")


def test_trans_quant_param():
    scale, offset = torch.tensor([0.5, 0.0123, -3.75]), torch.tensor([2.5, -1.0, 400.0])
    got = torch_npu.npu_trans_quant_param(scale, offset)
    assert got.dtype == torch.int64 and got.shape == (3,)
    assert torch.equal(got, torch.from_numpy(superkernel.trans_quant_param(scale.numpy(), offset.numpy())))
    # torch_npu's meta rule: a one-element side broadcasts; (1, n) keeps its shape
    one = torch_npu.npu_trans_quant_param(torch.tensor([0.25]), offset)
    assert torch.equal(one, torch_npu.npu_trans_quant_param(torch.full((3,), 0.25), offset))
    assert torch_npu.npu_trans_quant_param(scale.reshape(1, 3)).shape == (1, 3)
    with pytest.raises(NotImplementedError, match="round_mode"):
        torch_npu.npu_trans_quant_param(scale, round_mode=1)


# ---- unsupported arguments: NotImplementedError naming them, never ignored

X16, W16 = rand((4, 8), torch.float16), rand((8, 4), torch.float16)
XI32 = randint((4, 16), torch.int32, -100, 100)
X1, X2 = randint((4, 16), torch.int8, -9, 9), randint((16, 4), torch.int8, -9, 9)
T = torch.ones(4)

UNSUPPORTED = [
    ("npu_grouped_matmul", ([X16], [W16]), "antiquant_scale", [T]),
    ("npu_grouped_matmul", ([X16], [W16]), "antiquant_offset", [T]),
    ("npu_grouped_matmul", ([X16], [W16]), "activation_input", [T]),
    ("npu_grouped_matmul", ([X16], [W16]), "activation_quant_scale", [T]),
    ("npu_grouped_matmul", ([X16], [W16]), "activation_quant_offset", [T]),
    ("npu_grouped_matmul", ([X16], [W16]), "act_type", 1),
    ("npu_grouped_matmul", ([X16], [W16]), "tuning_config", [0]),
    ("npu_grouped_matmul", ([X16], [W16]), "x_dtype", torch.float16),
    ("npu_grouped_matmul", ([X16], [W16]), "weight_dtype", 5),
    ("npu_grouped_matmul", ([X16], [W16]), "scale_dtype", 6),
    ("npu_grouped_matmul", ([X16], [W16]), "per_token_scale_dtype", 6),
    ("npu_grouped_matmul", ([X16], [W16]), "output_dtype", 7),  # float64: no superkernel dtype
    ("npu_moe_gating_top_k", (X16, 2), "input_ids", T),
    ("npu_moe_gating_top_k", (X16, 2), "tid2eid", T),
    ("npu_dequant_swiglu_quant", (XI32,), "dst_type", torch.float16),
    ("npu_dequant_swiglu_quant", (XI32,), "round_mode", 1),
    ("npu_dequant_swiglu_quant", (XI32,), "activate_dim", 0),
    ("npu_dequant_swiglu_quant", (XI32,), "swiglu_mode", 1),
    ("npu_dequant_swiglu_quant", (XI32,), "clamp_limit", 5.0),
    ("npu_dequant_swiglu_quant", (XI32,), "glu_alpha", 1.0),
    ("npu_dequant_swiglu_quant", (XI32,), "glu_bias", 0.5),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "x1_dtype", 1),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "x2_dtype", 1),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "pertoken_scale_dtype", 6),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "scale_dtype", 6),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "group_sizes", [1, 1, 16]),
    ("npu_quant_matmul", (X1, X2, torch.ones(1)), "y_scale", T),
]


@pytest.mark.parametrize("fn,args,name,value", UNSUPPORTED, ids=[f"{u[0]}-{u[2]}" for u in UNSUPPORTED])
def test_unsupported_argument_raises_naming_it(fn, args, name, value):
    with pytest.raises(NotImplementedError, match=name):
        getattr(torch_npu, fn)(*args, **{name: value})


def test_every_unsupported_argument_is_tested():
    """Each parameter that is neither forwarded to the op nor a torch_npu
    default-only spelling appears in UNSUPPORTED."""
    forwarded = {
        "npu_grouped_matmul": {"x", "weight", "bias", "scale", "offset", "per_token_scale", "group_list",
                               "split_item", "group_type", "group_list_type", "output_dtype"},
        "npu_moe_gating_top_k": {"x", "k", "bias", "k_group", "group_count", "group_select_mode", "renorm",
                                 "norm_type", "out_flag", "routed_scaling_factor", "eps"},
        "npu_dequant_swiglu_quant": {"x", "weight_scale", "activation_scale", "bias", "quant_scale",
                                     "quant_offset", "group_index", "activate_left", "quant_mode"},
        "npu_quant_matmul": {"x1", "x2", "scale", "offset", "pertoken_scale", "bias", "output_dtype"},
    }
    tested = {(u[0], u[2]) for u in UNSUPPORTED}
    for fn, names in forwarded.items():
        for p in inspect.signature(getattr(torch_npu, fn)).parameters:
            assert p in names or (fn, p) in tested, f"{fn}: argument {p} neither forwarded nor tested"


# ---- the seed's example01 forward (shared/spec/models.md)


def seed_inputs():
    rng = np.random.default_rng(0)

    def u(shape, dtype, lo=-1.0, hi=1.0):
        return torch.from_numpy(rng.uniform(lo, hi, shape).astype(np.float32)).to(dtype)

    f16 = torch.float16
    return dict(
        gmm1_x=[u((64, 128), f16), u((256, 180), f16)],
        gmm1_weight=[u((128, 64), f16, -0.1, 0.1), u((180, 320), f16, -0.1, 0.1)],
        gmm1_bias=[u((64,), f16), u((320,), f16)],
        gmm2_weight=[u((64, 56), f16, -0.1, 0.1), u((320, 256), f16, -0.1, 0.1)],
        moe1_bias=u((256,), f16),
        dsq_input=[u((128,), torch.float32, 0, 1), u((48, 1), torch.float32, 0, 1), u((1, 64), torch.float32, 0, 1)],
        data1=torch.from_numpy(rng.integers(0, 16, (4, 8, 128)).astype(np.int32)),
        data2=torch.from_numpy(rng.integers(-128, 128, (6, 64, 64)).astype(np.int8)),
        scale=torch_npu.npu_trans_quant_param(torch.tensor([0.001])),
    )


def seed_forward(gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale):
    """The seed's forward, torch_npu calls exactly as the seed spells them."""
    grouped_matmul_01 = torch_npu.npu_grouped_matmul(group_type=-1, x=gmm1_x, weight=gmm1_weight, bias=gmm1_bias)
    grouped_matmul_02 = torch_npu.npu_grouped_matmul(group_type=-1, x=grouped_matmul_01, weight=gmm2_weight)
    moe_gating_top_k_01 = torch_npu.npu_moe_gating_top_k(
        x=grouped_matmul_02[1], bias=moe1_bias, k=8, k_group=4, group_count=8, group_select_mode=1, norm_type=1)
    reshape_01 = torch.reshape(moe_gating_top_k_01[1], (2, 8, 128))
    square_01 = torch.square(reshape_01)
    concat_01 = torch.cat((square_01, data1), dim=0)
    reshape_02 = torch.reshape(concat_01, (-1, 128))
    dequant_swiglu_quant_01 = torch_npu.npu_dequant_swiglu_quant(
        x=reshape_02, weight_scale=dsq_input[0], activation_scale=dsq_input[1], bias=None,
        quant_scale=dsq_input[2], quant_offset=None, group_index=None, activate_left=False, quant_mode=1)
    quant_matmul_01 = torch_npu.npu_quant_matmul(
        x1=dequant_swiglu_quant_01[0], x2=data2, scale=scale, offset=None, bias=None, pertoken_scale=None,
        output_dtype=torch.float16)
    return quant_matmul_01


def ops_forward(gmm1_x, gmm1_weight, gmm1_bias, gmm2_weight, moe1_bias, dsq_input, data1, data2, scale):
    """The same forward written with torch.ops.superkernel directly."""
    g1 = sk.grouped_matmul(gmm1_x, gmm1_weight, gmm1_bias)
    g2 = sk.grouped_matmul(g1, gmm2_weight)
    _, idx, _ = sk.moe_gating_topk(g2[1], moe1_bias, k=8, k_group=4, group_count=8, group_select_mode=1,
                                   norm_type=1)
    r2 = torch.cat((torch.square(idx.reshape(2, 8, 128)), data1)).reshape(-1, 128)
    q, _ = sk.dequant_swiglu_quant(r2, dsq_input[0], dsq_input[1], None, dsq_input[2], quant_mode=1)
    return sk.quant_matmul(q, data2, scale, output_dtype=torch.float16)


def test_seed_forward_runs_and_equals_the_ops():
    inputs = seed_inputs()
    out = seed_forward(**inputs)
    assert out.shape == (6, 48, 64) and out.dtype == torch.float16
    assert bool(torch.isfinite(out).all()) and out.abs().max() > 0
    assert_bits_equal([out], [ops_forward(**inputs)], "seed forward")


def test_seed_forward_traces_whole_under_torch_compile():
    """fullgraph=True: no graph break; every torch_npu call is one
    torch.ops.superkernel node in the captured graph."""
    captured = []

    def backend(gm, example_inputs):
        captured.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm.forward

    inputs = seed_inputs()
    torch._dynamo.reset()
    compiled = torch.compile(seed_forward, backend=backend, fullgraph=True, dynamic=False)
    out = compiled(**inputs)
    assert_bits_equal([out], [seed_forward(**inputs)], "compiled seed forward")
    assert len(captured) == 1
    sk_nodes = [t for t in captured[0] if t.startswith("superkernel.")]
    assert [t.split(".")[1] for t in sk_nodes] == [
        "grouped_matmul", "grouped_matmul", "moe_gating_topk", "dequant_swiglu_quant", "quant_matmul"]
