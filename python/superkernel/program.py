"""Team, Program and RunContext: compiling a graph and running it.

A run hands the library the caller's buffers (numpy arrays or torch CPU
tensors) by pointer; outputs are written in place. The calling thread works
as core 0 of the team, with the GIL released (ctypes does so for every
foreign call).
"""

import ctypes
import os
import sys
import threading
from collections import namedtuple

from . import _lib
from .buffers import check_buffer
from .dtypes import DType, to_numpy, to_torch

IOInfo = namedtuple("IOInfo", "name dtype shape")

EXECUTORS = ("default", "eager", "reference", "interp", "jit", "auto")
SK_IO_INPUT, SK_IO_OUTPUT = 0, 1


def parse_executor(name):
    """The sk_executor value of a name; InvalidArgumentError naming the
    accepted ones otherwise."""
    value = ctypes.c_int()
    _lib.check(_lib.lib().sk_executor_parse(_lib.encode(name), ctypes.byref(value)))
    return value.value


class Team:
    """A persistent team of cores (sk_team_create): num_cores threads, the
    caller included (0: every CPU available, or $SK_NUM_THREADS).
    pin_threads: 0 auto, 1 always, -1 never (see superkernel.h)."""

    def __init__(self, num_cores=0, pin_threads=0):
        self._lib = _lib.lib()
        cfg = _lib.TeamConfig(ctypes.sizeof(_lib.TeamConfig), int(num_cores), int(pin_threads))
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_team_create(ctypes.byref(cfg), ctypes.byref(handle)))
        self._handle = handle

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("superkernel.Team: the team was closed")
        return self._handle

    @property
    def num_cores(self):
        return self._lib.sk_team_num_cores(self.handle)

    def close(self):
        if getattr(self, "_handle", None) is not None:
            self._lib.sk_team_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Team(num_cores={self.num_cores})" if self._handle is not None else "Team(closed)"


_SHARED_TEAMS = {}
_SHARED_LOCK = threading.Lock()


def shared_team(num_cores):
    """The process's team of num_cores cores that the torch front end (the
    eager torch ops, the torch.compile backend, superkernel.export) runs
    on, made at first use and kept. One team per size, not one per model:
    every live team's workers count against the CPUs, and once they
    outnumber them the library's waits stop spinning (runtime/wait.c), so
    separate teams would slow each other down. Never pinned: PyTorch's own
    threads share the CPUs. Launches on one team take turns."""
    num_cores = int(num_cores)
    with _SHARED_LOCK:
        team = _SHARED_TEAMS.get(num_cores)
        if team is None:
            team = _SHARED_TEAMS[num_cores] = Team(num_cores=num_cores, pin_threads=-1)
        return team


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


def _new_like(info, torch_outputs):
    if torch_outputs:
        import torch

        return torch.empty(info.shape, dtype=to_torch(info.dtype))
    import numpy as np

    return np.empty(info.shape, dtype=to_numpy(info.dtype))


class Program:
    """A compiled graph (sk_compile). Immutable; runs change only a run
    context (the program's own, or a RunContext per thread)."""

    def __init__(self, graph, team=None, executor="default", default_options=None, profile=False, watchdog_ms=0):
        self._lib = _lib.lib()
        self.team = team
        self._on_jit = _lib.ON_JIT()  # kept alive with the config
        cfg = _lib.CompileConfig(
            ctypes.sizeof(_lib.CompileConfig),
            team.handle if team is not None else None,
            parse_executor(executor) if isinstance(executor, str) else int(executor),
            _lib.encode(default_options),
            1 if profile else 0,
            self._on_jit,
            None,
            int(watchdog_ms),
        )
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_compile(graph.handle, ctypes.byref(cfg), ctypes.byref(handle)))
        self._handle = handle
        self._keep = list(graph._borrowed)  # borrowed constants outlive the program
        lib = self._lib
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
        self._in_bytes = [_numel(i.shape) * i.dtype.itemsize for i in self.inputs]
        self._out_bytes = [_numel(o.shape) * o.dtype.itemsize for o in self.outputs]
        self._last_in_ptrs = self._last_out_ptrs = None  # what run_pointers last wrote
        self._bytes_dirty = True
        self._run_lock = threading.Lock()  # the buffer arrays above are shared

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("superkernel.Program: the program was closed")
        return self._handle

    def close(self):
        if getattr(self, "_handle", None) is not None:
            self._lib.sk_program_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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
        numpy arrays). Returns the outputs as a list."""
        inputs = self._ordered_inputs(args, kwargs)
        if outputs is None:
            torch = sys.modules.get("torch")
            as_torch = torch is not None and any(isinstance(x, torch.Tensor) for x in inputs)
            outputs = [_new_like(info, as_torch) for info in self.outputs]
        self.run_into(inputs, outputs, team)
        return list(outputs)

    def run_into(self, inputs, outputs, team=None, check=True):
        """The fast path: inputs and outputs as lists in declaration order,
        outputs written in place. check=False skips the Python-side dtype,
        shape and layout checks (the library still checks byte counts):
        for callers that already guarantee them."""
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise TypeError(
                f"Program.run_into: expected {len(self.inputs)} inputs and {len(self.outputs)} outputs, "
                f"got {len(inputs)} and {len(outputs)}"
            )
        team = team if team is not None else self.team
        with self._run_lock:
            ib, ob = self._in_bufs, self._out_bufs
            self._last_in_ptrs = self._last_out_ptrs = None  # rewritten below
            if check:
                for i, (x, info) in enumerate(zip(inputs, self.inputs)):
                    ib[i].data, ib[i].bytes = check_buffer(x, f"input {info.name}", info.dtype, info.shape)
                for i, (y, info) in enumerate(zip(outputs, self.outputs)):
                    ob[i].data, ob[i].bytes = check_buffer(y, f"output {info.name}", info.dtype, info.shape, True)
            else:
                for i, x in enumerate(inputs):
                    ib[i].data, ib[i].bytes = x.data_ptr(), x.numel() * x.element_size()
                for i, y in enumerate(outputs):
                    ob[i].data, ob[i].bytes = y.data_ptr(), y.numel() * y.element_size()
            status = self._lib.sk_program_run_by_index(
                self.handle, team.handle if team is not None else None, ib, len(inputs), ob, len(outputs)
            )
        _lib.check(status)

    def run_pointers(self, in_ptrs, out_ptrs, team=None):
        """The fastest path, for front ends that already guarantee every
        buffer: lists of the data pointers (ints) of dense buffers of exactly
        the declared dtypes and shapes, in declaration order. Nothing is
        checked in Python; the library reads and writes the declared byte
        counts. Pointers equal to the last call's are not written again."""
        team = team if team is not None else self.team
        with self._run_lock:
            if in_ptrs != self._last_in_ptrs or out_ptrs != self._last_out_ptrs or self._bytes_dirty:
                if len(in_ptrs) != len(self._in_bytes) or len(out_ptrs) != len(self._out_bytes):
                    raise TypeError(
                        f"Program.run_pointers: expected {len(self._in_bytes)} inputs and {len(self._out_bytes)} "
                        f"outputs, got {len(in_ptrs)} and {len(out_ptrs)}"
                    )
                if in_ptrs:
                    self._in_rows[: len(in_ptrs), 1] = in_ptrs
                    self._in_rows[: len(in_ptrs), 2] = self._in_bytes
                if out_ptrs:
                    self._out_rows[: len(out_ptrs), 1] = out_ptrs
                    self._out_rows[: len(out_ptrs), 2] = self._out_bytes
                self._last_in_ptrs, self._last_out_ptrs = list(in_ptrs), list(out_ptrs)
                self._bytes_dirty = False
            status = self._lib.sk_program_run_by_index(
                self.handle, team.handle if team is not None else None, self._in_bufs, len(in_ptrs),
                self._out_bufs, len(out_ptrs)
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
        _lib.check(self._lib.sk_program_jit_source(self.handle, _lib.encode(scope), ctypes.byref(text)))
        return _lib.take_text(text)

    @property
    def stats(self):
        """sk_program_get_stats as a dict (executor as its name)."""
        s = _lib.ProgramStats(ctypes.sizeof(_lib.ProgramStats))
        _lib.check(self._lib.sk_program_get_stats(self.handle, ctypes.byref(s)))
        out = {name: getattr(s, name) for name, _ in _lib.ProgramStats._fields_[2:]}
        out["executor"] = self._lib.sk_executor_name(s.executor).decode()
        return out

    def write_profile(self, directory):
        """Writes op_statistic.csv and trace.json of the runs so far
        (compile with profile=True, or scopes with profiling=1)."""
        _lib.check(self._lib.sk_program_write_profile(self.handle, _lib.encode(os.fspath(directory))))

    def reset_profile(self):
        self._lib.sk_program_reset_profile(self.handle)


class RunContext:
    """sk_run_context: one thread's bindings and scratch for a program."""

    def __init__(self, program):
        self._lib = _lib.lib()
        self.program = program
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_run_context_create(program.handle, ctypes.byref(handle)))
        self._handle = handle
        self._bound = {}  # keeps bound buffers alive

    def bind(self, kind, index, buf):
        """Binds input or output `index` (kind "input" / "output")."""
        k = {"input": SK_IO_INPUT, "output": SK_IO_OUTPUT}[kind]
        info = (self.program.inputs if k == SK_IO_INPUT else self.program.outputs)[index]
        ptr, nbytes = check_buffer(buf, f"{kind} {info.name}", info.dtype, info.shape, k == SK_IO_OUTPUT)
        _lib.check(self._lib.sk_run_context_bind(self._handle, k, index, ptr, nbytes))
        self._bound[(k, index)] = buf

    def run(self, team=None):
        team = team if team is not None else self.program.team
        _lib.check(self._lib.sk_run_context_run(self._handle, team.handle if team is not None else None))

    def close(self):
        if getattr(self, "_handle", None) is not None:
            self._lib.sk_run_context_destroy(self._handle)
            self._handle = None

    __del__ = close
