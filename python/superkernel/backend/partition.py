"""Partitioning an ATen FX graph between the library and torch.

1. The scope markers (superkernel.scope) are read in graph order: each node
   gets the super-kernel scope and the stream it was traced in. Each `with`
   block is one library scope: "name" the first time, then "name#2", ...
   for a name seen again, skipping any name a scope of the graph was given
   by its user (so a user's own "name#2" keeps its name and stays its own
   scope). Checked here: options (a bad key or value raises naming it),
   pairing, nesting, at most one stream tag.
2. Each call node is classified (translate.py): the library runs it
   exactly as torch would (with CompilerConfig(torch_bits=False) also the
   opt-in ops of its own arithmetic), or it runs in torch. An op that runs in torch
   inside a scope splits the scope: a warning, or an error under the
   scope option strict-scope-check=abort; under bypass the whole scope runs
   without fusion.
3. Stages: the library's nodes are grouped into as few programs as the
   data dependencies allow. Execution is sk stage 0, torch stage 0, sk
   stage 1, torch stage 1, ...: a library node goes to the earliest sk
   stage after its torch producers, a torch node to the earliest torch
   stage after its producers and not before the torch node before it (torch
   nodes keep their order: random number generators, side effects). A
   stage holding only views (reshape, slice, ...) is left to torch, where a
   view costs nothing.
"""

import warnings
from dataclasses import dataclass, field

import torch

from .. import scope as _scope
from .translate import VIEW_OPS, Unsupported, is_getitem, op_label, tensor_meta, translate
from ..schema import render_options, validate_options


class ScopeError(ValueError):
    """The scope markers of a graph are wrong (unpaired, nested, a bad
    option, a third stream)."""


@dataclass
class ScopeInfo:
    name: str  # the library's scope name (unique in the graph)
    user_name: str  # as given to super_kernel()
    options: str
    strict: str  # strict-scope-check: "", "abort" or "bypass"
    nodes: list = field(default_factory=list)
    bypassed: bool = False  # bypass and an op ran in torch: no fusion


@dataclass
class SkNode:
    """A node the library runs: op (a library op, "getitem" or "wait"),
    slots {name: Node or [Node]}, attrs."""

    node: torch.fx.Node
    op: str
    slots: dict
    attrs: dict

    @property
    def is_free(self):
        """Launches nothing: views, getitem, wait."""
        return self.op in VIEW_OPS or self.op in ("getitem", "wait")

    def inputs(self):
        out = []
        for v in self.slots.values():
            out.extend(v if isinstance(v, (list, tuple)) else [v])
        return [n for n in out if isinstance(n, torch.fx.Node)]


def _strict(scope_options, default_options):
    """The scope's strict-scope-check as the library layers its options
    over the defaults (sk_options_render_layered): "", "abort" or "bypass"."""
    pairs = render_options(scope_options, default_options or "").split(":")
    return dict(p.split("=", 1) for p in pairs if "=" in p).get("strict-scope-check", "")


_IGNORED_KEYS = {
    _scope.AICORE_KEY: "limit_core_num",
    _scope.VECTORCORE_KEY: "limit_core_num",
    _scope.NEVER_TIMEOUT_KEY: "op_never_timeout",
    _scope.DATA_DUMP_KEY: "data_dump",
}
_STREAM_KEYS = (_scope.STREAM_KEY, _scope.STREAM_PRIORITY_KEY, _scope.INNER_PARALLEL_KEY)


def is_marker(node):
    return node.op == "call_function" and node.target in (_scope.scope_enter, _scope.scope_exit)


def _marker_attrs(node):
    keys = node.kwargs.get("keys", node.args[0] if node.args else [])
    values = node.kwargs.get("values", node.args[1] if len(node.args) > 1 else [])
    if len(keys) != len(values):
        raise ScopeError(f"scope_enter with {len(keys)} keys and {len(values)} values")
    return dict(zip(keys, values))


def _scope_namer(graph):
    """name(user name) -> the library's name of the next scope so named:
    unique in the graph, and never a name some scope of it was given by
    its user."""
    taken = set()
    for node in graph.nodes:
        if node.op == "call_function" and node.target == _scope.scope_enter:
            try:
                user = _marker_attrs(node).get(_scope.SCOPE_KEY)
            except ScopeError:
                continue  # read_markers says what is wrong with it
            if user:
                taken.add(user)
    seen = {}

    def name(user):
        count = seen.get(user, 0) + 1
        seen[user] = count
        if count == 1 and user:
            return user
        base = user or "scope"
        while f"{base}#{count}" in taken:
            count += 1
        taken.add(f"{base}#{count}")
        return f"{base}#{count}"

    return name


def read_markers(graph, default_options="", refusal=None):
    """({node: (ScopeInfo or None, stream)}, [ScopeInfo]) for the call
    nodes of graph; ScopeError when the markers are wrong. refusal: the
    library's refusal of an op while Dynamo traced the code being compiled
    (torch_ops.take_refusal), which explains a scope cut short."""
    stack = []  # (attrs, ScopeInfo or None, stream or None)
    scopes, tags, where = [], {}, {}
    scope_name = _scope_namer(graph)
    warned = set()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target == _scope.scope_enter:
            attrs = _marker_attrs(node)
            info = stream = None
            if _scope.SCOPE_KEY in attrs:
                user = attrs[_scope.SCOPE_KEY]
                outer = next((f[1] for f in stack if f[1] is not None), None)
                if outer is not None:
                    raise ScopeError(
                        f"super-kernel scope {user!r} is nested in scope {outer.user_name!r}: "
                        "super-kernel scopes do not nest"
                    )
                options = attrs.get(_scope.OPTIONS_KEY, "")
                try:
                    validate_options(options)
                except ValueError as e:
                    raise ScopeError(f"super-kernel scope {user!r}: {e}") from None
                info = ScopeInfo(scope_name(user), user, options, _strict(options, default_options))
                scopes.append(info)
            if _scope.STREAM_KEY in attrs:
                tag = attrs[_scope.STREAM_KEY]
                if tag not in tags:
                    if tags:
                        raise ScopeError(
                            f"npu_stream_switch({tag!r}): a second stream tag after {next(iter(tags))!r}; "
                            "the library has two streams, 0 (ops outside any stream switch) and 1 (one tag)"
                        )
                    tags[tag] = 1
                stream = tags[tag]
            for key in attrs:
                if key in _IGNORED_KEYS and _IGNORED_KEYS[key] not in warned:
                    warned.add(_IGNORED_KEYS[key])
                    warnings.warn(
                        f"superkernel: torchair's {_IGNORED_KEYS[key]} scope is accepted and ignored on the CPU",
                        stacklevel=2,
                    )
                elif key not in _IGNORED_KEYS and key not in (_scope.SCOPE_KEY, _scope.OPTIONS_KEY) + _STREAM_KEYS:
                    if key not in warned:
                        warned.add(key)
                        warnings.warn(f"superkernel: scope marker key {key!r} is not known; ignored", stacklevel=2)
            stack.append((attrs, info, stream))
            continue
        if node.target == _scope.scope_exit:
            if not stack:
                # The scope began before a graph break (print, .item(),
                # data-dependent control flow): its part in this graph ran
                # outside it, as an op that must run in torch splits a scope.
                warnings.warn(
                    "superkernel: a scope ends in this graph but began in an earlier one: torch.compile split it at "
                    "a graph break (print, .item(), data-dependent control flow...) inside it; the ops before the "
                    "end here run outside any scope (move what breaks the graph out of the scope to fuse them)",
                    stacklevel=2,
                )
                continue
            stack.pop()
            continue
        info = next((f[1] for f in reversed(stack) if f[1] is not None), None)
        stream = next((f[2] for f in reversed(stack) if f[2] is not None), 0)
        where[node] = (info, stream)
        if info is not None:
            info.nodes.append(node)
    for _attrs, info, _stream in stack:  # opened here, closed after a graph break
        what = f"super-kernel scope {info.user_name!r}" if info else "a scope (npu_stream_switch ...)"
        if refusal is not None:
            # The graph broke because the library refused an op of the scope
            # while Dynamo traced it: that is the error to give, not the break.
            op, etype, why = refusal
            text = f"superkernel::{op} in {what}: the library refused it: {why}"
            if info is not None and info.strict == "abort":
                raise _error_like(etype, text)
            warnings.warn(f"superkernel: {text}; {what} is split there", stacklevel=2)
            continue
        message = (
            f"{what} begins in this graph but does not end in it: torch.compile split the scope at a graph "
            "break (print, .item(), data-dependent control flow, an unsupported call...) inside it"
        )
        if info is not None and info.strict == "abort":
            raise ScopeError(message + " (strict-scope-check=abort); move what breaks the graph out of the scope")
        warnings.warn(f"superkernel: {message}; its part in this graph is fused on its own", stacklevel=2)
    return where, scopes


def _error_like(etype, text):
    """The library's exception type with our text (a ScopeError if that
    type cannot be made from a message alone)."""
    try:
        error = etype(text)
    except Exception:
        return ScopeError(text)
    return error if isinstance(error, Exception) else ScopeError(text)


def classify(graph, where, torch_bits=True):
    """{node: SkNode} for the call nodes the library runs; warns about (or,
    under strict-scope-check=abort, refuses) scopes split by torch ops.
    torch_bits=False: also the opt-in ATen ops (translate.py)."""
    sk = {}
    for node in graph.nodes:
        if node.op != "call_function" or is_marker(node):
            continue
        try:
            sk[node] = _classify_one(node, sk, torch_bits)
        except Unsupported as why:
            _torch_in_scope(node, where.get(node, (None, 0))[0], str(why))
    return sk


def _classify_one(node, sk, torch_bits):
    if is_getitem(node):
        src = node.args[0]
        if src not in sk or not isinstance(node.args[1], int):
            raise Unsupported("getitem of a torch value")
        return SkNode(node, "getitem", {"x": src}, {"index": node.args[1]})
    if node.target == _scope.wait_tensor_op:
        self_, dep = node.args[0], node.args[1]
        tensor_meta(self_)  # a tensor the library holds
        return SkNode(node, "wait", {"x": self_, "dependency": dep}, {})
    op, slots, attrs = translate(node, torch_bits)
    return SkNode(node, op, slots, attrs)


def _torch_in_scope(node, info, why):
    # superkernel.optimize's fused layer (backend/moe.py) is a super kernel of its own.
    if info is None or is_getitem(node) or str(node.target) == "superkernel.moe_block.default":
        return
    label = op_label(node)
    if info.strict == "abort":
        raise ScopeError(
            f"super-kernel scope {info.user_name!r}: op {label} ({node.name}) cannot run in the library: {why} "
            "(strict-scope-check=abort)"
        )
    if info.strict == "bypass":
        if not info.bypassed:
            info.bypassed = True
            warnings.warn(
                f"superkernel: op {label} in super-kernel scope {info.user_name!r} runs in torch ({why}); "
                "strict-scope-check=bypass: the scope runs without fusion",
                stacklevel=3,
            )
        return
    warnings.warn(
        f"superkernel: op {label} ({node.name}) in super-kernel scope {info.user_name!r} runs in torch ({why}); "
        "it splits the scope",
        stacklevel=3,
    )


def _inputs(node):
    return [n for n in node.all_input_nodes if n.op not in ("placeholder", "get_attr")]


def stages(graph, sk):
    """[(sk_nodes, torch_nodes)] in execution order; demotes view-only
    stages to torch (updating sk). A torch node with side effects (an
    in-place op, a mutation) is a barrier: the library nodes before it in
    graph order run before it, those after it run after it."""
    calls = [n for n in graph.nodes if n.op == "call_function" and not is_marker(n)]
    while True:
        stage, last_torch, last_sk, barrier = {}, 0, 0, 0
        for node in calls:
            deps = [stage[p] + (1 if node in sk and p not in sk else 0) for p in _inputs(node) if p in stage]
            if node in sk:
                stage[node] = max(deps + [barrier])
                last_sk = max(last_sk, stage[node])
            else:
                floor = [last_torch, last_sk] if node.is_impure() else [last_torch]
                stage[node] = last_torch = max(deps + floor)
                if node.is_impure():
                    barrier = stage[node] + 1
        n = max(stage.values(), default=-1) + 1
        groups = [([], []) for _ in range(n)]
        for node in calls:
            groups[stage[node]][0 if node in sk else 1].append(node)
        demote = [node for sk_nodes, _ in groups if all(sk[x].is_free for x in sk_nodes) for node in sk_nodes]
        if not demote:
            return groups
        for node in demote:
            del sk[node]
        # a getitem whose source went to torch goes with it
        for node in calls:
            if node in sk and sk[node].op == "getitem" and sk[node].slots["x"] not in sk:
                del sk[node]
