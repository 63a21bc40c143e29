"""Segment: one sk stage of a partitioned graph as a library program.

The stage's nodes are added to a Graph in FX order, inside their scopes
(a scope reopened wherever its nodes resume) and on their streams. Values
from outside the stage are program inputs, parameters and buffers are
constants (copied at compile), and the values used outside are program
outputs. superkernel::wait_tensor(x, dep) is x itself, plus an event: one
recorded right after dep's producer, waited on before the first launching
node that reads the result.

A call takes torch CPU tensors in input order, makes each contiguous (a
no-op for most) and resolves torch's lazy negative bit (the memory of such
a tensor holds the values before the negation), allocates the outputs with
torch.empty and has the library write them in place (Program._run_pointers:
dtypes and shapes are the ones the plan was built for, so nothing is checked
again per call).

torch_views: the ATen views of the stage whose value is used outside it
(and the views they are views of). The runner makes them in torch on the
segment's output of their root, so that they alias it as in eager; the
library still computes them for the stage's own readers.
"""

import torch

from .translate import VIEW_OPS, node_val
from ..dtypes import to_torch
from ..graph import Graph


def _is_multi(node):
    return isinstance(node_val(node), (list, tuple))


class Segment:
    """A compiled sk stage. inputs: the fx nodes whose tensors a call takes,
    in order; outputs: the fx nodes whose tensors it returns, in order."""

    def __init__(self, name, nodes, sk, where, constants, team, config):
        self.name = name
        self.nodes = list(nodes)
        self.scopes = []
        self.inputs, self.outputs = [], []
        self.torch_views = _torch_views(self.nodes, sk)
        self._build(sk, where, constants, team, config)
        # One tensor per output to copy the shape and dtype from: empty_like
        # is the cheapest allocation torch has from Python.
        self._out_protos = [torch.empty(tuple(info.shape), dtype=to_torch(info.dtype)) for info in self.program.outputs]

    # ---- building ---------------------------------------------------------

    def _build(self, sk, where, constants, team, config):
        members = set(self.nodes)
        with Graph() as g:
            b = _Builder(g, members, sk, constants)
            for node in self.nodes:
                b.add(node, where.get(node, (None, 0)))
            b.close_scope()
            for node in self.nodes:
                if node in self.torch_views:
                    continue
                if any(u not in members or u in self.torch_views for u in node.users):
                    if isinstance(b.env[node], list):
                        raise RuntimeError(f"superkernel: segment output {node.name} holds several tensors")
                    g.mark_output(b.env[node], f"out{len(self.outputs)}_{node.name}")
                    self.outputs.append(node)
            self.inputs = b.inputs
            self.scopes = b.scopes
            self.program = g.compile(
                team,
                executor=config.executor,
                default_options=config.options or None,
                profile=config.profiling_dir is not None,
                watchdog_ms=config.watchdog_ms,
            )

    # ---- running ----------------------------------------------------------

    def __call__(self, *tensors):
        ptrs = [t.data_ptr() for t in tensors if t.is_contiguous() and not t.is_neg()]
        if len(ptrs) != len(tensors):
            tensors = [t.resolve_neg().contiguous() for t in tensors]  # alive until the run is over
            ptrs = [t.data_ptr() for t in tensors]
        outs = [torch.empty_like(p) for p in self._out_protos]
        self.program._run_pointers(ptrs, [o.data_ptr() for o in outs])
        return outs

    def __repr__(self):
        return f"Segment({self.name}: {len(self.nodes)} nodes, scopes {self.scopes})"


def _torch_views(nodes, sk):
    """The ATen views among nodes whose value is used outside them, and
    the member views they are views of (see the module's docstring)."""
    members = set(nodes)

    def aten_view(n):
        target = n.target
        return (
            n in members
            and sk[n].op in VIEW_OPS
            and isinstance(target, torch._ops.OpOverload)
            and target.namespace == "aten"
        )

    out = set()
    for node in nodes:
        if aten_view(node) and any(u not in members for u in node.users):
            n = node
            while aten_view(n) and n not in out:
                out.add(n)
                n = sk[n].slots["x"]
    return out


class _Builder:
    """Adds one stage's nodes to a Graph (see the module docstring)."""

    def __init__(self, g, members, sk, constants):
        self.g, self.members, self.sk, self.constants = g, members, sk, constants
        self.env = {}
        self.inputs = []
        self.scopes = []
        self.pending = {}  # node -> events the readers of its value wait on
        self.events = {}  # producer node -> event recorded after it
        self.scope = None
        self.stream = 0
        self.need_event = {self._producer(sk[n].slots["dependency"]) for n in members if sk[n].op == "wait"}

    def _producer(self, node):
        """The launching node of the segment that computes node's value, or
        None when it comes from outside (already done before the segment)."""
        while node in self.members and (self.sk[node].op in ("getitem", "wait") or self.sk[node].op in VIEW_OPS):
            node = self.sk[node].slots["x"]
        return node if node in self.members else None

    def value(self, node):
        if node not in self.env:
            if node in self.constants:
                data = self.constants[node].detach()
                self.env[node] = self.g.add_constant(f"const_{node.name}", data.contiguous())
            else:
                dtype, shape = node_val(node).dtype, tuple(node_val(node).shape)
                self.env[node] = self.g.add_input(f"in{len(self.inputs)}_{node.name}", dtype, shape)
                self.inputs.append(node)
        return self.env[node]

    def _enter(self, info, stream):
        if info is not None and info.bypassed:
            info = None
        if info is not self.scope:
            if self.scope is not None:
                self.g.end_scope()
            if info is not None:
                self.g.begin_scope(info.name, info.options or None)
                if info.name not in self.scopes:
                    self.scopes.append(info.name)
            self.scope = info
        if stream != self.stream:
            self.g.set_stream(stream)
            self.stream = stream

    def close_scope(self):
        if self.scope is not None:
            self.g.end_scope()
            self.scope = None

    def add(self, node, where):
        s = self.sk[node]
        if s.op == "getitem":
            self.env[node] = self.env[s.slots["x"]][s.attrs["index"]]
            self.pending[node] = self.pending.get(s.slots["x"], set())
            return
        if s.op == "wait":
            x, dep = s.slots["x"], s.slots["dependency"]
            self.env[node] = self.value(x)
            waits = set(self.pending.get(x, ()))
            producer = self._producer(dep)
            if producer is not None:
                waits.add(self.events[producer])
            self.pending[node] = waits
            return
        self._enter(*where)
        values = {}
        waits = set()
        for slot, v in s.slots.items():
            nodes = v if isinstance(v, (list, tuple)) else [v]
            vals = [self.value(n) for n in nodes]
            for n in nodes:
                waits |= self.pending.get(n, set())
            values[slot] = vals if isinstance(v, (list, tuple)) else vals[0]
        if s.op in VIEW_OPS:
            self.pending[node] = waits  # a view launches nothing: its readers wait
        else:
            for event in sorted(waits):
                self.g.wait_event(event)
        outs = self.g.add_op(s.op, values, s.attrs, name=node.name)
        self.env[node] = list(outs) if _is_multi(node) else outs[0]
        if node in self.need_event:
            self.events[node] = self.g.record_event()
