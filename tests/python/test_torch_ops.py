"""torch.ops.superkernel.*: every library op, run eagerly through torch, is
bit for bit the library's plain reference implementation; its fake kernel
gives the eager output shapes and dtypes; shape errors surface while
tracing with the library's message.

The cases: the shared case table (tests/cases/ops.cases, read by
_cases.py), the only source of cases: the C conformance test runs the same
lines on every executor and team size, so a case an op needs goes there. The
op list comes from the library (superkernel.op_names()): an op without a
case in the table fails test_every_op_has_a_table_case, so a new op is
covered or the suite says where to add one.
"""

import pytest
import torch
from _cases import read_cases
from _helpers import as_list, assert_bits_equal, reference_outputs
from torch._subclasses.fake_tensor import FakeTensorMode

import superkernel
from superkernel import torch_ops


def builtin_ops():
    return superkernel.op_names()


def test_every_op_has_a_table_case():
    in_table = {op for _cid, op, _what, _slots, _attrs in read_cases()}
    missing = [op for op in builtin_ops() if op not in in_table]
    assert not missing, f"ops without a case in tests/cases/ops.cases: {missing}; add one"


def test_every_op_has_a_torch_op():
    untorched = [op for op in builtin_ops() if op not in torch_ops.SPECS]
    assert not untorched, f"library ops without a torch op: {untorched}"


@pytest.mark.parametrize(
    "line,message",
    [
        ("add | too few | x: int32[3] =1,2; y: int32[3]", "2 values for 3 elements"),
        ("add | too many | x: int32[2] =1,2,3; y: int32[2]", "3 values for 2 elements"),
        ("add | garbage | x: fp32[2] =1.5,abc; y: fp32[2]", "'abc'"),
        ("add | empty value | x: fp32[3] =1,,2; y: fp32[3]", "''"),
        ("add | fraction for an int | x: int32[2] =1,2.5; y: int32[2]", "'2.5'"),
        ("add | int8 out of range | x: int8[2] =1,128; y: int8[2]", "'128'"),
        ("add | bool 2 | x: bool[2] =0,2; y: bool[2]", "'2'"),
        ("add | hex float | x: fp32[1] =0x1p-3; y: fp32[1]", "'0x1p-3'"),
        ("add | nan | x: fp32[1] =nan; y: fp32[1]", "'nan'"),
        ("add | fp16 overflow | x: fp16[1] =70000; y: fp16[1]", "'70000'"),
        ("add | before the tensor | x: =1 fp32[1]; y: fp32[1]", "follow the one tensor"),
        ("add | twice | x: fp32[2] =1,2 =1,2; y: fp32[2]", "follow the one tensor"),
        ("add | with a range | x: fp32[2] =1,2 @0..1; y: fp32[2]", "no range"),
        ("concat | a list slot of two | x: fp16[1,2] fp16[1,2] =1,2 | dim=0", "follow the one tensor"),
        ("concat | a tensor after them | x: fp16[1,2] =1,2 fp16[1,2] | dim=0", "one tensor and no range"),
    ],
)
def test_table_literal_values_refuse_bad_lines(tmp_path, line, message):
    """The Python reader refuses what the C reader refuses (test_schema_edges's
    test_table_reader_refuses_bad_lines), naming the file and line."""
    path = tmp_path / "bad.cases"
    path.write_text(f"# one bad line\n{line}\n")
    with pytest.raises(ValueError, match=r"bad\.cases:2: ") as err:
        read_cases(path=str(path))
    assert message in str(err.value), str(err.value)


def test_table_literal_values_fill_the_tensor(tmp_path):
    path = tmp_path / "ok.cases"
    path.write_text("grouped_matmul | ok | x: fp16[20,8]; weight: fp16[3,8,5]; group_list: int64[3] =5,9,20 "
                    "| group_type=0\nadd | ok | x: fp16[2,1] =0.05,-1e-3; y: fp16[2,1] @0..1\n")
    (_, _, _, gmm, _), (_, _, _, add, _) = read_cases(path=str(path))
    assert gmm["group_list"].dtype == torch.int64 and gmm["group_list"].tolist() == [5, 9, 20]
    assert add["x"].shape == (2, 1) and add["x"].view(torch.int16).flatten()[0].item() == 0x2A66
    assert torch.equal(add["x"], torch.tensor([[0.05], [-1e-3]]).to(torch.float16))


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
    conformance test runs too)."""
    for cid, op, _what, slots, attrs in read_cases():
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
