"""FX nodes as library ops: which nodes of an ATen graph the library runs
with exactly torch eager's bits, and their (op, slots, attrs).

"Exactly" is bit for bit except which NaN a NaN result is (its sign and
payload: torch's own depend on its code path; backend/__init__.py).

A node is taken when
  - it calls torch.ops.superkernel.<op> (translated with torch_ops.SPECS),
    or an ATen op with an exact library equivalent (below);
  - the library supports it on these dtypes and shapes (sk_op_supported);
  - the library's output dtypes and shapes equal the traced ones, and the
    traced outputs are contiguous (a library output is a dense tensor).
Everything else runs in torch.

ATen ops mapped, and why they give torch's bits:
  view / _unsafe_view / reshape     -> reshape    (a view: no arithmetic)
  unsqueeze, squeeze (.default/.dim/.dims)          (views)
  slice.Tensor on dim 0, step 1     -> slice      (a view)
  cat                               -> concat     (one dtype: a copy)
  mul.Tensor(x, x), square, pow.Tensor_Scalar(x, 2) -> square
  mul.Tensor / add.Tensor (alpha 1) -> mul / add  (one dtype; a Python
        number as the attribute `scalar`: torch and the library both compute
        in fp32 and round once, with the scalar rounded to fp32 — except
        that torch's fp16 / bf16 add rounds the scalar to that dtype first,
        so the attribute is rounded so too; integers: exact wrapping
        arithmetic)
  _to_copy(dtype only), prims.convert_element_type -> cast, except where
        torch's conversion is not the library's: float -> integer (out of
        range torch's result is undefined, the library saturates) and int32
        / int64 -> bf16 (torch rounds twice, through fp32).
  argmax over the last dimension    -> argmax     (an exact comparison: the
        same index, the first NaN and the lowest index on ties, as torch)
  embedding (float weight)          -> embedding  (a copy of rows;
        padding_idx changes only gradients; an id out of range fails the run
        with the library's error where torch raises IndexError)

Opt-in: ATen ops whose library op has its own exact contract, a fixed
order of fp32 arithmetic within a documented tolerance of torch
(docs/ops.md) but not torch's bits, are mapped only with
CompilerConfig(torch_bits=False) (translate(node, torch_bits=False)):
  _softmax (half_to_float False) / softmax.int (no other dtype), over the
        last dimension              -> softmax    (the library's exp and its
        fixed 16-lane sum are not torch's)
  _scaled_dot_product_flash_attention_for_cpu (what AOTAutograd leaves of
        F.scaled_dot_product_attention on the CPU), the cases the library's
        attention computes          -> attention  (rewritten before
        partitioning by backend/attention.py into torch.ops.superkernel.attention
        and the layout changes around it)
They are opt-in because the backend's promise is torch eager's bits: with
torch_bits=True (the default) they run in torch, and a model asks for the
library's arithmetic with torch.ops.superkernel.softmax / .attention.

Not mapped, whatever torch_bits says: sigmoid (the library's exp is not
torch's, and below x = -88.72 torch gives 0 where the library keeps a
subnormal: torch.ops.superkernel.sigmoid asks for the library's);
split / split_with_sizes (torch's parts are views, non-contiguous along
any dimension but the first, where the library's are dense copies:
torch.ops.superkernel.split asks for those).
"""

import operator

import torch

from .. import schema
from ..dtypes import DType, to_dtype, to_torch

aten = torch.ops.aten
prims = torch.ops.prims

VIEW_OPS = frozenset({"reshape", "slice", "squeeze", "unsqueeze"})
_FLOATS = frozenset({DType.FP32, DType.FP16, DType.BF16})
_MAX_EXACT_INT = 2**53


class Unsupported(Exception):
    """Why a node stays in torch (its message)."""


def node_val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def tensor_meta(node):
    """(DType, shape) of a node's tensor value; Unsupported otherwise."""
    val = node_val(node)
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"{node.name} is not a tensor")
    if val.device.type != "cpu":
        raise Unsupported(f"{node.name} is on {val.device}; the library runs on the CPU")
    try:
        dtype = to_dtype(val.dtype)
    except TypeError as e:
        raise Unsupported(str(e)) from None
    shape = tuple(val.shape)
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported(f"{node.name} has a symbolic shape {shape}")
    return dtype, shape


def _ints(values, what):
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise Unsupported(f"{what} {list(values)} is not a list of ints")
    return [int(v) for v in values]


def _number_attr(op, x, scalar):
    """The `scalar` attribute for x op scalar, when it means exactly that."""
    if isinstance(scalar, bool) or not isinstance(scalar, (int, float)):
        raise Unsupported(f"scalar {scalar!r} is not an int or float")
    dtype, _ = tensor_meta(x)
    if dtype in (DType.FP16, DType.BF16) and op == "add":
        # torch's add rounds the scalar to the tensor's dtype first (its mul
        # keeps it in fp32, as the library does for both)
        return {"scalar": float(torch.tensor(float(scalar), dtype=to_torch(dtype)).item())}
    if dtype in _FLOATS:
        return {"scalar": float(scalar)}
    if dtype == DType.BOOL or not isinstance(scalar, int) or abs(scalar) >= _MAX_EXACT_INT:
        raise Unsupported(f"scalar {scalar!r} with a {dtype} tensor")
    return {"scalar": float(scalar)}


def _binary(op, node):
    x, y = node.args[0], node.args[1]
    if not isinstance(x, torch.fx.Node):
        raise Unsupported("the first operand is not a tensor")
    if op == "add":
        alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
        if alpha != 1 or isinstance(alpha, bool):
            raise Unsupported(f"add with alpha={alpha!r}")
    if isinstance(y, torch.fx.Node):
        if op == "mul" and y is x:
            return "square", {"x": x}, {}
        return op, {"x": x, "y": y}, {}
    return op, {"x": x}, _number_attr(op, x, y)


def _cast_is_exact(src, dst):
    if src in _FLOATS and dst not in _FLOATS and dst != DType.BOOL:
        return False  # float -> integer: undefined in torch out of range
    if src in (DType.INT32, DType.INT64) and dst == DType.BF16:
        return False  # torch rounds through fp32 first
    return True


_TO_COPY_OK = {
    "dtype": None,
    "layout": (None, torch.strided),
    "device": (None, torch.device("cpu"), "cpu"),
    "pin_memory": (None, False),
    "non_blocking": (False,),
    "memory_format": (None, torch.preserve_format, torch.contiguous_format),
}


def _cast(node):
    x = node.args[0]
    if node.target == prims.convert_element_type.default:
        dtype = node.args[1]
    else:
        for key, value in node.kwargs.items():
            allowed = _TO_COPY_OK.get(key, ())
            if allowed is not None and value not in allowed:
                raise Unsupported(f"_to_copy with {key}={value!r}")
        dtype = node.kwargs.get("dtype")
        if dtype is None or len(node.args) > 1:
            raise Unsupported("_to_copy without a dtype")
    src, _ = tensor_meta(x)
    try:
        dst = to_dtype(dtype)
    except TypeError as e:
        raise Unsupported(str(e)) from None
    if not _cast_is_exact(src, dst):
        raise Unsupported(f"cast {src} -> {dst} differs from torch's conversion")
    return "cast", {"x": x}, {"dtype": int(dst)}


def _slice(node):
    x = node.args[0]
    args = list(node.args[1:]) + [None] * (4 - len(node.args[1:]))
    dim, start, end, step = args[:4]
    dim = node.kwargs.get("dim", 0 if dim is None else dim)
    start = node.kwargs.get("start", start)
    end = node.kwargs.get("end", end)
    step = node.kwargs.get("step", 1 if step is None else step)
    _, shape = tensor_meta(x)
    if step != 1 or dim not in (0, -len(shape)):
        raise Unsupported(f"slice on dim {dim} with step {step} (only dim 0, step 1)")
    attrs = {}
    for name, value in (("start", start), ("end", end)):
        if value is not None:
            attrs[name] = _ints([value], name)[0]
    return "slice", {"x": x}, attrs


def _squeeze(node):
    x = node.args[0]
    if node.target == aten.squeeze.default:
        return "squeeze", {"x": x}, {}
    dims = node.args[1] if len(node.args) > 1 else node.kwargs["dim"]
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    return "squeeze", {"x": x}, {"dims": _ints(dims, "dims")}


def _sk_custom(node):
    from ..torch_ops import SPECS

    spec = SPECS.get(node.target._opname)
    if spec is None:
        raise Unsupported(f"superkernel::{node.target._opname} is not a library graph op")
    try:
        slots, attrs = spec.split(node.args, node.kwargs)
    except TypeError as e:
        raise Unsupported(str(e)) from None
    return spec.op, slots, attrs


_ATEN = {
    aten.view.default: lambda n: ("reshape", {"x": n.args[0]}, {"shape": _ints(n.args[1], "shape")}),
    aten._unsafe_view.default: lambda n: ("reshape", {"x": n.args[0]}, {"shape": _ints(n.args[1], "shape")}),
    aten.reshape.default: lambda n: ("reshape", {"x": n.args[0]}, {"shape": _ints(n.args[1], "shape")}),
    aten.unsqueeze.default: lambda n: ("unsqueeze", {"x": n.args[0]}, {"dim": _ints([n.args[1]], "dim")[0]}),
    aten.squeeze.default: _squeeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.slice.Tensor: _slice,
    aten.cat.default: lambda n: ("concat", {"x": list(n.args[0])}, {"dim": n.kwargs.get("dim", (list(n.args) + [0])[1])}),
    aten.square.default: lambda n: ("square", {"x": n.args[0]}, {}),
    aten.mul.Tensor: lambda n: _binary("mul", n),
    aten.add.Tensor: lambda n: _binary("add", n),
    aten._to_copy.default: _cast,
    prims.convert_element_type.default: _cast,
}


def _pow(node):
    x, exponent = node.args[0], node.args[1]
    if isinstance(exponent, bool) or exponent != 2:
        raise Unsupported(f"pow with exponent {exponent!r} (only 2)")
    return "square", {"x": x}, {}


_ATEN[aten.pow.Tensor_Scalar] = _pow


def _argmax(node):
    x = node.args[0]
    dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
    keepdim = node.kwargs.get("keepdim", node.args[2] if len(node.args) > 2 else False)
    _, shape = tensor_meta(x)
    if dim is None or dim not in (-1, len(shape) - 1):
        raise Unsupported(f"argmax over dim {dim} (only the last)")
    return "argmax", {"x": x}, {"keepdim": int(bool(keepdim))}


def _embedding(node):
    weight, indices = node.args[0], node.args[1]
    return "embedding", {"table": weight, "ids": indices}, {}


_ATEN[aten.argmax.default] = _argmax
_ATEN[aten.embedding.default] = _embedding


def _softmax(node):
    x, dim = node.args[0], node.args[1]
    if node.target == aten._softmax.default:
        if node.args[2]:
            raise Unsupported("softmax with half_to_float (an fp32 result of a 16-bit input)")
    else:
        dtype = node.kwargs.get("dtype", node.args[2] if len(node.args) > 2 else None)
        if dtype is not None and dtype != node_val(x).dtype:
            raise Unsupported(f"softmax computed in {dtype}")
    _, shape = tensor_meta(x)
    if dim not in (-1, len(shape) - 1):
        raise Unsupported(f"softmax over dim {dim} (only the last)")
    return "softmax", {"x": x}, {}


# ATen ops mapped to a library op whose contract is not torch's bits: only
# with CompilerConfig(torch_bits=False) (the module's docstring).
_ATEN_OWN_BITS = {aten._softmax.default: _softmax, aten.softmax.int: _softmax}


def _metas(slots):
    metas = {}
    for name, value in slots.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if not isinstance(v, torch.fx.Node):
                raise Unsupported(f"input {name} is not a tensor of the graph ({v!r})")
        metas[name] = [tensor_meta(v) for v in values] if isinstance(value, (list, tuple)) else tensor_meta(value)
    return metas


def _traced_outputs(node):
    val = node_val(node)
    vals = list(val) if isinstance(val, (list, tuple)) else [val]
    out = []
    for v in vals:
        if not isinstance(v, torch.Tensor):
            raise Unsupported("an output is not a tensor")
        if not v.is_contiguous():
            raise Unsupported("its traced output is not contiguous")
        out.append((to_dtype(v.dtype), tuple(v.shape)))
    return out


def translate(node, torch_bits=True):
    """(op, slots, attrs) of a call_function node the library runs exactly
    as torch does (with torch_bits=False also the opt-in ATen ops of the
    module's docstring); Unsupported (with the reason) otherwise. Slots map
    slot names to fx Nodes or lists of them."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "superkernel":
        op, slots, attrs = _sk_custom(node)
    elif target in _ATEN:
        op, slots, attrs = _ATEN[target](node)
    elif target in _ATEN_OWN_BITS and not torch_bits:
        op, slots, attrs = _ATEN_OWN_BITS[target](node)
    elif target in _ATEN_OWN_BITS:
        raise Unsupported("the library's result is not torch's bits (CompilerConfig(torch_bits=False) maps it)")
    else:
        raise Unsupported("no library op computes it")
    metas = _metas(slots)
    reason = schema.op_supported(op, metas, attrs)
    if reason is not None:
        raise Unsupported(reason)
    try:
        inferred = schema.op_infer(op, metas, attrs)
    except Exception as e:  # the library rejects what op_supported took: keep it in torch
        raise Unsupported(str(e)) from None
    traced = _traced_outputs(node)
    if [(DType(d), tuple(s)) for d, s in inferred] != traced:
        raise Unsupported(f"the library's outputs {inferred} differ from torch's {traced}")
    return op, slots, attrs


def is_getitem(node):
    return node.op == "call_function" and node.target is operator.getitem


def op_label(node):
    """A short name of a node's op for messages ("aten.sin.default")."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    return getattr(target, "__name__", str(target))
