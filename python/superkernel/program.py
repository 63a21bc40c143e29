"""Team, Program and RunContext: compiling a graph and running it.

A run hands the library the caller's buffers (numpy arrays or torch CPU
tensors) by pointer; outputs are written in place. The calling thread works
as core 0 of the team, with the GIL released (ctypes does so for every
foreign call).
"""

import ctypes
import os
import sys
from collections import namedtuple

from . import _fork, _lib
from .buffers import check_buffer
from .dtypes import DType, to_numpy, to_torch
from ._owned import Owned
from .errors import InvalidArgumentError, InvalidStateError
from .team import Team, shared_team  # noqa: F401  (Team is part of this module's API)

IOInfo = namedtuple("IOInfo", "name dtype shape")
# A row of op_statistic.csv (sk_op_statistic): the launches of one op type
# (or "SuperKernel") on one core type.
OpStatistic = namedtuple("OpStatistic", "op_type core_type count total_us min_us max_us")

def _executor_names():
    lib, names = _lib.lib(), []
    while True:
        name = lib.sk_executor_name(len(names)).decode()
        if name == "invalid":
            return tuple(names)
        names.append(name)


EXECUTORS = _executor_names()  # the library's list (SK_EXECUTOR_MAP), in its order
SK_IO_INPUT, SK_IO_OUTPUT = 0, 1


def parse_executor(name):
    """The sk_executor value of a name; InvalidArgumentError naming the
    accepted ones otherwise."""
    value = ctypes.c_int()
    _lib.check(_lib.lib().sk_executor_parse(_lib.encode(name, "executor"), ctypes.byref(value)))
    return value.value


NUMERICS = {None: 0, "default": 1, "amx": 2}
NUMERICS_NAMES = {1: "default", 2: "amx"}


def parse_numerics(numerics, where):
    """sk_numerics of None (unset: $SK_NUMERICS, else default), "default"
    or "amx"; InvalidArgumentError naming the accepted ones otherwise."""
    if isinstance(numerics, str) or numerics is None:
        if numerics in NUMERICS:
            return NUMERICS[numerics]
    raise InvalidArgumentError(f"{where}: numerics {numerics!r}: expected None, 'default' or 'amx'")


def _io_info(lib, handle, fn, n):
    infos = []
    for i in range(n):
        name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        shape = (_lib.int64 * _lib.SK_MAX_RANK)()
        _lib.check(fn(handle, i, ctypes.byref(name), ctypes.byref(dtype), ctypes.byref(rank), shape))
        infos.append(IOInfo(name.value.decode(), DType(dtype.value), tuple(shape[: rank.value])))
    return tuple(infos)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _at_tokens(shape, tokens):
    """A shape whose leading dimension may be SK_DIM_TOKENS(k) (-k): k * tokens rows."""
    if shape and shape[0] < 0:
        return (-shape[0] * tokens,) + tuple(shape[1:])
    return tuple(shape)


def _new_like(info, torch_outputs, tokens=0):
    shape = _at_tokens(info.shape, tokens)
    if torch_outputs:
        import torch

        return torch.empty(shape, dtype=to_torch(info.dtype))
    import numpy as np

    return np.empty(shape, dtype=to_numpy(info.dtype))


def _team_arg(team, what):
    """team when it is a Team or None; TypeError naming the expected type."""
    if team is not None and not isinstance(team, Team):
        raise TypeError(f"{what}: team: expected a superkernel.Team or None, got {type(team).__name__} {team!r}")
    return team


# What _run_pointers last wrote as the byte counts after run_into wrote its
# own: no token count (None means the whole bindings), so it rewrites them.
_UNKNOWN_TOKENS = object()


def _tokens_of(buffers, infos):
    """The run's token count from the first buffer of a dynamic leading
    dimension (a program of static shapes: 0); each buffer is then checked
    against its shape at that count."""
    for buf, info in zip(buffers, infos):
        if info.shape and info.shape[0] < 0:
            shape = getattr(buf, "shape", None)
            rows = shape[0] if shape is not None and len(shape) > 0 else 0
            return rows // -info.shape[0]
    return 0


class Program(Owned):
    """A compiled graph (sk_compile). Immutable; runs change only a run
    context (the program's own, or a RunContext per thread)."""

    def __init__(self, graph, team=None, executor="default", default_options=None, profile=False, watchdog_ms=0,
                 numerics=None):
        self._lib = _lib.lib()
        self.team = _team_arg(team, "Program")
        self._on_jit = _lib.ON_JIT()  # kept alive with the config
        cfg = _lib.CompileConfig(
            ctypes.sizeof(_lib.CompileConfig),
            team.handle if team is not None else None,
            # the library names the executors it has; here only what a C int holds
            parse_executor(executor) if isinstance(executor, str) else _lib.as_cint(executor, "Program: executor"),
            _lib.encode(default_options, "Program: default_options"),
            1 if profile else 0,
            self._on_jit,
            None,
            _lib.as_int(watchdog_ms, "Program: watchdog_ms"),
            parse_numerics(numerics, "Program"),
        )
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_compile(graph.handle, ctypes.byref(cfg), ctypes.byref(handle)))
        self._handle = handle
        self._keep = list(graph._borrowed)  # borrowed constants outlive the program
        # A borrowed torch tensor can lose its memory under the program
        # (resize_, set_): every run checks that it still has what it had.
        self._borrowed = tuple(
            (name, t, t.data_ptr(), t.nbytes) for name, t in graph._borrowed_named if hasattr(t, "data_ptr")
        )
        lib = self._lib
        self.max_tokens = lib.sk_program_max_tokens(handle)  # 0: static shapes
        self.inputs = _io_info(lib, handle, lib.sk_program_input_info, lib.sk_program_num_inputs(handle))
        self.outputs = _io_info(lib, handle, lib.sk_program_output_info, lib.sk_program_num_outputs(handle))
        self._in_index = {info.name: i for i, info in enumerate(self.inputs)}
        self._in_bufs = (_lib.Buffer * max(1, len(self.inputs)))()
        self._out_bufs = (_lib.Buffer * max(1, len(self.outputs)))()
        # The same arrays as rows (name, data, bytes) of uint64: run_pointers
        # writes every data pointer with one numpy assignment.
        import numpy as np

        self._in_rows = np.frombuffer(self._in_bufs, dtype=np.uint64).reshape(-1, 3)
        self._out_rows = np.frombuffer(self._out_bufs, dtype=np.uint64).reshape(-1, 3)
        # Bytes of each binding: whole, or of one token's rows (a dynamic one).
        self._in_bytes = [_numel(_at_tokens(i.shape, 1)) * i.dtype.itemsize for i in self.inputs]
        self._out_bytes = [_numel(_at_tokens(o.shape, 1)) * o.dtype.itemsize for o in self.outputs]
        self._in_dynamic = [bool(i.shape) and i.shape[0] < 0 for i in self.inputs]
        self._out_dynamic = [bool(o.shape) and o.shape[0] < 0 for o in self.outputs]
        self._last_in_ptrs = self._last_out_ptrs = None  # what _run_pointers last wrote
        self._last_tokens = None  # the token count whose byte counts it last wrote
        _fork.lock(self, "_run_lock", "_close_lock")  # the buffer arrays above are shared

    _noun = "program"
    _remake = "compile the graph again"

    def _destroy(self, handle):
        # under _close_lock (the run lock): a run in progress ends first
        self._lib.sk_program_destroy(handle)

    def _check_borrowed(self):
        for name, t, ptr, nbytes in self._borrowed:
            if t.data_ptr() != ptr or t.nbytes != nbytes:
                raise InvalidStateError(
                    f"Program: the borrowed constant {name!r} no longer holds the memory it was compiled with "
                    "(resized or set_ after compile); compile again, or add it with borrow=False"
                )

    def _launch(self, team, fn, *args):
        """fn(program handle, team handle, *args) with the team held (not
        closed under the run) and the borrowed constants checked."""
        if team is not None and type(team) is not Team:
            _team_arg(team, "Program.run")
        if self._borrowed:
            self._check_borrowed()
        handle = self.handle
        if team is None:
            return fn(handle, None, *args)
        team_handle = team._acquire()
        try:
            return fn(handle, team_handle, *args)
        finally:
            team._release()

    # ---- running ------------------------------------------------------------

    def _ordered_inputs(self, args, kwargs):
        if args and kwargs:
            raise TypeError("Program.run: give inputs by position or by name, not both")
        if len(args) == 1 and isinstance(args[0], dict):
            kwargs, args = args[0], ()
        if kwargs:
            unknown = [k for k in kwargs if k not in self._in_index]
            if unknown:
                raise KeyError(f"Program.run: no input named {unknown[0]!r}; inputs: {[i.name for i in self.inputs]}")
            missing = [i.name for i in self.inputs if i.name not in kwargs]
            if missing:
                raise TypeError(f"Program.run: input {missing[0]!r} not given")
            return [kwargs[i.name] for i in self.inputs]
        if len(args) != len(self.inputs):
            raise TypeError(f"Program.run: expected {len(self.inputs)} inputs, got {len(args)}")
        return list(args)

    def run(self, *args, outputs=None, team=None, **kwargs):
        """Runs once. Inputs by position (declaration order), as a dict, or
        by keyword. outputs: a list in declaration order to write into, or
        None to allocate them (torch tensors when any input is one, else
        numpy arrays). With a run-time token count (max_tokens > 0) the
        inputs' rows give T and the outputs are allocated for it. Returns
        the outputs as a list."""
        inputs = self._ordered_inputs(args, kwargs)
        if outputs is None:
            torch = sys.modules.get("torch")
            as_torch = torch is not None and any(isinstance(x, torch.Tensor) for x in inputs)
            tokens = _tokens_of(inputs, self.inputs)
            outputs = [_new_like(info, as_torch, tokens) for info in self.outputs]
        self.run_into(inputs, outputs, team)
        return list(outputs)

    def run_into(self, inputs, outputs, team=None):
        """Runs with inputs and outputs as lists in declaration order,
        outputs written in place. Every buffer is checked (dtype, shape,
        dense, on the CPU, outputs writable)."""
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise TypeError(
                f"Program.run_into: expected {len(self.inputs)} inputs and {len(self.outputs)} outputs, "
                f"got {len(inputs)} and {len(outputs)}"
            )
        team = team if team is not None else self.team
        tokens = _tokens_of(inputs, self.inputs)
        if self.max_tokens and tokens > self.max_tokens:
            raise ValueError(f"Program.run_into: the inputs hold {tokens} tokens; the program takes at most {self.max_tokens}")
        with self._run_lock:
            ib, ob = self._in_bufs, self._out_bufs
            # _run_pointers rewrites what follows: the pointers, and the byte
            # counts of whatever token count it is next called with
            self._last_in_ptrs = self._last_out_ptrs = None
            self._last_tokens = _UNKNOWN_TOKENS
            for i, (x, info) in enumerate(zip(inputs, self.inputs)):
                shape = _at_tokens(info.shape, tokens)
                ib[i].data, ib[i].bytes = check_buffer(x, f"input {info.name}", info.dtype, shape)
            for i, (y, info) in enumerate(zip(outputs, self.outputs)):
                shape = _at_tokens(info.shape, tokens)
                ob[i].data, ob[i].bytes = check_buffer(y, f"output {info.name}", info.dtype, shape, True)
            status = self._launch(team, self._lib.sk_program_run_by_index, ib, len(inputs), ob, len(outputs))
        _lib.check(status)

    def _run_pointers(self, in_ptrs, out_ptrs, team=None, tokens=None):
        """The package's own fast path (the backend, export, the experts of
        transformers): lists of the data pointers (ints) of dense CPU
        buffers of exactly the declared dtypes and shapes (at `tokens`
        tokens with a run-time token count), in declaration order, which
        the caller has guaranteed. Nothing is checked here: not for users.
        Pointers equal to the last call's are not written again."""
        team = team if team is not None else self.team
        with self._run_lock:
            if tokens is None and self._last_tokens is not None:  # back to the whole bindings
                self._last_in_ptrs = self._last_out_ptrs = None
            if tokens is not None and tokens != self._last_tokens:
                self._last_in_ptrs = self._last_out_ptrs = None  # the byte counts change
                self._in_rows[: len(self._in_bytes), 2] = [
                    b * tokens if d else b for b, d in zip(self._in_bytes, self._in_dynamic)
                ]
                self._out_rows[: len(self._out_bytes), 2] = [
                    b * tokens if d else b for b, d in zip(self._out_bytes, self._out_dynamic)
                ]
                self._last_tokens = tokens
            if in_ptrs != self._last_in_ptrs or out_ptrs != self._last_out_ptrs:
                if len(in_ptrs) != len(self._in_bytes) or len(out_ptrs) != len(self._out_bytes):
                    raise TypeError(
                        f"Program._run_pointers: expected {len(self._in_bytes)} inputs and {len(self._out_bytes)} "
                        f"outputs, got {len(in_ptrs)} and {len(out_ptrs)}"
                    )
                if in_ptrs:
                    self._in_rows[: len(in_ptrs), 1] = in_ptrs
                if out_ptrs:
                    self._out_rows[: len(out_ptrs), 1] = out_ptrs
                if tokens is None:  # static shapes: the whole bindings
                    self._in_rows[: len(in_ptrs), 2] = self._in_bytes
                    self._out_rows[: len(out_ptrs), 2] = self._out_bytes
                    self._last_tokens = None
                self._last_in_ptrs, self._last_out_ptrs = list(in_ptrs), list(out_ptrs)
            status = self._launch(
                team, self._lib.sk_program_run_by_index, self._in_bufs, len(in_ptrs), self._out_bufs, len(out_ptrs)
            )
        _lib.check(status)

    def run_context(self):
        """A RunContext: bindings and scratch of its own, for runs of this
        program from another thread in parallel."""
        return RunContext(self)

    # ---- introspection ------------------------------------------------------

    def describe(self):
        """The plan: every step, super kernels with their task lists."""
        text = ctypes.c_void_p()
        _lib.check(self._lib.sk_program_describe(self.handle, ctypes.byref(text)))
        return _lib.take_text(text)

    def jit_source(self, scope=None):
        """The C source the JIT generates for a scope's super kernel."""
        text = ctypes.c_void_p()
        _lib.check(
            self._lib.sk_program_jit_source(self.handle, _lib.encode(scope, "jit_source: scope"), ctypes.byref(text))
        )
        return _lib.take_text(text)

    @property
    def stats(self):
        """sk_program_get_stats as a dict (executor as its name)."""
        s = _lib.ProgramStats(ctypes.sizeof(_lib.ProgramStats))
        _lib.check(self._lib.sk_program_get_stats(self.handle, ctypes.byref(s)))
        out = {name: getattr(s, name) for name, _ in _lib.ProgramStats._fields_[2:]}
        out["executor"] = self._lib.sk_executor_name(s.executor).decode()
        out["numerics"] = NUMERICS_NAMES.get(s.numerics, str(s.numerics))
        return out

    @property
    def numerics(self):
        """The contract its bf16 products follow: "default" or "amx"."""
        return self.stats["numerics"]

    def write_profile(self, directory):
        """Writes op_statistic.csv and trace.json of the runs so far
        (compile with profile=True, or scopes with profiling=1)."""
        path = _lib.encode(os.fsencode(directory), "write_profile: directory")
        _lib.check(self._lib.sk_program_write_profile(self.handle, path))

    def reset_profile(self):
        self._lib.sk_program_reset_profile(self.handle)

    def op_statistics(self):
        """The rows of op_statistic.csv for the runs so far, as OpStatistic
        records (sk_program_op_statistics)."""
        rows, n = None, ctypes.c_size_t(0)
        while True:
            capacity = n.value
            rows = (_lib.OpStatistic * capacity)() if capacity else None
            _lib.check(self._lib.sk_program_op_statistics(self.handle, rows, capacity, ctypes.byref(n)))
            if n.value <= capacity:  # else a run in another thread added rows: again, with room
                break
        return [
            OpStatistic(r.op_type.decode(), r.core_type.decode(), r.count, r.total_us, r.min_us, r.max_us)
            for r in (rows[: n.value] if n.value else [])
        ]


def write_op_statistics(path, rows):
    """Writes OpStatistic rows (of one program or several: rows of one op
    type and core type added up) as an op_statistic.csv at path
    (sk_write_op_statistics)."""
    rows = list(rows)
    array = (_lib.OpStatistic * max(len(rows), 1))()
    for i, (c, r) in enumerate(zip(array, rows)):
        for field in ("op_type", "core_type"):
            text = _lib.encode(getattr(r, field), f"write_op_statistics: row {i}: {field}")
            room = getattr(_lib.OpStatistic, field).size
            if len(text) >= room:
                raise ValueError(f"write_op_statistics: row {i}: {field} {text!r} is longer than {room - 1} bytes")
            setattr(c, field, text)
        c.count = _lib.as_int(r.count, f"write_op_statistics: row {i}: count", 0, 2**63 - 1)
        c.total_us, c.min_us, c.max_us = float(r.total_us), float(r.min_us), float(r.max_us)
    name = _lib.encode(os.fsencode(path), "write_op_statistics: path")
    _lib.check(_lib.lib().sk_write_op_statistics(name, array, len(rows)))
    return os.fspath(path)


class RunContext(Owned):
    """sk_run_context: one thread's bindings and scratch for a program."""

    def __init__(self, program):
        self._lib = _lib.lib()
        self.program = program
        _fork.lock(self, "_lock", "_close_lock")  # bind, run and close take turns
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_run_context_create(program.handle, ctypes.byref(handle)))
        self._handle = handle
        self._bound = {}  # (kind, index) -> (what, buffer, pointer, bytes): keeps bound buffers alive
        # (what, tensor, data pointer, bytes) of each bound torch tensor, as
        # handed to C: a tensor can lose its memory under the binding
        # (resize_, set_), and the run would then write into freed memory,
        # so every run checks it still has what it had (as Program checks
        # borrowed constants; about 0.15 us a tensor). numpy arrays are not
        # checked: numpy refuses to resize an array that is referenced (the
        # binding holds one) unless told refcheck=False, which its
        # documentation calls unsafe.
        self._tensors = ()

    _noun = "context"
    _remake = "call program.run_context() for another"

    def _destroy(self, handle):
        self._lib.sk_run_context_destroy(handle)

    def bind(self, kind, index, buf):
        """Binds input or output `index` (kind "input" / "output")."""
        kinds = {"input": SK_IO_INPUT, "output": SK_IO_OUTPUT}
        if kind not in kinds:
            raise ValueError(f"RunContext.bind: kind {kind!r}; expected 'input' or 'output'")
        k = kinds[kind]
        infos = self.program.inputs if k == SK_IO_INPUT else self.program.outputs
        index = _lib.as_int(index, f"RunContext.bind: {kind} index", 0, len(infos) - 1)
        info = infos[index]
        shape = _at_tokens(info.shape, _tokens_of([buf], [info]))
        what = f"{kind} {info.name}"
        ptr, nbytes = check_buffer(buf, what, info.dtype, shape, k == SK_IO_OUTPUT)
        with self._lock:
            _lib.check(self._lib.sk_run_context_bind(self.handle, k, index, ptr, nbytes))
            # the pointer and size handed to C, recorded now: a later bind of
            # another index must not refresh them
            self._bound[(k, index)] = (what, buf, ptr, nbytes)
            self._tensors = tuple(entry for entry in self._bound.values() if hasattr(entry[1], "data_ptr"))

    def _check_bound(self):
        for what, t, ptr, nbytes in self._tensors:
            if t.data_ptr() != ptr or t.nbytes != nbytes:
                raise InvalidStateError(
                    f"RunContext.run: the tensor bound as {what} no longer holds the memory it was bound with "
                    f"({nbytes} bytes at {ptr:#x}, now {t.nbytes} at {t.data_ptr():#x}: resized or set_ after "
                    "bind); bind it again"
                )

    def run(self, team=None):
        team = team if team is not None else self.program.team
        with self._lock:
            if self._tensors:
                self._check_bound()
            status = self.program._launch(team, lambda _, t: self._lib.sk_run_context_run(self.handle, t))
        _lib.check(status)
