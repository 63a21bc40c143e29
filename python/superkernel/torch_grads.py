"""Derivatives of the torch ops torch.ops.superkernel.* (torch_ops.py).

The library computes forward passes only. So that a training loop through
these ops learns what feeds them (and never sees a silent `None` grad),
each op gets an autograd formula (torch.library.register_autograd):

- a real derivative where the maths is simple, written with torch ops (the
  backward runs in torch, as the derivatives of torch's own ops do):
  the views (reshape, slice, squeeze, unsqueeze), concat, split, the
  elementwise ops (add, mul, square, cast, gelu, sigmoid, swiglu), linear, rms_norm /
  add_rms_norm, and grouped_matmul's plain float path (group_type -1, one
  product per list entry, no quantization parameters);
- otherwise, as torch does for an op whose derivative is not implemented,
  the forward runs and the backward raises, naming the op and the input:
  "superkernel::moe_init_routing: not differentiable in superkernel ...".
  The error comes from the op superkernel::not_differentiable, called in
  the backward: it raises when the backward runs, not when a compiler
  (AOTAutograd) traces it, so a forward under grad mode never fails.

Inputs that cannot require grad (integer routing indices, group lists)
get None. The formulas compute in fp32 for fp16 / bf16 tensors where
torch's own kernels do (norms, activations) and return each gradient in
its input's dtype.

Each rule declares which inputs' values its derivative reads, and only
those are saved for backward, as torch's own formulas do: a saved input
changed in place after the op (which torch allows where its derivative
does not read it) would make backward raise, and it would stay alive until
backward. The others leave only their shape and dtype.
"""

import math

import torch

NAMESPACE = "superkernel"


# ---- the lazy error -----------------------------------------------------------


def define_not_differentiable(lib):
    # It takes an output's gradient: a compiler that splits a joint graph
    # (AOTAutograd) puts it in the backward, where it belongs, not in the
    # forward beside x.
    lib.define("not_differentiable(Tensor grad, Tensor x, str op, str input, str why) -> Tensor")

    def cpu(grad, x, op, input, why):
        raise RuntimeError(
            f"superkernel::{op}: not differentiable in superkernel: input {input} requires grad, and {why}; "
            "compute what needs gradients with torch ops, or detach() the input"
        )

    lib.impl("not_differentiable", cpu, "CPU")
    torch.library.register_fake(
        f"{NAMESPACE}::not_differentiable", lambda grad, x, op, input, why: torch.empty_like(x), lib=lib
    )


def _refuse(grad, op, name, x, why):
    return torch.ops.superkernel.not_differentiable(grad, x, op, name, why)


# ---- registration ---------------------------------------------------------------


def register(spec, lib):
    """The autograd formula of torch.ops.superkernel.<spec.op>: its own rule
    from _RULES, else the not-differentiable one."""
    rule = _RULES.get(spec.op)

    def setup_context(ctx, inputs, output, keyword_only_inputs=None):
        ctx.attrs = dict(keyword_only_inputs or {})
        if rule is None:
            ctx.why = "the library computes its forward only"
        else:  # decided from dtypes and which inputs are given: known now
            ctx.why = rule.refuse(inputs, ctx.attrs) if rule.refuse is not None else None
        # the inputs flat (a list input is its tensors, None stays None) and
        # each one's length (None: not a list), to be rebuilt in backward
        flat, lengths = [], []
        for v in inputs:
            lengths.append(len(v) if isinstance(v, (list, tuple)) else None)
            flat.extend(v if isinstance(v, (list, tuple)) else [v])
        ctx.lengths = lengths
        # a refused input is handed to the lazy error (_refuse): all kept
        keep = [True] * len(flat) if ctx.why is not None else _kept(rule.saves, inputs)
        ctx.stand_ins = [_Meta(t) if t is not None and not k else None for t, k in zip(flat, keep)]
        ctx.save_for_backward(*[t if k else None for t, k in zip(flat, keep)])

    def backward(ctx, *grads):
        flat = [t if m is None else m for t, m in zip(ctx.saved_tensors, ctx.stand_ins)]
        args, at = [], 0
        for n in ctx.lengths:
            args.append(flat[at] if n is None else list(flat[at : at + n]))
            at += 1 if n is None else n
        # a list output's grads come as one list
        if len(grads) == 1 and isinstance(grads[0], (list, tuple)):
            grads = tuple(grads[0])
        needs = ctx.needs_input_grad
        if ctx.why is None:
            out = rule.grad(needs, grads, args, ctx.attrs)
            return tuple(_in_dtype(_needed(g, n), a) for g, n, a in zip(out, needs, args))
        grad = next(g for g in grads if isinstance(g, torch.Tensor))
        return tuple(_refused(grad, spec, needs, args, ctx.why))

    torch.library.register_autograd(f"{NAMESPACE}::{spec.op}", backward, setup_context=setup_context, lib=lib)


def _refused(grad, spec, needs, args, why):
    """For each input: the lazy error where a gradient is needed, else None."""
    for name, need, a in zip(spec.slots, needs, args):
        if isinstance(a, (list, tuple)):
            yield [_refuse(grad, spec.op, f"{name}[{i}]", t, why) if n else None
                   for i, (n, t) in enumerate(zip(need, a))]
        else:
            yield _refuse(grad, spec.op, name, a, why) if need else None


def _needed(g, need):
    if isinstance(g, (list, tuple)):
        return [_needed(gi, ni) for gi, ni in zip(g, need)]
    return g if need else None


def _in_dtype(g, a):
    if isinstance(g, (list, tuple)):
        return [_in_dtype(gi, ai) for gi, ai in zip(g, a)]
    if g is None or a is None or g.dtype == a.dtype:
        return g
    return g.to(a.dtype)


class _Rule:
    """grad(needs, grads, args, attrs) -> one gradient per input
    (a list for a list input); refuse(args, attrs) -> why the case has no
    derivative here, or None (it reads only dtypes and which inputs are
    given: called in the forward); saves {i: (j, ...)}: input i's values
    are saved for backward when input j's gradient is needed (a list's
    entries pair with another list's entries of the same index). grad gets
    any other input as a _Meta."""

    def __init__(self, grad, refuse=None, saves=None):
        self.grad, self.refuse, self.saves = grad, refuse, saves or {}


class _Meta:
    """An input whose values the derivative does not read: what it reads."""

    __slots__ = ("shape", "dtype")

    def __init__(self, t):
        self.shape, self.dtype = t.shape, t.dtype


def _kept(saves, inputs):
    """For each input, flat as setup_context lays them out: whether to save it."""
    # requires_grad, not ctx.needs_input_grad: the latter is flat over what
    # the dispatcher passed (defaulted inputs dropped) plus torch's metadata
    needs = [[_requires_grad(t) for t in v] if isinstance(v, (list, tuple)) else _requires_grad(v) for v in inputs]
    keep = []
    for i, v in enumerate(inputs):
        users = [needs[j] for j in saves.get(i, ())]
        if isinstance(v, (list, tuple)):
            keep.extend(any(u[e] if isinstance(u, list) else u for u in users) for e in range(len(v)))
        else:
            keep.append(any(any(u) if isinstance(u, list) else u for u in users))
    return keep


def _requires_grad(t):
    return isinstance(t, torch.Tensor) and t.requires_grad


def _rows(t):
    """The row count of t as a matrix [rows, last dim]: explicit, since
    reshape(-1, 0) of an empty tensor cannot infer it."""
    return math.prod(t.shape[:-1])


def _sum_to(g, shape):
    """g reduced over the dimensions broadcasting stretched to g's shape."""
    return g if tuple(g.shape) == tuple(shape) else g.sum_to_size(shape)


# ---- views and copies ---------------------------------------------------------


def _reshape_back(needs, grads, args, attrs):
    x = args[0]
    return (grads[0].reshape(x.shape),)


def _slice_grad(needs, grads, args, attrs):
    (x,), g = args, grads[0]
    rows = x.shape[0]
    start = attrs.get("start", 0)
    start = start + rows if start < 0 else start  # as the library normalizes it (docs/ops.md)
    start = min(max(start, 0), rows)
    return (torch.ops.aten.slice_backward(g, list(x.shape), 0, start, start + g.shape[0], 1),)


def _concat_grad(needs, grads, args, attrs):
    xs = args[0]
    dim = attrs.get("dim", 0)
    return (list(torch.split(grads[0], [t.shape[dim] for t in xs], dim)),)


def _split_grad(needs, grads, args, attrs):
    (x,) = args
    dim = attrs.get("dim", -1) % len(x.shape)
    parts = []
    for g, size in zip(grads, attrs["sizes"]):
        if g is None:  # an output that no loss reads
            shape = list(x.shape)
            shape[dim] = size
            g = torch.zeros(shape, dtype=x.dtype)
        parts.append(g)
    return (torch.cat(parts, dim),)


def _cast_grad(needs, grads, args, attrs):
    return (grads[0],)  # back in x's dtype (_in_dtype)


# ---- elementwise --------------------------------------------------------------


def _binary_grad(op):
    def grad(needs, grads, args, attrs):
        x, y = args
        g = grads[0]
        scalar = attrs.get("scalar")
        if op == "add":
            gx = _sum_to(g, x.shape) if needs[0] else None
            gy = _sum_to(g, y.shape) if y is not None and needs[1] else None
            return gx, gy
        if y is None:  # x * scalar: the library rounds the scalar to fp32
            return (g * _fp32(scalar) if needs[0] else None), None
        gx = _sum_to(g * y, x.shape) if needs[0] else None
        gy = _sum_to(g * x, y.shape) if needs[1] else None
        return gx, gy

    return grad


def _fp32(value):
    return float(torch.tensor(float(value), dtype=torch.float32))


def _square_grad(needs, grads, args, attrs):
    (x,) = args
    return (grads[0] * (2 * x),)


def _gelu_grad(needs, grads, args, attrs):
    return (torch.ops.aten.gelu_backward(grads[0], args[0], approximate="tanh"),)


def _sigmoid_grad(needs, grads, args, attrs):
    s = torch.sigmoid(args[0].float())
    return (grads[0].float() * s * (1 - s),)


def _swiglu_grad(needs, grads, args, attrs):
    (x,) = args
    dim = attrs.get("dim", -1)
    a, b = x.float().chunk(2, dim)
    g = grads[0].float()
    s = torch.sigmoid(a)
    silu = a * s
    ga = g * b * (s * (1 + a * (1 - s)))
    return (torch.cat([ga, g * silu], dim),)


# ---- norms --------------------------------------------------------------------


def _norm_grads(v, gamma, eps, gy, grstd):
    """(d loss / d v, d loss / d gamma) of y = v * rstd * gamma,
    rstd = 1 / sqrt(mean(v^2) + eps) over the last dimension, in fp32."""
    h = v.shape[-1]
    rstd = torch.rsqrt(v.square().mean(-1, keepdim=True) + _fp32(eps))
    n = v * rstd
    gn = gy.float() * gamma.float()
    gv = rstd * (gn - n * (gn * n).mean(-1, keepdim=True))
    gv = gv - grstd.float() * rstd.pow(3) * v / h
    ggamma = (gy.float() * n).reshape(_rows(v), h).sum(0)
    return gv, ggamma


def _rms_norm_grad(needs, grads, args, attrs):
    x, gamma = args
    gv, ggamma = _norm_grads(x.float(), gamma, attrs.get("epsilon", 1e-6), grads[0], grads[1])
    return (gv if needs[0] else None), (ggamma if needs[1] else None)


def _add_rms_norm_grad(needs, grads, args, attrs):
    x1, x2, gamma = args
    v = x1.float() + x2.float()
    gv, ggamma = _norm_grads(v, gamma, attrs.get("epsilon", 1e-6), grads[0], grads[1])
    gv = gv + grads[2].float()  # the output x is v itself
    return (gv if needs[0] else None), (gv if needs[1] else None), (ggamma if needs[2] else None)


# ---- matmuls ------------------------------------------------------------------


def _linear_grad(needs, grads, args, attrs):
    x, w, b = args
    g = grads[0]
    n, k = w.shape
    g2 = g.reshape(_rows(g), n)
    gx = (g2 @ w).reshape(x.shape) if needs[0] else None
    gw = g2.t() @ x.reshape(_rows(x), k) if needs[1] else None
    gb = g2.sum(0) if b is not None and needs[2] else None
    return gx, gw, gb


_GMM_QUANT = ("scale", "offset", "per_token_scale")


def _gmm_refuse(args, attrs):
    x, w, bias = args[0], args[1], args[2]
    quant = [name for name, a in zip(_GMM_QUANT, args[3:6]) if a]
    if quant:
        return f"{', '.join(quant)} (the quantized path) has no derivative here"
    if args[6] is not None or attrs.get("group_list_ints") or attrs.get("group_type", -1) != -1:
        return "only group_type -1 (one product per list entry) has a derivative here"
    if attrs.get("split_item", 0) not in (0, 1) or len(x) != len(w):
        return "only split_item 0 / 1 with one weight per x has a derivative here"
    if any(t.dtype not in (torch.float32, torch.float16, torch.bfloat16) for t in list(x) + list(w)):
        return "the int8 path has no derivative"
    dtype = attrs.get("output_dtype")  # a torch dtype, as the op's schema takes it
    if dtype is not None and any(t.dtype != dtype for t in x):
        return "an output_dtype other than x's has no derivative here"
    return None


def _gmm_grad(needs, grads, args, attrs):
    xs, ws, bias = args[0], args[1], args[2]
    transposed = attrs.get("transpose_weight", 0) == 1
    gxs, gws, gbs = [], [], []
    for i, (x, w) in enumerate(zip(xs, ws)):
        g = grads[i]
        n, k = w.shape if transposed else tuple(reversed(w.shape))  # w: [N, K] or [K, N]
        g2 = g.reshape(_rows(g), n)
        gx = gw = None
        if needs[0][i]:  # w is saved
            gx = (g2 @ (w if transposed else w.t()).to(g.dtype)).reshape(x.shape)
        if needs[1][i]:  # x is saved
            gw = x.reshape(_rows(x), k).t().to(g.dtype) @ g2
        gxs.append(gx)
        gws.append(gw.t() if gw is not None and transposed else gw)
        gbs.append(g2.float().sum(0) if bias and needs[2][i] else None)
    return gxs, gws, (gbs if bias else None), None, None, None, None


# saves: the operands whose values a product's gradients read, crosswise:
# d(x @ w) / dx reads w, d / dw reads x; a bias is read for its shape only.
_PRODUCT = {0: (1,), 1: (0,)}

# The views, copies and add read shapes only: nothing saved.
_RULES = {
    "reshape": _Rule(_reshape_back),
    "squeeze": _Rule(_reshape_back),
    "unsqueeze": _Rule(_reshape_back),
    "slice": _Rule(_slice_grad),
    "concat": _Rule(_concat_grad),
    "split": _Rule(_split_grad),
    "cast": _Rule(_cast_grad),
    "add": _Rule(_binary_grad("add")),
    "mul": _Rule(_binary_grad("mul"), saves=_PRODUCT),  # x * scalar: nothing
    "square": _Rule(_square_grad, saves={0: (0,)}),
    "gelu": _Rule(_gelu_grad, saves={0: (0,)}),
    "sigmoid": _Rule(_sigmoid_grad, saves={0: (0,)}),
    "swiglu": _Rule(_swiglu_grad, saves={0: (0,)}),
    "rms_norm": _Rule(_rms_norm_grad, saves={0: (0, 1), 1: (0, 1)}),
    "add_rms_norm": _Rule(_add_rms_norm_grad, saves={i: (0, 1, 2) for i in range(3)}),
    "linear": _Rule(_linear_grad, saves=_PRODUCT),
    "grouped_matmul": _Rule(_gmm_grad, _gmm_refuse, saves=_PRODUCT),
}

DIFFERENTIABLE = frozenset(_RULES)
