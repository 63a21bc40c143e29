"""Scopes: marking the ops of a model that become one super kernel.

    import superkernel.scope as scope

    def forward(self, x, w):
        with scope.super_kernel("sk1", "early-start=0"):
            h = torch.ops.superkernel.grouped_matmul([x], [w])[0]
            ...

As torchair's scopes (torchair/scope/__init__.py), a scope is a context
manager whose __enter__ and __exit__ call two marker ops,

    superkernel::scope_enter(str[] keys, str[] values, bool need_execute=False) -> ()
    superkernel::scope_exit(bool need_execute=False) -> ()

that do nothing when run (so in eager mode a scope is a no-op) and are
marked side-effecting (torch.fx.node.has_side_effect), so torch.compile
(Dynamo, then AOTAutograd) keeps them in the graph the superkernel backend
partitions: every op between an enter and its exit belongs to the scope.
The backend checks what the markers say when it compiles the graph:
options (a bad key or value raises, naming it), pairing (a graph break
inside a scope leaves an enter without its exit: an error saying so) and
nesting (a super-kernel scope inside another: an error).

Markers, by their keys (torchair's):

    super_kernel(name, options="")   _super_kernel_scope, _super_kernel_options
    npu_stream_switch(tag, ...)      _user_stream_label, _user_stream_priority,
                                     _enable_inner_parallel: the ops inside run
                                     on stream 1 of the super-kernel graph (the
                                     library has two streams, 0 and 1)
    limit_core_num(aic, aiv)         _op_aicore_num, _op_vectorcore_num
    op_never_timeout(enable=True)    _op_exec_never_timeout
    data_dump()                      torchair_enable_data_dump
    (the last three are accepted and ignored by the backend, with a warning)

npu_wait_tensor(t, dep) is an op, not a scope (superkernel::wait_tensor):
run eagerly it returns a copy of t; the backend turns it into an event wait
(the ops that read the result wait for the op that produced dep).
"""

from typing import Any

import torch
from torch.fx.node import has_side_effect

from . import _lib
from . import torch_ops  # noqa: F401  (defines the namespace first: "DEF" before our "FRAGMENT")

NAMESPACE = "superkernel"
_LIB = torch.library.Library(NAMESPACE, "FRAGMENT")

# torchair's marker keys.
SCOPE_KEY = "_super_kernel_scope"
OPTIONS_KEY = "_super_kernel_options"
STREAM_KEY = "_user_stream_label"
STREAM_PRIORITY_KEY = "_user_stream_priority"
INNER_PARALLEL_KEY = "_enable_inner_parallel"
AICORE_KEY = "_op_aicore_num"
VECTORCORE_KEY = "_op_vectorcore_num"
NEVER_TIMEOUT_KEY = "_op_exec_never_timeout"
DATA_DUMP_KEY = "torchair_enable_data_dump"

_LIB.define("scope_enter(str[] keys, str[] values, bool need_execute=False) -> ()")
_LIB.define("scope_exit(bool need_execute=False) -> ()")
_LIB.define("wait_tensor(Tensor self, Tensor dependency) -> Tensor")


def _scope_enter(keys, values, need_execute=False):
    return None


def _scope_exit(need_execute=False):
    return None


# The markers take no tensor, so the dispatcher finds no backend from the
# arguments: BackendSelect serves them (as torchair registers them), CPU and
# Meta the cases where a tensor-mode key is set.
for _key in ("CPU", "Meta", "BackendSelect"):
    _LIB.impl("scope_enter", _scope_enter, _key)
    _LIB.impl("scope_exit", _scope_exit, _key)

scope_enter = torch.ops.superkernel.scope_enter.default
scope_exit = torch.ops.superkernel.scope_exit.default
wait_tensor_op = torch.ops.superkernel.wait_tensor.default
has_side_effect(scope_enter)
has_side_effect(scope_exit)


def _wait_tensor_cpu(self, dependency):
    # A copy, not an alias: a custom op's output must not alias its input.
    return self.clone()


def _wait_tensor_fake(self, dependency):
    return torch.empty_like(self)


_LIB.impl("wait_tensor", _wait_tensor_cpu, "CPU")
torch.library.register_fake(f"{NAMESPACE}::wait_tensor", _wait_tensor_fake, lib=_LIB)
# The gradient flows to self as through an identity; none to dependency.
torch.library.register_autograd(f"{NAMESPACE}::wait_tensor", lambda ctx, grad: (grad, None), lib=_LIB)


# TorchScript records neither the markers' string lists (torch.jit.trace)
# nor this module's Python (torch.jit.script): a scope says so when entered.
_TORCHSCRIPT = (
    "superkernel: super-kernel scopes (superkernel.scope) are not supported under TorchScript (torch.jit.trace / "
    "torch.jit.script); compile with torch.compile(backend=\"superkernel\") or superkernel.export instead"
)


class _Scope:
    """A marker scope: (key, value) string pairs handed to scope_enter."""

    __slots__ = ("attrs",)

    def __init__(self, attrs):
        self.attrs = [(str(k), str(v)) for k, v in attrs]

    def __enter__(self):
        if torch.jit.is_tracing():
            raise RuntimeError(_TORCHSCRIPT)
        return torch.ops.superkernel.scope_enter([k for k, _ in self.attrs], [v for _, v in self.attrs])

    def __exit__(self, *exc):
        return torch.ops.superkernel.scope_exit()

    def __repr__(self):
        return f"superkernel.scope._Scope({self.attrs!r})"


class _ScriptedScope:
    """What the markers are to torch.jit.script: a scope whose entry raises
    (TorchScript compiles this class, and not the Python of the markers)."""

    def __init__(self):
        pass

    def __enter__(self):
        raise RuntimeError(
            "superkernel: super-kernel scopes (superkernel.scope) are not supported under TorchScript "
            "(torch.jit.trace / torch.jit.script); compile with torch.compile(backend=\"superkernel\") or "
            "superkernel.export instead"
        )

    def __exit__(self, type: Any, value: Any, traceback: Any):
        pass


def super_kernel(name: str, options: str = ""):
    """The ops inside become one super kernel named `name` (with the scope's
    option string, docs/options.md). Each `with` block is a scope of its own,
    also when names repeat. In eager mode: nothing. Not under TorchScript:
    a scripted or traced model raises when it enters the scope."""
    if torch.jit.is_scripting():
        return _ScriptedScope()
    else:
        return _super_kernel(name, options)


def _super_kernel(name, options):
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise TypeError(f"super_kernel: the scope name must be a str, got {type(name).__name__}")
    if options is None:
        options = ""
    if not isinstance(options, str):
        raise TypeError(f"super_kernel: options must be a str ('key=value:key=value'), got {type(options).__name__}")
    # refused here, where the model says it, rather than at compile time
    _lib.encode(name, "super_kernel: scope name")
    _lib.encode(options, f"super_kernel {name!r}: options")
    return _Scope([(SCOPE_KEY, name), (OPTIONS_KEY, options)])


def npu_stream_switch(stream_tag: str, stream_priority: int = 0, enable_inner_parallel: bool = True):
    """The ops inside run on the stream named stream_tag: stream 1 of the
    super-kernel graph (ops outside any stream_switch are on stream 0). A
    graph may use one tag: the library has two streams. With the scope
    option stream-fusion=1 the two streams' chains of a scope run at once."""
    if torch.jit.is_scripting():
        return _ScriptedScope()
    else:
        return _npu_stream_switch(stream_tag, stream_priority, enable_inner_parallel)


def _npu_stream_switch(stream_tag, stream_priority, enable_inner_parallel):
    if not isinstance(stream_tag, str):
        raise TypeError(f"npu_stream_switch: stream_tag must be a str, got {type(stream_tag).__name__}")
    _lib.encode(stream_tag, "npu_stream_switch: stream_tag")
    return _Scope(
        [
            (STREAM_KEY, stream_tag),
            (STREAM_PRIORITY_KEY, str(_lib.as_int(stream_priority, "npu_stream_switch: stream_priority"))),
            (INNER_PARALLEL_KEY, str(bool(enable_inner_parallel))),
        ]
    )


def npu_wait_tensor(self, dependency):
    """self, once dependency's producer is done: the ops that read the
    result wait for it (an event in the super-kernel graph). Run eagerly, a
    copy of self."""
    return torch.ops.superkernel.wait_tensor(self, dependency)


def limit_core_num(op_aicore_num, op_vectorcore_num):
    """torchair's per-op core limits: accepted, ignored by the backend (with
    a warning; use the scope options debug-aic-num / debug-aiv-num)."""
    aic = _lib.as_int(op_aicore_num, "limit_core_num: op_aicore_num")
    aiv = _lib.as_int(op_vectorcore_num, "limit_core_num: op_vectorcore_num")
    return _Scope([(AICORE_KEY, str(aic)), (VECTORCORE_KEY, str(aiv))])


def op_never_timeout(enable=True):
    """torchair's marker: accepted, ignored by the backend (with a warning)."""
    if not isinstance(enable, bool):
        raise TypeError(f"op_never_timeout: enable must be a bool, got {type(enable).__name__}")
    return _Scope([(NEVER_TIMEOUT_KEY, str(enable))])


def data_dump():
    """torchair's marker: accepted, ignored by the backend (with a warning)."""
    return _Scope([(DATA_DUMP_KEY, "True")])


__all__ = [
    "super_kernel",
    "npu_stream_switch",
    "npu_wait_tensor",
    "limit_core_num",
    "op_never_timeout",
    "data_dump",
    "scope_enter",
    "scope_exit",
    "wait_tensor_op",
]
