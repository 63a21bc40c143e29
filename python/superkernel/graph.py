"""Graph: the C graph builder (sk_graph_*), one method per C call."""

import contextlib
import ctypes

from . import _lib
from ._owned import Owned
from .buffers import buffer_info
from .dtypes import DType, to_dtype
from .schema import DescBuilder


class Value:
    """A tensor value of a graph: an input, a constant or an op output."""

    __slots__ = ("graph", "id", "dtype", "shape")

    def __init__(self, graph, vid):
        self.graph = graph
        self.id = vid
        self.dtype, self.shape = graph.value_info(vid)

    def __repr__(self):
        return f"Value({self.id}, {self.dtype}, {list(self.shape)})"


DYNAMIC = -1  # SK_DIM_DYNAMIC: a leading dimension of T rows, T given by each run


def tokens(k=1):
    """SK_DIM_TOKENS(k): how a leading dimension of k * T rows is reported."""
    return -k


def _shape_array(shape, what):
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"{what}: expected a sequence of ints, got {shape!r}")
    try:
        dims = list(shape)
    except TypeError:
        raise TypeError(f"{what}: expected a sequence of ints, got {shape!r}") from None
    # None is the run-time token dimension (DYNAMIC); the library names any other misuse.
    shape = tuple(DYNAMIC if d is None else _lib.as_int(d, f"{what}: dimension {i}") for i, d in enumerate(dims))
    return shape, (_lib.int64 * max(1, len(shape)))(*shape)


class Graph(Owned):
    """An operator graph to compile into a Program.

    g = Graph()
    x = g.add_input("x", "fp16", (256, 180))   # (None, 180) after g.set_max_tokens(n): any T
    w = g.add_constant("w", weight_array)
    with g.scope("sk1", "early-start=1"):
        (h,) = g.add_op("grouped_matmul", {"x": [x], "weight": [w]}, {"split_item": 3})
    g.mark_output(h, "h")
    program = g.compile(team)
    """

    def __init__(self):
        self._lib = _lib.lib()
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_graph_create(ctypes.byref(handle)))
        self._handle = handle
        self._borrowed = []  # constants' data the graph reads without a copy
        self._borrowed_named = []  # (name, data) of the same
        self.outputs = []

    _noun = "graph"
    _remake = "build the graph again"

    def _destroy(self, handle):
        """Frees the C graph (programs compiled from it stay valid)."""
        self._lib.sk_graph_destroy(handle)

    def value_info(self, vid):
        dtype, rank = ctypes.c_int(), ctypes.c_int()
        shape = (_lib.int64 * _lib.SK_MAX_RANK)()
        _lib.check(
            self._lib.sk_graph_value_info(self.handle, vid, ctypes.byref(dtype), ctypes.byref(rank), shape)
        )
        return DType(dtype.value), tuple(shape[: rank.value])

    def set_max_tokens(self, max_tokens):
        """A run-time token count up to max_tokens (sk_graph_set_max_tokens):
        inputs whose leading dimension is None (or DYNAMIC) then have T rows,
        T given by each run's buffers; one compiled program serves every T."""
        _lib.check(self._lib.sk_graph_set_max_tokens(self.handle, _lib.as_int(max_tokens, "set_max_tokens")))

    def add_input(self, name, dtype, shape):
        shape, dims = _shape_array(shape, f"input {name}: shape")
        vid = ctypes.c_uint32()
        _lib.check(
            self._lib.sk_graph_add_input(
                self.handle, _lib.encode(name, "add_input: name"), int(to_dtype(dtype)), len(shape), dims,
                ctypes.byref(vid),
            )
        )
        return Value(self, vid.value)

    def add_constant(self, name, data, borrow=False):
        """A constant from a numpy array or torch CPU tensor (C-contiguous).
        borrow=False copies the data now; borrow=True keeps a reference and
        the library reads the caller's buffer, which must not change."""
        ptr, nbytes, dtype, shape = buffer_info(data, f"constant {name}")
        shape, dims = _shape_array(shape, f"constant {name}: shape")
        vid = ctypes.c_uint32()
        _lib.check(
            self._lib.sk_graph_add_constant(
                self.handle,
                _lib.encode(name, "add_constant: name"),
                int(dtype),
                len(shape),
                dims,
                ctypes.c_void_p(ptr) if nbytes else None,
                1 if borrow else 0,
                ctypes.byref(vid),
            )
        )
        if borrow:
            self._borrowed.append(data)
            self._borrowed_named.append((name, data))
        return Value(self, vid.value)

    def add_op(self, op, inputs, attrs=None, name=None):
        """Adds an op node; returns its outputs (a list of Values).
        inputs: {slot: Value or [Value, ...]}; None slots are left out.
        attrs: {name: int | float | [ints] | dtype}."""
        slots = {}
        for slot, values in inputs.items():
            if values is None:
                continue
            values = values if isinstance(values, (list, tuple)) else [values]
            for v in values:
                if not isinstance(v, Value) or v.graph is not self:
                    raise TypeError(f"{op}: input {slot}: expected Values of this graph, got {v!r}")
            slots[slot] = [v.id for v in values]
        builder = DescBuilder(op, slots, attrs, name)
        room = 64 + 2 * sum(len(v) for v in slots.values())  # a list output holds one per input of a list
        out = (ctypes.c_uint32 * room)()
        n = ctypes.c_size_t(0)
        _lib.check(self._lib.sk_graph_add_op(self.handle, ctypes.byref(builder.desc), out, room, ctypes.byref(n)))
        return [Value(self, out[i]) for i in range(n.value)]

    def mark_output(self, value, name):
        if not isinstance(value, Value) or value.graph is not self:
            raise TypeError(f"mark_output {name!r}: expected a Value of this graph, got {value!r}")
        _lib.check(self._lib.sk_graph_mark_output(self.handle, value.id, _lib.encode(name, "mark_output: name")))
        self.outputs.append(name)

    def begin_scope(self, name, options=None):
        _lib.check(
            self._lib.sk_graph_begin_scope(
                self.handle, _lib.encode(name, "begin_scope: name"), _lib.encode(options, f"scope {name}: options")
            )
        )

    def end_scope(self):
        _lib.check(self._lib.sk_graph_end_scope(self.handle))

    @contextlib.contextmanager
    def scope(self, name, options=None):
        """Ops added inside become one super kernel (sk_graph_begin_scope)."""
        self.begin_scope(name, options)
        try:
            yield
        finally:
            self.end_scope()

    def set_stream(self, stream):
        # the library names the streams it has (0 and 1); here only what a C int holds
        _lib.check(self._lib.sk_graph_set_stream(self.handle, _lib.as_cint(stream, "set_stream: stream")))

    def record_event(self):
        ev = ctypes.c_uint32()
        _lib.check(self._lib.sk_graph_record_event(self.handle, ctypes.byref(ev)))
        return ev.value

    def wait_event(self, event):
        event = _lib.as_int(event, "wait_event: event", 0, _lib.UINT32_MAX)  # an sk_event: uint32_t
        _lib.check(self._lib.sk_graph_wait_event(self.handle, event))

    def compile(self, team=None, executor="default", default_options=None, profile=False, watchdog_ms=0,
                numerics=None):
        """Compiles into a Program for team (None: one core). numerics:
        None ($SK_NUMERICS, else "default"), "default" or "amx" (bf16
        products summed as AMX-BF16 does; docs/ops.md, "Numerics")."""
        from .program import Program

        return Program(self, team, executor, default_options, profile, watchdog_ms, numerics)
