"""torch.ops.superkernel.*: every library op, run eagerly through torch, is
bit for bit the library's plain reference implementation; its fake kernel
gives the eager output shapes and dtypes; shape errors surface while
tracing with the library's message.

The cases: the shared case table (tests/cases/ops.cases, read by
_cases.py; the C conformance test runs the same file), then the dtype sweeps
of the generators below. The op list comes from the library
(superkernel.op_names()): an op without a case in the table fails
test_every_op_has_a_table_case, so a new op is covered or the suite says
where to add one.
"""

import pytest
import torch
from _cases import read_cases
from _helpers import as_list, assert_bits_equal, reference_outputs
from torch._subclasses.fake_tensor import FakeTensorMode

import superkernel
from superkernel import torch_ops

GEN = torch.Generator().manual_seed(1234)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def rand(shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    if dtype == torch.bool:
        return torch.rand(shape, generator=GEN) < 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=GEN) * (hi - lo) + lo).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(int(lo), info.min), min(int(hi), info.max)
    return torch.randint(lo, hi + 1, shape, generator=GEN, dtype=torch.int64).to(dtype)


def ints(shape, dtype, lo=-100, hi=100):
    return rand(shape, dtype, lo, hi)


# ---- case generators: op -> list of (id, slots, attrs) in the library's terms
# slots {slot: tensor or [tensors]}, attrs {library attribute: value}. The
# views, elementwise ops and casts are swept in the shared table
# (tests/cases/ops.cases); what stays here needs tensors a line cannot say
# (group lists, packed scales, routing ids built from each other).


def gen_grouped_matmul():
    cases = []
    for d in FLOATS:
        xs = [rand((8, 16), d), rand((2, 3, 12), d)]
        ws = [rand((16, 10), d, -0.3, 0.3), rand((12, 6), d, -0.3, 0.3)]
        bs = [rand((10,), d), rand((6,), d)]
        cases.append((f"{d}-groups", {"x": xs, "weight": ws, "bias": bs}, {}))
    cases.append(("fp16-to-fp32", {"x": [rand((5, 8), torch.float16)], "weight": [rand((8, 4), torch.float16)]},
                  {"output_dtype": torch.float32}))
    x8, w8 = ints((12, 32), torch.int8), ints((32, 16), torch.int8)
    cases.append(("int8-int32", {"x": [x8], "weight": [w8], "bias": [ints((16,), torch.int32, -1000, 1000)]}, {}))
    cases.append((
        "int8-fp16",
        {"x": [x8], "weight": [w8], "scale": [rand((16,), lo=0.001, hi=0.01)],
         "per_token_scale": [rand((12,), lo=0.5, hi=1.5)]},
        {"output_dtype": torch.float16},
    ))
    cases.append((
        "int8-bf16-offset",
        {"x": [x8], "weight": [w8], "scale": [rand((16,), lo=0.001, hi=0.01)], "offset": [rand((16,))]},
        {"output_dtype": torch.bfloat16},
    ))
    xe, we = rand((20, 8), torch.float16), rand((3, 8, 5), torch.float16, -0.5, 0.5)
    cases.append(("moe-ints-split0", {"x": [xe], "weight": [we]},
                  {"group_type": 0, "group_list": [4, 11, 17], "split_item": 0}))
    cases.append(("moe-counts-split3", {"x": [xe], "weight": [we]},
                  {"group_type": 0, "group_list": [4, 7, 6], "group_list_type": 1, "split_item": 3}))
    cases.append(("moe-tensor-split2", {"x": [xe], "weight": [we], "group_list": torch.tensor([5, 9, 20])},
                  {"group_type": 0, "split_item": 2}))
    return cases


def gen_moe_gating_topk():
    cases = []
    for d in FLOATS:
        cases.append((f"{d}-seed", {"x": rand((16, 64), d, -3, 3), "bias": rand((64,), d, -0.1, 0.1)},
                      {"k": 4, "k_group": 2, "group_count": 4, "group_select_mode": 1, "norm_type": 1}))
        cases.append((f"{d}-softmax", {"x": rand((9, 32), d, -3, 3)},
                      {"k": 3, "renorm": 1, "routed_scaling_factor": 2.5, "out_flag": 1}))
    return cases


def gen_dequant_swiglu_quant():
    cases = [(
        "int32-dynamic",
        {"x": ints((12, 32), torch.int32, -500, 500), "weight_scale": rand((32,), lo=0.001, hi=0.01),
         "activation_scale": rand((12, 1), lo=0.5, hi=1.5), "quant_scale": rand((1, 16), lo=0.5, hi=1.5)},
        {"quant_mode": 1},
    )]
    for d in FLOATS:
        cases.append((f"{d}-static-left", {"x": rand((6, 20), d, -4, 4), "quant_scale": torch.tensor([0.05]),
                                           "quant_offset": torch.tensor([1.0])},
                      {"quant_mode": 0, "activate_left": 1}))
    cases.append((
        "groups",
        {"x": ints((10, 16), torch.int32, -300, 300), "weight_scale": rand((2, 16), lo=0.001, hi=0.01),
         "group_index": torch.tensor([4, 5])},
        {"quant_mode": 1},
    ))
    return cases


def gen_quant_matmul():
    x1, x2 = ints((6, 32), torch.int8), ints((2, 32, 8), torch.int8)
    packed = torch.from_numpy(superkernel.trans_quant_param([0.0123], [3.0]))
    return [
        ("fp16-packed", {"x1": x1, "x2": x2, "scale": packed}, {"output_dtype": torch.float16}),
        ("bf16-pertoken", {"x1": x1, "x2": x2, "scale": rand((8,), lo=0.001, hi=0.01),
                           "pertoken_scale": rand((6,), lo=0.5, hi=1.5), "bias": ints((8,), torch.int32)},
         {"output_dtype": torch.bfloat16}),
        ("int8-offset", {"x1": x1, "x2": x2, "scale": rand((8,), lo=0.001, hi=0.01), "offset": rand((8,), lo=-3, hi=3)},
         {}),
        ("int32", {"x1": x1, "x2": x2}, {"output_dtype": torch.int32}),
    ]


def gen_rms_norm():
    return [
        (f"{d}", {"x": rand((6, 40), d, -3, 3), "gamma": rand((40,), d, 0.5, 1.5)}, {"epsilon": 1e-5})
        for d in FLOATS
    ] + [("fp16-fp32-gamma", {"x": rand((2, 3, 17), torch.float16), "gamma": rand((17,))}, {})]


def gen_add_rms_norm():
    return [
        (f"{d}", {"x1": rand((5, 24), d, -3, 3), "x2": rand((5, 24), d, -3, 3), "gamma": rand((24,), d, 0.5, 1.5)}, {})
        for d in FLOATS
    ]


def gen_swiglu():
    return [(f"{d}-dim{dim}", {"x": rand((4, 6, 8), d, -4, 4)}, {"dim": dim}) for d in FLOATS for dim in (-1, 1)]


def gen_moe_init_routing():
    ids = torch.randint(0, 8, (9, 3), generator=GEN, dtype=torch.int32)
    return [
        (f"{d}", {"x": rand((9, 16), d), "expert_idx": ids}, {"expert_num": 8}) for d in FLOATS
    ] + [
        ("dynamic-gather-range", {"x": rand((9, 16), torch.float16), "expert_idx": ids},
         {"expert_num": 8, "quant_mode": 1, "row_idx_type": 1, "active_expert_range": [1, 6], "expert_tokens_num_type": 1}),
        ("scale-active", {"x": rand((9, 16)), "expert_idx": ids, "scale": rand((9,))}, {"expert_num": 8, "active_num": 20}),
    ]


def gen_moe_finalize_routing():
    n, k, h, e = 7, 2, 12, 4
    perm = torch.randperm(n * k, generator=GEN).to(torch.int32)
    cases = []
    for d in FLOATS:
        cases.append((f"{d}-full", {
            "expanded_permuted_rows": rand((n * k, h), d), "skip1": rand((n, h), d), "skip2": rand((n, h), d),
            "bias": rand((e, h), d), "scales": rand((n, k)), "expanded_src_to_dst_row": perm,
            "export_for_source_row": torch.randint(0, e, (n, k), generator=GEN, dtype=torch.int32)}, {}))
    cases.append(("row-order", {"expanded_permuted_rows": rand((n * k, h)), "expanded_src_to_dst_row": perm},
                  {"drop_pad_mode": 2, "k": k}))
    return cases


def gen_moe_gating_topk_softmax():
    return [(f"{d}-renorm{r}", {"x": rand((10, 32), d, -3, 3)}, {"k": 4, "renorm": r}) for d in FLOATS for r in (0, 1)]


def gen_linear():
    return [
        (f"{d}", {"x": rand((3, 5, 24), d), "weight": rand((18, 24), d), "bias": rand((18,), d)}, {}) for d in FLOATS
    ] + [("no-bias", {"x": rand((9, 8)), "weight": rand((40, 8))}, {})]


GENERATORS = {name[4:]: fn for name, fn in dict(globals()).items() if name.startswith("gen_") and callable(fn)}


def builtin_ops():
    return superkernel.op_names()


def test_every_op_has_a_table_case():
    in_table = {op for _cid, op, _what, _slots, _attrs in read_cases()}
    missing = [op for op in builtin_ops() if op not in in_table]
    assert not missing, f"ops without a case in tests/cases/ops.cases: {missing}; add one"


def test_every_op_has_a_torch_op():
    untorched = [op for op in builtin_ops() if op not in torch_ops.SPECS]
    assert not untorched, f"library ops without a torch op: {untorched}"
    stale = [op for op in GENERATORS if op not in builtin_ops()]
    assert not stale, f"generators for ops the library does not have: {stale}"


def torch_call(op, slots, attrs):
    """(args, kwargs) of torch.ops.superkernel.<op> for a case: slots by
    name, attributes renamed as torch_ops.OpSpec documents (an attribute
    sharing a slot's name is <name>_ints)."""
    kwargs = dict(slots)
    for name, value in attrs.items():
        kwargs[f"{name}_ints" if name in slots or name in _slot_names(op) else name] = value
    return kwargs


def _slot_names(op):
    return {s.name for s in superkernel.op_schema(op).inputs}


def all_cases():
    """The shared case table's cases (tests/cases/ops.cases, which the C
    conformance test runs too), then this file's dtype sweeps."""
    for cid, op, _what, slots, attrs in read_cases():
        yield pytest.param(op, slots, attrs, id=f"{op}-{cid}")
    for op in builtin_ops():
        gen = GENERATORS.get(op)
        for cid, slots, attrs in gen() if gen else []:
            yield pytest.param(op, slots, attrs, id=f"{op}-{cid}")


CASES = list(all_cases())


@pytest.mark.parametrize("op,slots,attrs", CASES)
def test_eager_equals_reference(op, slots, attrs):
    got = as_list(getattr(torch.ops.superkernel, op)(**torch_call(op, slots, attrs)))
    want = reference_outputs(op, slots, attrs)
    assert_bits_equal(got, want, f"torch.ops.superkernel.{op}")


def test_every_op_and_dtype_path_has_cases():
    covered = {p.values[0] for p in CASES}
    assert covered == set(builtin_ops())
    # several dtypes where the op has them
    for op in ("square", "add", "mul", "cast", "grouped_matmul", "moe_gating_topk", "dequant_swiglu_quant"):
        dtypes = {t.dtype for p in CASES if p.values[0] == op for v in p.values[1].values() for t in as_list(v)}
        assert {torch.float16, torch.bfloat16, torch.float32} <= dtypes, (op, dtypes)
    gmm = {t.dtype for p in CASES if p.values[0] == "grouped_matmul" for t in p.values[1]["x"]}
    assert torch.int8 in gmm


@pytest.mark.parametrize("op,slots,attrs", CASES)
def test_fake_shapes_equal_eager(op, slots, attrs):
    eager = as_list(getattr(torch.ops.superkernel, op)(**torch_call(op, slots, attrs)))
    with FakeTensorMode() as mode:
        fake_slots = {k: [mode.from_tensor(t) for t in v] if isinstance(v, list) else mode.from_tensor(v)
                      for k, v in slots.items()}
        fake = as_list(getattr(torch.ops.superkernel, op)(**torch_call(op, fake_slots, attrs)))
    assert [(tuple(t.shape), t.dtype) for t in fake] == [(tuple(t.shape), t.dtype) for t in eager]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: torch.ops.superkernel.grouped_matmul([torch.empty(4, 8)], [torch.empty(9, 3)]), "weight[0] rows"),
        (lambda: torch.ops.superkernel.add(torch.empty(4, 3), torch.empty(5, 2)), "broadcast"),
        (lambda: torch.ops.superkernel.moe_gating_topk(torch.empty(2, 3, 8), k=2), "x"),
        (lambda: torch.ops.superkernel.reshape(torch.empty(4, 3), shape=[5, -1]), "reshape"),
    ],
    ids=["gmm-K", "add-broadcast", "moe-rank", "reshape-count"],
)
def test_shape_error_in_fake_mode_carries_library_message(call, message):
    with FakeTensorMode():
        with pytest.raises(superkernel.SuperkernelError) as fake_err:
            call()
    # the same check, the same message, eagerly
    with pytest.raises(superkernel.SuperkernelError) as eager_err:
        call()
    assert message in str(fake_err.value), str(fake_err.value)
    assert str(fake_err.value) == str(eager_err.value)
    assert isinstance(fake_err.value, (ValueError, TypeError))


def test_trans_quant_param_equals_library():
    scale = torch.tensor([0.5, 1e-3, -2.75, 3.3e-5])
    offset = torch.tensor([1.4, -2.5, 300.0, -7.0])
    got = torch.ops.superkernel.trans_quant_param(scale, offset)
    want = torch.from_numpy(superkernel.trans_quant_param(scale.numpy(), offset.numpy()))
    assert got.dtype == torch.int64 and torch.equal(got, want)
    got = torch.ops.superkernel.trans_quant_param(scale)
    assert torch.equal(got, torch.from_numpy(superkernel.trans_quant_param(scale.numpy())))
    # the packed fields (docs/ops.md): 19-bit scale, flag bit 46, 9-bit offset
    bits = scale.view(torch.int32).to(torch.int64) & 0xFFFFE000
    assert torch.equal(got & 0xFFFFFFFF, bits & 0xFFFFFFFF)
    assert bool(((got >> 46) & 1).all())
    with FakeTensorMode() as mode:
        fake = torch.ops.superkernel.trans_quant_param(mode.from_tensor(scale))
    assert fake.shape == scale.shape and fake.dtype == torch.int64
    with pytest.raises(ValueError, match="offset"):
        torch.ops.superkernel.trans_quant_param(scale, offset[:2])


def test_call_errors_name_the_argument():
    with pytest.raises(superkernel.InvalidAttributeError, match="norm_type"):
        torch.ops.superkernel.moe_gating_topk(torch.ones(2, 8), k=2, norm_type=5)
    with pytest.raises(superkernel.InvalidDtypeError, match="y") as err:
        torch.ops.superkernel.add(torch.ones(2), torch.ones(2, dtype=torch.int32))
    assert isinstance(err.value, TypeError)
    # a strided tensor is taken, as torch ops take them
    x = torch.arange(12.0).reshape(4, 3).t()
    assert torch.equal(torch.ops.superkernel.square(x), x * x)
    # the process stays usable
    assert torch.equal(torch.ops.superkernel.square(torch.tensor([3.0])), torch.tensor([9.0]))


def test_gelu_is_torchs_tanh_gelu():
    """The library's gelu is the tanh form of torch's GELU: within 1e-6 of
    it in fp32 over [-8, 8], and exactly 0 at 0 (docs/ops.md)."""
    x = torch.linspace(-8, 8, 20001)
    got = torch.ops.superkernel.gelu(x)
    want = torch.nn.functional.gelu(x, approximate="tanh")
    assert (got - want).abs().max().item() < 1e-6
    assert torch.ops.superkernel.gelu(torch.zeros(3)).eq(0).all()
