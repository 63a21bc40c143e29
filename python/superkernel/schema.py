"""Op schemas, shape inference and option strings, as the C library gives them.

The library's op list (sk_op_info) is the one source: the torch ops, the
backend's support check and the attribute conversion below all read it.
"""

import collections.abc
import ctypes
import functools
import numbers
from dataclasses import dataclass, field
from typing import Optional, Tuple

from . import _lib
from .dtypes import DType, to_dtype

ATTR_INT, ATTR_FLOAT, ATTR_INTS = 1, 2, 3
_KIND_NAMES = {ATTR_INT: "int", ATTR_FLOAT: "float", ATTR_INTS: "ints"}  # sk_attr_kind


@dataclass(frozen=True)
class Slot:
    """One input slot and the data rules the library checks for it
    (sk_op_slot_info): the dtypes accepted (empty: any), the ranks accepted
    (max_rank None: no upper bound; None, None: any rank) and the slot
    whose first tensor's dtype this one's must have (None: none)."""

    name: str
    is_list: bool
    is_optional: bool
    doc: str
    dtypes: Tuple[DType, ...] = ()
    min_rank: Optional[int] = None
    max_rank: Optional[int] = None
    same_dtype_as: Optional[str] = None


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: str  # "int", "float" or "ints"
    is_required: bool
    default: object  # None when the op derives it (or it is required)
    range: Optional[Tuple[int, int]]
    doc: str


@dataclass(frozen=True)
class Output:
    name: str
    is_list: bool
    doc: str


@dataclass(frozen=True)
class OpSchema:
    name: str
    kernel_type: int
    is_view: bool
    inputs: Tuple[Slot, ...]
    attrs: Tuple[AttrSpec, ...]
    outputs: Tuple[Output, ...]
    doc: str
    attr_by_name: dict = field(compare=False, repr=False, default_factory=dict)


def _s(b):
    return b.decode() if b else ""


def _slot(c, i):
    s = c.inputs[i]
    ranked = s.min_rank != 0 or s.max_rank != 0
    dtypes = tuple(DType(d) for d in range(1, 32) if s.dtypes >> d & 1)
    return Slot(
        _s(s.name),
        bool(s.is_list),
        bool(s.is_optional),
        _s(s.doc),
        dtypes,
        int(s.min_rank) if ranked else None,
        int(s.max_rank) if ranked and s.max_rank >= 0 else None,
        _s(c.inputs[s.same_dtype_as - 1].name) if s.same_dtype_as else None,
    )


def _convert(c):
    inputs = tuple(_slot(c, i) for i in range(c.n_inputs))
    attrs = []
    for i in range(c.n_attrs):
        a = c.attrs[i]
        if a.kind not in _KIND_NAMES:
            raise RuntimeError(f"op {_s(c.name)}: attribute {_s(a.name)} has kind {a.kind}, unknown to this binding")
        kind = _KIND_NAMES[a.kind]
        default = None
        if a.has_default:
            default = a.default_float if kind == "float" else int(a.default_int)
        attrs.append(
            AttrSpec(
                _s(a.name),
                kind,
                bool(a.is_required),
                default,
                (int(a.min), int(a.max)) if a.has_range else None,
                _s(a.doc),
            )
        )
    outputs = tuple(
        Output(_s(c.outputs[i].name), bool(c.outputs[i].is_list), _s(c.outputs[i].doc)) for i in range(c.n_outputs)
    )
    attrs = tuple(attrs)
    return OpSchema(
        _s(c.name), c.kernel_type, bool(c.is_view), inputs, attrs, outputs, _s(c.doc), {a.name: a for a in attrs}
    )


def op_names():
    """The built-in ops, in the library's order."""
    lib = _lib.lib()
    names = []
    for i in range(lib.sk_op_count()):
        c = _lib.OpSchema()
        _lib.check(lib.sk_op_info(i, ctypes.byref(c)))
        names.append(_s(c.name))
    return names


@functools.lru_cache(maxsize=None)
def op_schema(op):
    """The schema of a built-in or registered op; NotFoundError if unknown."""
    c = _lib.OpSchema()
    _lib.check(_lib.lib().sk_op_info_by_name(_lib.encode(op, "op"), ctypes.byref(c)))
    return _convert(c)


class DescBuilder:
    """An sk_op_desc and everything its pointers point into, kept alive
    together. inputs: {slot: list of sk_value ids} (metas for sk_op_infer
    follow the same order); attrs: {name: python value}, converted by the
    op's schema."""

    def __init__(self, op, inputs, attrs=None, name=None):
        self._keep = []
        schema = None
        try:
            schema = op_schema(op)
        except Exception:
            pass  # an unknown op: the library names it when the desc is used
        slots = (_lib.OpInput * max(1, len(inputs)))()
        for i, (slot, values) in enumerate(inputs.items()):
            arr = (ctypes.c_uint32 * max(1, len(values)))(*values)
            self._keep.append(arr)
            slots[i] = _lib.OpInput(self._bytes(slot, f"{op}: input slot name"), arr, len(values))
        attrs = attrs or {}
        cattrs = (_lib.Attr * max(1, len(attrs)))()
        for i, (aname, value) in enumerate(attrs.items()):
            spec = schema.attr_by_name.get(aname) if schema else None
            cattrs[i] = self._attr(op, aname, value, spec)
        self.desc = _lib.OpDesc(
            ctypes.sizeof(_lib.OpDesc),
            self._bytes(op, "op"),
            self._bytes(name, f"{op}: node name") if name else None,
            slots,
            len(inputs),
            cattrs,
            len(attrs),
        )
        self._keep += [slots, cattrs]

    def _bytes(self, text, what):
        b = _lib.encode(text, what)
        self._keep.append(b)
        return b

    def _attr(self, op, name, value, spec):
        kind = spec.kind if spec else _guess_kind(value)
        where = f"{op}: attribute {name}"
        cname = self._bytes(name, f"{op}: attribute name")
        if kind == "ints":
            values = [_lib.as_int(v, f"{where}[{i}]") for i, v in enumerate(_int_list(value, where))]
            arr = (_lib.int64 * max(1, len(values)))(*values)
            self._keep.append(arr)
            return _lib.Attr(cname, ATTR_INTS, 0, 0.0, arr, len(values))
        if kind == "float":
            return _lib.Attr(cname, ATTR_FLOAT, 0, _lib.as_float(value, where), None, 0)
        if isinstance(value, DType):
            value = int(value)
        elif name.endswith("dtype") and not isinstance(value, numbers.Integral):
            value = int(to_dtype(value))  # a torch / numpy dtype or a name
        elif isinstance(value, bool):
            value = int(value)  # the int flags (renorm, activate_left): torch.ops' int arguments take a bool too
        return _lib.Attr(cname, ATTR_INT, _lib.as_int(value, where), 0.0, None, 0)


def _int_list(value, where):
    """An attribute's list of ints as a sequence: a list, tuple (torch.Size)
    or range, or a 1-D numpy array. Not a dict, set, str or iterator,
    whose iteration would be taken for the list (as torch's int[]
    arguments refuse them)."""
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return value
    if hasattr(value, "__array_interface__") and getattr(value, "ndim", None) == 1:
        return value.tolist()
    raise TypeError(f"{where}: expected a list of ints, got {type(value).__name__} {value!r}")


def _guess_kind(value):
    if isinstance(value, (list, tuple)):
        return "ints"
    if isinstance(value, float):
        return "float"
    return "int"


def _metas(op, inputs):
    """The sk_tensor_meta array of inputs {slot: [(dtype, shape), ...]},
    slot by slot in order; every dimension checked as the int64_t it becomes."""
    flat = [(f"{slot}[{i}]", m) for slot, metas in inputs.items() for i, m in enumerate(metas)]
    arr = (_lib.TensorMeta * max(1, len(flat)))()
    for i, (what, (dtype, shape)) in enumerate(flat):
        what = f"{op}: input {what}"
        if isinstance(shape, (str, bytes)) or not isinstance(shape, collections.abc.Iterable):
            raise TypeError(f"{what}: shape: expected a sequence of ints, got {shape!r}")
        shape = [_lib.as_int(n, f"{what}: dimension {d}") for d, n in enumerate(shape)]
        if len(shape) > _lib.SK_MAX_RANK:
            raise ValueError(f"{what}: rank {len(shape)} exceeds {_lib.SK_MAX_RANK}")
        arr[i].dtype = int(to_dtype(dtype))
        arr[i].rank = len(shape)
        for d, n in enumerate(shape):
            arr[i].shape[d] = n
    return arr, len(flat)


def _slot_counts(inputs):
    return {slot: list(range(len(metas))) for slot, metas in inputs.items()}


def _meta_lists(inputs):
    return {k: (v if isinstance(v, list) else [v]) for k, v in inputs.items() if v is not None}


def op_infer(op, inputs, attrs=None):
    """Output (DType, shape) pairs of op for inputs {slot: [(dtype, shape), ...]}
    (a single tensor may be given without the list). Raises the library's
    error when the op rejects them."""
    inputs = _meta_lists(inputs)
    builder = DescBuilder(op, _slot_counts(inputs), attrs)
    cin, n_in = _metas(op, inputs)
    room = 64 + 2 * n_in  # a list output holds one per input of a list
    cout = (_lib.TensorMeta * room)()
    n = ctypes.c_size_t(0)
    _lib.check(_lib.lib().sk_op_infer(ctypes.byref(builder.desc), cin, n_in, cout, room, ctypes.byref(n)))
    return [(DType(cout[i].dtype), tuple(cout[i].shape[: cout[i].rank])) for i in range(n.value)]


def op_supported(op, inputs, attrs=None):
    """None when the library runs op on these metas; else the reason (str)."""
    inputs = _meta_lists(inputs)
    try:
        builder = DescBuilder(op, _slot_counts(inputs), attrs)
        cin, n_in = _metas(op, inputs)
    except (TypeError, ValueError) as e:
        return str(e)
    status = _lib.lib().sk_op_supported(ctypes.byref(builder.desc), cin, n_in)
    return None if status == 0 else (_lib.last_error() or "unsupported")


def validate_options(options):
    """Raises InvalidArgumentError naming the bad key or value."""
    _lib.check(_lib.lib().sk_options_validate(_lib.encode(options or "", "options")))


def render_options(options="", default_options=None):
    """The effective options, defaults included ("key=value:..."): of
    `options` alone, or, given default_options, of a scope's options
    layered over a graph's defaults as the library layers them."""
    lib = _lib.lib()
    opts = _lib.encode(options or "", "options")
    defaults = None if default_options is None else _lib.encode(default_options, "default_options")

    def call(buf, size, needed):
        if default_options is None:
            return lib.sk_options_render(opts, buf, size, needed)
        return lib.sk_options_render_layered(defaults, opts, buf, size, needed)

    needed = ctypes.c_size_t(0)
    _lib.check(call(None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value + 1)
    _lib.check(call(buf, len(buf), None))
    return buf.value.decode()
