"""torch ops in the `superkernel` namespace, one per library op.

Each op is defined through torch.library with an explicit schema written
from the library's own schema (sk_op_info), so the C op list is the one
source:

    slots      Tensor / Tensor[] (optional: Tensor? / Tensor[]? = None),
               positional, in the library's order
    attrs      keyword-only: int / float / int[] with the library's default;
               one the op derives from its inputs is `int? = None`; an attr
               named *dtype is a ScalarType; an attr sharing a slot's name
               (grouped_matmul's fixed group_list) is spelt <name>_ints
    outputs    Tensor, Tensor[] (a list output) or a tuple

Its CPU kernel runs the op through the library (a one-op program compiled
once per input signature and cached), so a model run eagerly computes the
same bits as the same ops fused by the torch.compile backend. Its fake
kernel asks the library for the output shapes (sk_op_infer), so shape
errors surface while tracing with the library's message. Its autograd
formula (torch_grads.py) is a derivative where the maths is simple, else a
backward that raises naming the op. A tensor with torch's lazy negative
bit reaches the CPU kernel resolved (the dispatcher's Negative fallback
materializes it, as for torch's own ops).

    torch.ops.superkernel.grouped_matmul([x], [w], bias=[b], split_item=0)
"""

import numbers
import struct
import sys
import threading
from collections import OrderedDict

import torch

from . import _fork, _lib, _omp, schema, torch_grads
from .buffers import buffer_info
from .dtypes import DType, to_dtype, to_torch
from .graph import Graph
from .program import shared_team

NAMESPACE = "superkernel"
LIB = torch.library.Library(NAMESPACE, "DEF")


class OpSpec:
    """How a library op appears in torch: its schema string, and the
    translation of a torch call's arguments into slots and attributes."""

    def __init__(self, sk_schema):
        self.op = sk_schema.name
        self.sk = sk_schema
        slot_names = {s.name for s in sk_schema.inputs}
        self.slots = [s.name for s in sk_schema.inputs]
        # torch argument name -> library attribute name
        self.attr_names = {}
        args = []
        # torch's dispatcher finds an op's backend in its Tensor, Tensor[] and
        # Tensor? arguments but not in a Tensor[]? one: an op whose slots are
        # all optional (a registered kernel's list "x") declares its first
        # slot required, or no call would find the CPU kernel.
        required = {s.name for s in sk_schema.inputs if not s.is_optional}
        if sk_schema.inputs and not required:
            required.add(sk_schema.inputs[0].name)
        for s in sk_schema.inputs:
            t = "Tensor[]" if s.is_list else "Tensor"
            args.append(f"{t} {s.name}" if s.name in required else f"{t}? {s.name}=None")
        args.append("*")
        for a in sk_schema.attrs:
            tname = f"{a.name}_ints" if a.name in slot_names else a.name
            self.attr_names[tname] = a.name
            args.append(_attr_decl(tname, a))
        if args[-1] == "*":
            args.pop()
        outs = sk_schema.outputs
        if len(outs) == 1:
            ret = "Tensor[]" if outs[0].is_list else "Tensor"
        else:
            ret = "(" + ", ".join(f"Tensor {o.name}" for o in outs) + ")"
        self.schema = f"{self.op}({', '.join(args)}) -> {ret}"
        self.returns_list = len(outs) == 1 and outs[0].is_list
        self.n_outputs = len(outs)
        self.dtype_attrs = {a.name for a in sk_schema.attrs if a.name.endswith("dtype")}

    def split(self, args, kwargs):
        """(slots, attrs) of a call: slots {name: value or [values]} for
        the slots given, attrs {library name: value} for the attributes
        given (None = left to the library's default)."""
        if len(args) > len(self.slots):
            raise TypeError(f"superkernel::{self.op}: takes {len(self.slots)} positional inputs, got {len(args)}")
        slots = dict(zip(self.slots, args))
        attrs = {}
        for key, value in kwargs.items():
            if key in self.attr_names:
                if value is not None:
                    attrs[self.attr_names[key]] = value
            elif key in self.slots:
                slots[key] = value
            else:
                raise TypeError(f"superkernel::{self.op}: unexpected argument {key!r}")
        slots = {k: v for k, v in slots.items() if v is not None}
        for name in self.dtype_attrs & attrs.keys():
            attrs[name] = int(to_dtype(attrs[name]))
        return slots, attrs


def _attr_decl(tname, a):
    if a.name.endswith("dtype"):
        return f"ScalarType {tname}" if a.is_required else f"ScalarType? {tname}=None"
    ttype = {"int": "int", "float": "float", "ints": "int[]"}[a.kind]
    if a.is_required:
        return f"{ttype} {tname}"
    if a.default is None:
        return f"{ttype}? {tname}=None"
    return f"{ttype} {tname}={a.default!r}"


# ---- the eager CPU kernels: one cached program per signature -------------


class _EagerCache:
    """One-op programs keyed by (op, input metas, attrs), least recently
    used dropped past `capacity`."""

    def __init__(self, capacity=256):
        self.capacity = capacity
        self._programs = OrderedDict()
        _fork.lock(self, "_lock")
        self._team = None

    def team(self):
        if self._team is None:
            self._team = shared_team(_omp.team_threads())
        return self._team

    def program(self, spec, slots, attrs):
        key = (
            spec.op,
            tuple(
                (name, tuple((t.dtype, tuple(t.shape)) for t in (v if isinstance(v, (list, tuple)) else [v])),
                 isinstance(v, (list, tuple)))
                for name, v in slots.items()
            ),
            tuple(sorted((k, _attr_key(v)) for k, v in attrs.items())),
        )
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
                return program
        program = self._compile(spec, slots, attrs)
        with self._lock:
            self._programs[key] = program
            while len(self._programs) > self.capacity:
                self._programs.popitem(last=False)
        return program

    def _compile(self, spec, slots, attrs):
        with Graph() as g:
            values = {}
            for name, v in slots.items():
                tensors = v if isinstance(v, (list, tuple)) else [v]
                is_list = isinstance(v, (list, tuple))
                vals = [
                    g.add_input(f"{name}[{i}]" if is_list else name, to_dtype(t.dtype),
                                tuple(t.shape))
                    for i, t in enumerate(tensors)
                ]
                values[name] = vals if is_list else vals[0]
            outs = g.add_op(spec.op, values, attrs)
            for i, out in enumerate(outs):
                g.mark_output(out, f"out{i}")
            return g.compile(self.team(), executor="eager")


def _attr_key(value):
    """An attribute as a cache key: floats by their bits, so that a NaN
    (never equal to itself) finds its program again and -0.0 does not
    find 0.0's (equal as numbers, not as an op's scalar)."""
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return ("float", struct.pack("<d", float(value)))
    return value


EAGER = _EagerCache()


# Ops that write an input in place (the library's writes_input: the state a
# graph input holds, docs/ops.md): the slot they write. A torch op is
# functional, so its CPU kernel lets the library write a copy.
WRITES_IN_PLACE = {"kv_cache_write": "cache"}


def run_eager(spec, slots, attrs):
    """Runs one op through the library on torch CPU tensors; returns its
    outputs as torch tensors (a list)."""
    program = EAGER.program(spec, slots, attrs)
    written = WRITES_IN_PLACE.get(spec.op)
    if written in slots:
        slots = dict(slots, **{written: slots[written].clone(memory_format=torch.contiguous_format)})
    # any strided CPU tensor, as torch ops take them: the library reads dense ones
    inputs = [
        t if t.is_contiguous() else t.contiguous()
        for v in slots.values()
        for t in (v if isinstance(v, (list, tuple)) else [v])
    ]
    outputs = [torch.empty(info.shape, dtype=to_torch(info.dtype)) for info in program.outputs]
    try:
        program.run_into(inputs, outputs)
    except (TypeError, ValueError) as e:
        raise type(e)(f"superkernel::{spec.op}: {e}") from None
    return outputs


def infer_outputs(spec, slots, attrs):
    """The library's output metas for inputs that may be fake tensors."""
    metas = {
        name: [(to_dtype(t.dtype), tuple(t.shape)) for t in (v if isinstance(v, (list, tuple)) else [v])]
        for name, v in slots.items()
    }
    return schema.op_infer(spec.op, metas, attrs)


def _pack(spec, outputs):
    if spec.returns_list:
        return list(outputs)
    if spec.n_outputs == 1:
        return outputs[0]
    return tuple(outputs)


def _first_tensor(slots):
    for v in slots.values():
        for t in v if isinstance(v, (list, tuple)) else [v]:
            return t
    raise ValueError("no input tensor")


# ---- the library's refusals while Dynamo traces ----------------------------
# An op the library refuses inside a scope makes Dynamo give up the frame
# (a graph break inside the scope's `with`): the backend then sees a scope
# that begins and does not end, and could only blame "a graph break". The
# fake kernel leaves the refusal here, with the code Dynamo was tracing; the
# backend takes it when it is called next (take_refusal), and uses it if
# that code is running then, so the message it gives is the library's,
# naming the op and the scope.

_refusals = threading.local()


def _note_refusal(op, error):
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
    except Exception:  # not under Dynamo (make_fx, torch.export): nothing to explain later
        tx = None
    codes = set()
    while tx is not None:
        codes.add(tx.f_code)
        tx = getattr(tx, "parent", None)
    if codes:
        _refusals.last = (frozenset(codes), op, type(error), str(error))


def take_refusal():
    """(op, exception type, message) of the library's last refusal while
    Dynamo traced code that this thread is running now, or None; the
    refusal is forgotten either way (one that nothing took is stale)."""
    last = getattr(_refusals, "last", None)
    if last is None:
        return None
    _refusals.last = None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in last[0]:
            return last[1:]
        frame = frame.f_back
    return None


SPECS = {}
_registered_lock = _fork.lock(sys.modules[__name__], "_registered_lock")


def register(op):
    """Defines torch.ops.superkernel.<op> for a library op (built-in, or a
    kernel registered with sk_kernel_register). Idempotent."""
    with _registered_lock:
        if op in SPECS:
            return SPECS[op]
        spec = OpSpec(schema.op_schema(op))
        LIB.define(spec.schema)

        def cpu_kernel(*args, **kwargs):
            slots, attrs = spec.split(args, kwargs)
            return _pack(spec, run_eager(spec, slots, attrs))

        def fake_kernel(*args, **kwargs):
            slots, attrs = spec.split(args, kwargs)
            like = _first_tensor(slots)
            try:
                metas = infer_outputs(spec, slots, attrs)
            except Exception as e:
                _note_refusal(spec.op, e)
                raise
            return _pack(spec, [like.new_empty(shape, dtype=to_torch(dtype)) for dtype, shape in metas])

        def refusing_kernel(*args, **kwargs):
            # Every other backend (sparse, mkldnn, nested, another device)
            # and no tensor at all (an empty list): the library's message.
            slots, attrs = spec.split(args, kwargs)
            for name, v in slots.items():
                many = isinstance(v, (list, tuple))
                for i, t in enumerate(v if many else [v]):
                    buffer_info(t, f"superkernel::{op}: input {name}" + (f"[{i}]" if many else ""))
            infer_outputs(spec, slots, attrs)
            raise ValueError(f"superkernel::{op}: no kernel for these inputs (dense CPU tensors expected)")

        LIB.impl(op, cpu_kernel, "CPU")
        for key in ("CompositeExplicitAutograd", "AutogradNestedTensor"):
            LIB.impl(op, refusing_kernel, key)
        torch.library.register_fake(f"{NAMESPACE}::{op}", fake_kernel, lib=LIB)
        # a derivative, or a backward that raises naming the op: never a silent None grad
        torch_grads.register(spec, LIB)
        SPECS[op] = spec
        return spec


torch_grads.define_not_differentiable(LIB)

# ---- trans_quant_param: a function of the library, not a graph op --------

LIB.define("trans_quant_param(Tensor scale, Tensor? offset=None) -> Tensor")


def _trans_quant_param_cpu(scale, offset=None):
    import numpy as np

    from . import trans_quant_param

    s = scale.detach().to(torch.float32).contiguous().numpy()
    o = None if offset is None else offset.detach().to(torch.float32).contiguous().numpy()
    return torch.from_numpy(np.ascontiguousarray(trans_quant_param(s, o).reshape(scale.shape)))


def _trans_quant_param_fake(scale, offset=None):
    if offset is not None and offset.numel() != scale.numel():
        raise ValueError(f"trans_quant_param: offset has {offset.numel()} values, scale {scale.numel()}")
    return scale.new_empty(scale.shape, dtype=torch.int64)


LIB.impl("trans_quant_param", _trans_quant_param_cpu, "CPU")
torch.library.register_fake(f"{NAMESPACE}::trans_quant_param", _trans_quant_param_fake, lib=LIB)

for _op in schema.op_names():
    register(_op)

__all__ = ["LIB", "SPECS", "OpSpec", "register", "run_eager", "DType", "_lib"]
