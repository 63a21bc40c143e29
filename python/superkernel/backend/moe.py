"""The backend on stock MoE blocks: a super-kernel scope that holds one of
transformers' MoE blocks runs it as superkernel.optimize's fused layer.

    with super_kernel("moe"):
        y = block(x)            # under torch.compile(backend="superkernel")

Dynamo's graph (before AOTAutograd lowers it) still says which module each
node came from (node.meta["nn_module_stack"]: module id -> (path, class)).
`fuse_moe_blocks(gm, example_inputs)` looks, in each super-kernel scope, for
a module whose nodes all lie in that scope, whose one tensor input from
outside is x and whose one value used outside is y, and that
hf_moe_blocks.describe accepts; it finds the module object from the real
parameter it was traced with (the experts' gate_up_proj, an example input:
its owner, then the owner's owner, through the garbage collector's
referrers), builds an OptimizedMoE over the block's own weights (the model
is not changed) and replaces the block's nodes by one
torch.ops.superkernel.moe_block(x, layer) node. Anything else is left to
the partitioner as it is (a block the library cannot run, one cut by a
graph break, one whose weights were made under torch.inference_mode(), a
scope with other work around the block: that work is partitioned as
usual).
"""

import gc
import itertools

import torch

from .. import hf_moe_blocks
from .. import scope as _scope
from .partition import _marker_attrs

_GATE_UP = "_parameters['gate_up_proj']"


def _source_name(node):
    """Where Dynamo got a placeholder ("L['self']._modules['mlp']...")."""
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", "")
    return name() if callable(name) else str(name)


def _is_state(node):
    """A parameter or buffer placeholder."""
    name = _source_name(node) if node.op == "placeholder" else ""
    return "._parameters[" in name or "._buffers[" in name


def _scope_regions(graph):
    """Lists of the call nodes of each super-kernel scope."""
    regions, current = [], None
    for node in graph.nodes:
        # Dynamo's graph calls the op packets (AOTAutograd's, the overloads).
        marker = str(node.target).split(".")[:2] if node.op == "call_function" else None
        if marker == ["superkernel", "scope_enter"]:
            if _scope.SCOPE_KEY in _marker_attrs(node):
                current = []
                regions.append(current)
            continue
        if marker == ["superkernel", "scope_exit"]:
            current = None
            continue
        if current is not None and node.op in ("call_function", "call_method", "call_module"):
            current.append(node)
    return regions


def _owner(obj, attr_dict):
    """The module whose attr_dict (_parameters or _modules) holds obj: obj
    <- that dict <- the module's __dict__ <- the module."""
    for d in gc.get_referrers(obj):
        if not isinstance(d, dict):
            continue
        for attrs in gc.get_referrers(d):
            if not isinstance(attrs, dict) or attrs.get(attr_dict) is not d:
                continue
            for m in gc.get_referrers(attrs):
                if isinstance(m, torch.nn.Module) and getattr(m, "__dict__", None) is attrs:
                    return m
    return None


def _block_object(key, cls, placeholders, example_inputs):
    """The block module of nn_module_stack entry (key, cls), found from its
    experts' gate_up_proj parameter among the example inputs, or None."""
    for i, node in enumerate(placeholders):
        stack = node.meta.get("nn_module_stack") or {}
        if not _source_name(node).endswith(_GATE_UP):
            continue
        if key not in stack or i >= len(example_inputs):
            continue
        param = example_inputs[i]
        experts = _owner(param, "_parameters") if isinstance(param, torch.nn.Parameter) else None
        block = _owner(experts, "_modules") if experts is not None else None
        if block is not None and type(block) is cls and str(id(block)) == str(key):
            return block
    return None


def _fuse_one(graph, region, key, placeholders, example_inputs, keep):
    in_block = {n for n in region if key in (n.meta.get("nn_module_stack") or {})}
    if not in_block:
        return False
    outside = [n for n in graph.nodes if n not in in_block and n.op != "placeholder"
               and key in (n.meta.get("nn_module_stack") or {})]
    if outside:  # the block does not lie wholly in the scope
        return False
    cls = next(iter(in_block)).meta["nn_module_stack"][key][1]
    inputs = {a for n in in_block for a in n.all_input_nodes if a not in in_block}
    tensors = [a for a in inputs if not _is_state(a)]
    used_outside = [n for n in in_block if any(u not in in_block for u in n.users)]
    if len(tensors) != 1 or len(used_outside) != 1:
        return False
    block = _block_object(key, cls, placeholders, example_inputs)
    if block is None or any(t.is_inference() for t in itertools.chain(block.parameters(), block.buffers())):
        # The fused layer sees a weight changed in place by its version
        # counter, which tensors made under inference_mode lack: such a block
        # is partitioned as usual (its weights run-time inputs, runner.py).
        return False
    spec = hf_moe_blocks.describe(block)
    if spec is None or isinstance(spec, str):
        return False
    from ..moe_optimize import OptimizedMoE

    spec.router_module = block.gate
    fused = OptimizedMoE(spec, None, "")
    keep.append(fused)
    (x,), (y,) = tensors, used_outside
    with graph.inserting_after(y):
        node = graph.call_function(torch.ops.superkernel.moe_block.default, (x, fused.layer))
    node.meta.update({k: v for k, v in y.meta.items() if k in ("example_value", "val", "tensor_meta")})
    y.replace_all_uses_with(node)
    for n in reversed(list(graph.nodes)):
        if n in in_block and not n.users:
            graph.erase_node(n)
    return True


def fuse_moe_blocks(gm, example_inputs, keep):
    """Rewrites gm in place (see the module's docstring); the OptimizedMoE
    modules made go into keep (their owner keeps them alive). Returns how
    many blocks it fused."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    fused = 0
    for region in _scope_regions(graph):
        keys = []
        for n in region:
            for k, (_, cls) in (n.meta.get("nn_module_stack") or {}).items():
                if k not in keys and isinstance(cls, type) and issubclass(cls, torch.nn.Module):
                    keys.append(k)
        for key in keys:
            if _fuse_one(graph, [n for n in region if n in graph.nodes], key, placeholders, example_inputs, keep):
                fused += 1
                break
    if fused:
        graph.lint()
        gm.recompile()
    return fused
