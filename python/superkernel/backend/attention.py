"""The opt-in attention mapping (CompilerConfig(torch_bits=False)):
F.scaled_dot_product_attention as the library's attention op.

On the CPU, AOTAutograd leaves of F.scaled_dot_product_attention (under
no_grad or inference_mode, with no attn_mask and dropout_p 0, any head
dim, GQA or not) one node

    out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(
        q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, D],
        dropout_p, is_causal, attn_mask=None, scale=None)

(a mask stays a kwarg of it; dropout_p > 0 decomposes into bmm / softmax
nodes instead). map_attention(gm) rewrites each such node the library
computes into torch.ops.superkernel.attention (docs/ops.md, "attention":
q [T, Hq, D], k_cache / v_cache [S, Hkv, D], positions [T], o [T, Hq, D]),
which translate.py then maps like any superkernel op:

    q' = squeeze(permute(q, [0, 2, 1, 3]), 0)        [T, Hq, D]   (k', v' alike;
         squeeze(y, 0) for q = transpose(y, 1, 2)), then clone(contiguous)
         where that view is not dense: a copy in torch
    pos = a constant [T] int64: causal 0 .. T-1, not causal S-1 for every token
    o   = superkernel.attention(q', k', v', pos, scale=...)   [T, Hq, D]
    out = permute(unsqueeze(o, 0), [0, 2, 1, 3])       [1, Hq, T, D]

Which nodes: batch 1; no attn_mask; dropout_p 0; q, k, v one float dtype
with k and v of one shape; Hq a multiple of Hkv (what enable_gqa allows);
scale None (the library's scale 0: 1 / sqrt(D)) or a finite nonzero float
(the library's 0 would mean the default); is_causal with T <= S (torch's
causal mask is top-left: token t attends keys 0 .. t, the library's
position t), or not causal (every token attends every key: position S-1);
the logsumexp output unused; and what the library's op_supported accepts
(its head dims: multiples of 16 up to 512). Everything else stays in torch
as it was. Note that torch's is_causal with T = 1 and S > 1 attends key 0
alone (top-left), not the whole cache: a decode step is is_causal=False.

Layouts and memory traffic: the library's layout is token-major
([S, Hkv, D]), torch's head-major ([1, Hkv, S, D]).
  - Inputs: one whose token-major view is not dense is copied in torch at
    every call (a KV cache kept head-major: all of it, every decode
    step). One made by transposing a [1, L, H, D] projection, as
    transformers' attention layers make q, k and v, is read as that
    projection: no copy, no view in torch.
  - The output: torch's is laid out as q is (its empty_like(query)). A
    transpose of it back to [1, T, Hq, D] that was traced dense (q
    token-major), and the permute back where torch's is token-major or T
    or Hq is 1, are the library's output itself. A head-major q gives a
    contiguous output, which the permute back is not (T > 1, Hq > 1): it
    is made dense by a copy, unless the graph only transposes it back and
    makes that contiguous (`.transpose(1, 2).contiguous()`, `.reshape`):
    then that contiguous value is the library's output, no copy.
  So every node after the rewrite sees the traced shape, dtype and
  strides (size-1 dimensions aside), and transformers' attention in a
  scope, from the projections' views to the output's reshape, is one
  library program. A traced output in any other layout (none with batch 1
  and a dense head dim, which the flash kernel needs) is not rewritten.

A later change can give the library's attention a head-major cache layout
and save the copies of k and v.

New nodes get meta["val"] computed by the op itself under the graph's fake
mode, so the partitioner reads them like traced nodes. The rewrite works on
a copy of gm (Plan keeps the caller's graph module as it was).
"""

import math
import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .. import schema
from ..dtypes import DType, to_dtype

aten = torch.ops.aten
FLASH_CPU = aten._scaled_dot_product_flash_attention_for_cpu.default
_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _arg(node, index, name, default):
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _fake_mode(vals):
    modes = {getattr(v, "fake_mode", None) for v in vals}
    return modes.pop() if len(modes) == 1 else None


def _match(node):
    """{attrs, positions (a list), fake_mode} of a flash node the library
    computes; None otherwise (the module's docstring)."""
    q, k, v = node.args[:3]
    vals = [_val(x) for x in (q, k, v)]
    if not all(isinstance(t, torch.Tensor) for t in vals):
        return None
    fake_mode = _fake_mode(vals)
    if fake_mode is None:
        return None
    if _arg(node, 3, "dropout_p", 0.0) != 0 or node.kwargs.get("attn_mask") is not None:
        return None
    is_causal = bool(_arg(node, 4, "is_causal", False))
    scale = node.kwargs.get("scale")
    if scale is not None and (isinstance(scale, bool) or not math.isfinite(scale) or scale == 0):
        return None
    qv, kv, vv = vals
    if qv.dtype not in _FLOATS or kv.dtype != qv.dtype or vv.dtype != qv.dtype:
        return None
    if any(t.device.type != "cpu" or t.dim() != 4 for t in vals):
        return None
    shapes = [tuple(t.shape) for t in vals]
    if not all(isinstance(d, int) for s in shapes for d in s):
        return None  # symbolic: the specialized graph is rewritten (backend/__init__.py)
    (b, hq, t, d), (bk, hkv, s, dk) = shapes[0], shapes[1]
    if b != 1 or bk != 1 or shapes[2] != shapes[1] or dk != d or t < 1 or s < 1 or hq % hkv:
        return None
    if is_causal and t > s:
        return None
    for u in node.users:
        if not (u.op == "call_function" and u.target is operator.getitem and (u.args[1] == 0 or not u.users)):
            return None  # logsumexp (or the tuple itself) is read
    traced = _val(node)[0]  # laid out as q is (torch's empty_like(query))
    if not (traced.is_contiguous() or _same_layout(traced, _token_major_strides(traced.shape))):
        return None
    dtype = to_dtype(qv.dtype)
    metas = {
        "q": (dtype, (t, hq, d)),
        "k_cache": (dtype, (s, hkv, d)),
        "v_cache": (dtype, (s, hkv, d)),
        "positions": (DType.INT64, (t,)),
    }
    attrs = {"scale": float(scale)} if scale is not None else {}
    if schema.op_supported("attention", metas, attrs) is not None:
        return None
    positions = list(range(t)) if is_causal else [s - 1] * t
    return {"attrs": attrs, "positions": positions, "fake_mode": fake_mode}


def _token_major_strides(shape):
    """The strides of a [B, H, T, D] tensor stored as [B, T, H, D]."""
    _, h, t, d = shape
    return (t * h * d, d, h * d, 1)


def _same_layout(val, strides):
    """Whether val has these strides, size-1 dimensions aside (their
    stride addresses nothing)."""
    return all(n == 1 or a == b for n, a, b in zip(val.shape, val.stride(), strides))


def _transposes_heads_tokens(node):
    """Whether node is a transpose of dims 1 and 2 of a 4-d tensor."""
    if node.op != "call_function":
        return False
    if node.target == aten.transpose.int:
        return sorted(d % 4 for d in node.args[1:3]) == [1, 2]
    return node.target == aten.permute.default and [d % 4 for d in node.args[1]] == [0, 2, 1, 3]


def _contiguous_clone(node):
    return (
        node.op == "call_function"
        and node.target == aten.clone.default
        and node.kwargs.get("memory_format") == torch.contiguous_format
    )


class _Rewriter:
    def __init__(self, gm, fake_mode):
        self.gm, self.graph, self.fake_mode = gm, gm.graph, fake_mode

    def call(self, target, args, kwargs=None):
        kwargs = kwargs or {}
        node = self.graph.call_function(target, args, kwargs)
        with self.fake_mode:
            node.meta["val"] = target(*torch.fx.map_arg(args, _val), **kwargs)
        return node

    def constant(self, tensor, stem):
        name, i = stem, 0
        while hasattr(self.gm, name):
            i += 1
            name = f"{stem}_{i}"
        self.gm.register_buffer(name, tensor)
        node = self.graph.get_attr(name)
        node.meta["val"] = self.fake_mode.from_tensor(tensor, static_shapes=True)
        return node

    def token_major(self, x):
        """[1, H, L, D] -> [L, H, D], dense (copied where the view is not).
        x = transpose(y, 1, 2) (q, k, v made from [1, L, H, D] projections):
        y itself, squeezed, and the transpose goes (a view in torch less)."""
        if _transposes_heads_tokens(x):
            y = self.call(aten.squeeze.dim, (x.args[0], 0))
        else:
            y = self.call(aten.squeeze.dim, (self.call(aten.permute.default, (x, [0, 2, 1, 3])), 0))
        if not y.meta["val"].is_contiguous():
            y = self.call(aten.clone.default, (y,), {"memory_format": torch.contiguous_format})
        return y

    def rewrite(self, node, m):
        inputs = node.args[:3]
        with self.graph.inserting_before(node):
            dense = {}
            for x in inputs:
                if x not in dense:  # k is v: one copy
                    dense[x] = self.token_major(x)
            q, k, v = (dense[x] for x in inputs)
            # a real tensor (the compiler may run under the tracing's fake
            # mode) with a version counter: a constant of the program (runner.py)
            with unset_fake_temporarily(), torch.inference_mode(False):
                positions = torch.tensor(m["positions"], dtype=torch.int64)
            pos = self.constant(positions, "_sk_attention_positions")
            o = self.call(torch.ops.superkernel.attention.default, (q, k, v, pos), m["attrs"])
            o4 = self.call(aten.unsqueeze.default, (o, 0))  # [1, T, Hq, D], dense
            out = self.call(aten.permute.default, (o4, [0, 2, 1, 3]))  # [1, Hq, T, D]
        for got in list(node.users):
            if got.args[1] == 0:  # the others (logsumexp) are unused: _match
                self._replace(got, o4, out)
            self.graph.erase_node(got)
        self.graph.erase_node(node)
        for n in [out] + [x for x in dict.fromkeys(inputs) if _transposes_heads_tokens(x)]:
            if not n.users:
                self.graph.erase_node(n)

    def _replace(self, got, o4, out):
        """Gives got's users (got: the flash node's getitem 0) the output
        with the traced strides (the module's docstring): token-major as
        traced (q was), or contiguous (_match)."""
        o4_strides = o4.meta["val"].stride()
        for t in list(got.users):
            if _transposes_heads_tokens(t) and _same_layout(t.meta["val"], o4_strides):
                t.replace_all_uses_with(o4)  # back to [1, T, Hq, D], dense as traced: the library's output
                self.graph.erase_node(t)
        if not got.users:
            return
        if _same_layout(got.meta["val"], out.meta["val"].stride()):
            got.replace_all_uses_with(out)
            return
        transposes = list(got.users)
        clones = [c for t in transposes for c in t.users]
        if all(_transposes_heads_tokens(t) for t in transposes) and all(map(_contiguous_clone, clones)):
            if len(clones) == 1:  # the one dense [1, T, Hq, D]: the library's output itself
                clones[0].replace_all_uses_with(o4)
                self.graph.erase_node(clones[0])
            for t in transposes:
                t.replace_all_uses_with(o4)  # each clone still copies: distinct tensors as traced
                self.graph.erase_node(t)
            return
        with self.graph.inserting_after(out):
            dense = self.call(aten.clone.default, (out,), {"memory_format": torch.contiguous_format})
        got.replace_all_uses_with(dense)


def map_attention(gm):
    """gm itself when no node of it is one the library's attention computes;
    otherwise a new GraphModule with those nodes rewritten (the module's
    docstring). gm is not changed."""
    matches = [(n, m) for n in gm.graph.nodes if n.op == "call_function" and n.target == FLASH_CPU
               for m in [_match(n)] if m is not None]
    if not matches:
        return gm
    graph = torch.fx.Graph()
    env = {}
    result = graph.graph_copy(gm.graph, env)
    old_output = next(n for n in gm.graph.nodes if n.op == "output")
    graph.output(result).meta.update(old_output.meta)
    new = torch.fx.GraphModule(gm, graph)
    for node, m in matches:
        _Rewriter(new, m["fake_mode"]).rewrite(env[node], m)
    graph.lint()
    new.recompile()
    return new
