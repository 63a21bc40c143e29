"""Gradients through the library (issue 34, item 2): never a silent None.

The torch ops torch.ops.superkernel.* have derivatives where the maths is
simple (checked against torch's own autograd of the same computation),
and a backward that raises naming the op elsewhere, when the backward
runs (also under AOTAutograd, which traces it ahead). A model compiled
with backend="superkernel" that needs gradients runs in torch, so training
it gives eager's gradients; under no_grad it is fused."""

import re
import warnings
import weakref

import pytest
import torch
import torch.nn.functional as F
from conftest import backend

import superkernel  # noqa: F401
from superkernel import scope

sk = torch.ops.superkernel
GEN = torch.Generator().manual_seed(34)


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=GEN).to(dtype)


def _rms(x, g, eps=1e-6):
    r = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + eps)
    return (x.float() * r * g.float()).to(x.dtype), r


# (name, the superkernel call, torch's computation of the same, input shapes)
CASES = [
    ("add", lambda x, y: sk.add(x, y), lambda x, y: x + y, [(6, 8), (6, 8)]),
    ("add_broadcast", lambda x, y: sk.add(x, y), lambda x, y: x + y, [(6, 8), (8,)]),
    ("add_scalar", lambda x: sk.add(x, scalar=0.5), lambda x: x + 0.5, [(6, 8)]),
    ("mul", lambda x, y: sk.mul(x, y), lambda x, y: x * y, [(6, 8), (1, 8)]),
    ("mul_scalar", lambda x: sk.mul(x, scalar=-1.5), lambda x: x * -1.5, [(6, 8)]),
    ("square", lambda x: sk.square(x), lambda x: x * x, [(6, 8)]),
    ("reshape", lambda x: sk.reshape(x, shape=[4, -1]), lambda x: x.reshape(4, -1), [(6, 8)]),
    ("slice", lambda x: sk.slice(x, start=-4, end=5), lambda x: x[-4:5], [(6, 8)]),
    ("squeeze", lambda x: sk.squeeze(x, dims=[1]), lambda x: x.squeeze(1), [(6, 1, 8)]),
    ("unsqueeze", lambda x: sk.unsqueeze(x, dim=1), lambda x: x.unsqueeze(1), [(6, 8)]),
    ("concat", lambda x, y: sk.concat([x, y], dim=1), lambda x, y: torch.cat([x, y], 1), [(6, 8), (6, 3)]),
    ("split", lambda x: sk.split(x, sizes=[3, 5]), lambda x: list(torch.split(x, [3, 5], -1)), [(6, 8)]),
    ("split_dim0_one_part_used", lambda x: sk.split(x, sizes=[2, 4], dim=0)[1], lambda x: x[2:], [(6, 8)]),
    ("cast", lambda x: sk.cast(x, dtype=torch.float16), lambda x: x.half(), [(6, 8)]),
    ("gelu", lambda x: sk.gelu(x), lambda x: F.gelu(x, approximate="tanh"), [(6, 8)]),
    ("sigmoid", lambda x: sk.sigmoid(x), torch.sigmoid, [(6, 8)]),
    ("swiglu", lambda x: sk.swiglu(x), lambda x: F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1], [(6, 8)]),
    ("swiglu_dim0", lambda x: sk.swiglu(x, dim=0), lambda x: F.silu(x.chunk(2, 0)[0]) * x.chunk(2, 0)[1], [(6, 8)]),
    ("linear", lambda x, w, b: sk.linear(x, w, b), F.linear, [(2, 3, 8), (5, 8), (5,)]),
    ("rms_norm", lambda x, g: sk.rms_norm(x, g), _rms, [(6, 8), (8,)]),
    ("add_rms_norm", lambda a, b, g: sk.add_rms_norm(a, b, g), lambda a, b, g: (*_rms(a + b, g), a + b),
     [(6, 8), (6, 8), (8,)]),
    ("grouped_matmul", lambda x, w: sk.grouped_matmul([x], [w])[0], lambda x, w: x @ w, [(6, 8), (8, 3)]),
    ("grouped_matmul_transposed_bias", lambda x, w, b: sk.grouped_matmul([x], [w], bias=[b], transpose_weight=1)[0],
     lambda x, w, b: x @ w.t() + b, [(6, 8), (3, 8), (3,)]),
    ("grouped_matmul_two_groups", lambda x, w, x2, w2: sk.grouped_matmul([x, x2], [w, w2]),
     lambda x, w, x2, w2: [x @ w, x2 @ w2], [(6, 8), (8, 3), (2, 4), (4, 7)]),
]


def _grads(fn, inputs, weights):
    leaves = [t.clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    sum((o.float() * w).sum() for o, w in zip(outs, weights)).backward()
    return outs, [t.grad for t in leaves]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_derivatives_match_torch(case, dtype):
    name, fn, ref, shapes = case
    inputs = [_randn(*s, dtype=dtype) for s in shapes]
    with torch.no_grad():
        weights = [_randn(*o.shape) for o in (lambda r: list(r) if isinstance(r, (list, tuple)) else [r])(ref(*inputs))]
    _, got = _grads(fn, inputs, weights)
    _, want = _grads(ref, inputs, weights)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g is not None, f"{name}: input {i} got no gradient"
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name}: input {i}"
        torch.testing.assert_close(g.float(), w.float(), **tol, msg=f"{name}: input {i}")


def test_only_inputs_that_require_grad_get_one():
    x, w = _randn(4, 8).requires_grad_(), _randn(5, 8)
    sk.linear(x, w).sum().backward()
    assert x.grad is not None and w.grad is None


# ---- what a derivative saves ----------------------------------------------------

# (name, the superkernel call, torch's computation of the same, input shapes,
# whether the derivative reads the first input's values). Only the first input
# changes in place after the op: torch allows it where its own derivative does
# not read the values, and so must these; where it does read them, both raise.
FROZEN = _randn(8, 3)
IN_PLACE_AFTER = [
    ("add", lambda x, y: sk.add(x, y), lambda x, y: x + y, [(6, 8), (6, 8)], False),
    ("add_scalar", lambda x: sk.add(x, scalar=0.5), lambda x: x + 0.5, [(6, 8)], False),
    ("reshape", lambda x: sk.reshape(x, shape=[4, -1]), lambda x: x.reshape(4, -1), [(6, 8)], False),
    ("squeeze", lambda x: sk.squeeze(x, dims=[1]), lambda x: x.squeeze(1), [(6, 1, 8)], False),
    ("unsqueeze", lambda x: sk.unsqueeze(x, dim=1), lambda x: x.unsqueeze(1), [(6, 8)], False),
    ("slice", lambda x: sk.slice(x, start=1, end=5), lambda x: x[1:5], [(6, 8)], False),
    ("concat", lambda x, y: sk.concat([x, y], dim=1), lambda x, y: torch.cat([x, y], 1), [(6, 8), (6, 3)], False),
    ("split", lambda x: sk.split(x, sizes=[3, 5])[0], lambda x: x[:, :3].clone(), [(6, 8)], False),
    ("cast", lambda x: sk.cast(x, dtype=torch.bfloat16), lambda x: x.to(torch.bfloat16), [(6, 8)], False),
    ("mul_scalar", lambda x: sk.mul(x, scalar=2.0), lambda x: x * 2.0, [(6, 8)], False),
    ("mul_by_frozen", lambda x: sk.mul(x, FROZEN[:, :1].t()), lambda x: x * FROZEN[:, :1].t(), [(6, 8)], False),
    ("linear_frozen_weight", lambda x: sk.linear(x, FROZEN.t()), lambda x: F.linear(x, FROZEN.t()), [(6, 8)], False),
    ("grouped_matmul_frozen_weight", lambda x: sk.grouped_matmul([x], [FROZEN])[0], lambda x: x @ FROZEN,
     [(6, 8)], False),
    ("mul", lambda x, y: sk.mul(x, y), lambda x, y: x * y, [(6, 8), (6, 8)], True),
    ("square", lambda x: sk.square(x), lambda x: x * x, [(6, 8)], True),
    ("gelu", lambda x: sk.gelu(x), lambda x: F.gelu(x, approximate="tanh"), [(6, 8)], True),
    ("linear", lambda x, w: sk.linear(x, w), F.linear, [(6, 8), (3, 8)], True),
]


def _grads_after_in_place(fn, inputs, weight):
    """The leaves' gradients of sum(fn(...) * weight), the first input
    (not a leaf: it may change in place) changed in place after fn."""
    leaves = [t.clone().requires_grad_() for t in inputs]
    args = [t * 1 for t in leaves]
    out = fn(*args)
    args[0].add_(1)
    (out.float() * weight).sum().backward()
    return [t.grad for t in leaves]


@pytest.mark.parametrize("case", IN_PLACE_AFTER, ids=[c[0] for c in IN_PLACE_AFTER])
def test_input_changed_in_place_after_the_op_behaves_as_in_torch(case):
    """Each derivative saves only what it reads: before, every input was
    saved, and backward raised for an in-place change torch allows."""
    name, fn, ref, shapes, reads = case
    inputs = [_randn(*s) for s in shapes]
    with torch.no_grad():
        weight = _randn(*ref(*inputs).shape)
    modified = "modified by an inplace operation"
    if reads:
        for f in (ref, fn):  # torch's raises too: the case checks what it says
            with pytest.raises(RuntimeError, match=modified):
                _grads_after_in_place(f, inputs, weight)
        return
    want = _grads_after_in_place(ref, inputs, weight)
    got = _grads_after_in_place(fn, inputs, weight)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name}: input {i}"
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=f"{name}: input {i}")


@pytest.mark.parametrize("op", ["reshape", "slice", "add", "cast"])
def test_shape_only_derivative_does_not_keep_its_input_alive(op):
    fn = {"reshape": lambda a: sk.reshape(a, shape=[-1]), "slice": lambda a: sk.slice(a, start=1),
          "add": lambda a: sk.add(a, scalar=1.0), "cast": lambda a: sk.cast(a, dtype=torch.float16)}[op]
    a = _randn(4, 3).requires_grad_() * 1  # its own producer (mul by a number) does not save it
    alive = weakref.ref(a)
    y = fn(a)
    del a
    assert alive() is None, f"{op}: the input is kept until backward"
    y.float().sum().backward()


# ---- empty matrices -------------------------------------------------------------

# (name, superkernel call, torch's, shapes): N = 0 or K = 0
EMPTY_PRODUCTS = [
    ("linear_n0", lambda x, w: sk.linear(x, w), F.linear, [(3, 4), (0, 4)]),
    ("linear_k0", lambda x, w: sk.linear(x, w), F.linear, [(2, 3, 0), (5, 0)]),
    ("linear_n0_bias", lambda x, w, b: sk.linear(x, w, b), F.linear, [(3, 4), (0, 4), (0,)]),
    ("grouped_matmul_k0", lambda x, w: sk.grouped_matmul([x], [w])[0], lambda x, w: x @ w, [(3, 0), (0, 5)]),
    ("grouped_matmul_n0", lambda x, w: sk.grouped_matmul([x], [w])[0], lambda x, w: x @ w, [(3, 4), (4, 0)]),
    ("grouped_matmul_transposed_k0", lambda x, w: sk.grouped_matmul([x], [w], transpose_weight=1)[0],
     lambda x, w: x @ w.t(), [(3, 0), (5, 0)]),
]


@pytest.mark.parametrize("case", EMPTY_PRODUCTS, ids=[c[0] for c in EMPTY_PRODUCTS])
def test_empty_product_gradients_match_torch(case):
    """reshape(-1, 0) of an empty gradient cannot infer -1: backward raised."""
    name, fn, ref, shapes = case
    inputs = [_randn(*s) for s in shapes]
    with torch.no_grad():
        weight = _randn(*ref(*inputs).shape)
    _, got = _grads(fn, inputs, [weight])
    _, want = _grads(ref, inputs, [weight])
    for i, (g, w) in enumerate(zip(got, want)):
        assert g is not None and g.shape == w.shape, f"{name}: input {i}"
        torch.testing.assert_close(g, w, msg=f"{name}: input {i}")


def _moe_routing(x):
    idx = torch.tensor([[0, 1], [1, 2], [2, 0], [1, 0]], dtype=torch.int32)
    return sk.moe_init_routing(x, idx, expert_num=3)[0]


NOT_DIFFERENTIABLE = [
    ("moe_init_routing", _moe_routing, (4, 8), "x"),
    ("moe_gating_topk_softmax", lambda x: sk.moe_gating_topk_softmax(x, k=2)[0], (4, 8), "x"),
    ("grouped_matmul", lambda x: sk.grouped_matmul([x], [_randn(2, 8, 3)], group_type=0, group_list_ints=[2, 4],
                                                   split_item=3)[0], (4, 8), "x[0]"),
]


@pytest.mark.parametrize("op,fn,shape,input", NOT_DIFFERENTIABLE, ids=[c[0] for c in NOT_DIFFERENTIABLE])
def test_no_derivative_raises_at_backward_naming_the_op(op, fn, shape, input):
    x = _randn(*shape).requires_grad_()
    y = fn(x)  # the forward runs, as torch's ops without a derivative do
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=f"superkernel::{op}: not differentiable in superkernel: input "
                                           f"{re.escape(input)} requires grad"):
        y.sum().backward()
    assert x.grad is None
    fn(x.detach())  # nothing requires grad: nothing to refuse


def test_no_derivative_under_aot_autograd_raises_at_backward_not_at_compile():
    x = _randn(4, 8).requires_grad_()
    y = torch.compile(lambda t: _moe_routing(t).sum(), backend="aot_eager")(x)
    with pytest.raises(RuntimeError, match="superkernel::moe_init_routing: not differentiable"):
        y.backward()


def test_derivative_under_aot_autograd_is_eager_one():
    x, w = _randn(4, 8).requires_grad_(), _randn(5, 8).requires_grad_()
    torch.compile(lambda a, b: torch.tanh(sk.linear(a, b)).sum(), backend="aot_eager")(x, w).backward()
    got = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    torch.tanh(sk.linear(x, w)).sum().backward()
    assert torch.equal(got[0], x.grad) and torch.equal(got[1], w.grad)


# ---- a model compiled with backend="superkernel" --------------------------------


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.w1 = torch.nn.Parameter(torch.randn(16, 8, generator=g) * 0.3)
        self.w2 = torch.nn.Parameter(torch.randn(8, 16, generator=g) * 0.3)
        self.gamma = torch.nn.Parameter(torch.ones(16))

    def forward(self, x):
        with scope.super_kernel("mlp"):
            h = sk.linear(x, self.w1)
            h = sk.rms_norm(h, self.gamma)[0]
            h = h * h + h  # ATen ops the backend also takes
            y = sk.linear(h, self.w2)
        return y


def _train(model, step, xs):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for x in xs:
        opt.zero_grad()
        loss = step(x).square().mean()
        loss.backward()
        for name, p in model.named_parameters():
            assert p.grad is not None, f"{name} got no gradient"
        opt.step()
        losses.append(loss.detach())
    return losses


def test_training_a_compiled_model_gives_eager_gradients():
    xs = [_randn(4, 8) for _ in range(3)]
    eager, compiled_model = Tiny(), Tiny()
    want = _train(eager, eager, xs)
    b = backend("interp")
    compiled = torch.compile(compiled_model, backend=b, fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _train(compiled_model, compiled, xs)
    assert torch.equal(torch.stack(got), torch.stack(want))
    for (name, p), q in zip(compiled_model.named_parameters(), eager.parameters()):
        assert torch.equal(p, q), name
    mine = [str(w.message) for w in caught if "gradients are required" in str(w.message)]
    assert len(mine) == 1 and "not fused" in mine[0]
    assert not b.programs()  # runs in torch
    with torch.no_grad():  # Dynamo guards on grad mode: compiled again, fused
        x = xs[0]
        assert torch.equal(compiled(x), compiled_model(x))
    assert b.programs()


def test_compiled_model_without_a_derivative_raises_at_backward():
    class Router(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = torch.nn.Parameter(_randn(8, 16))

        def forward(self, x):
            with scope.super_kernel("r"):
                logits = sk.linear(x, self.gate)
                y = sk.moe_gating_topk_softmax(logits, k=2)[0]
            return y

    model = Router()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = torch.compile(model, backend=backend("interp"), fullgraph=True)(_randn(4, 16))
    with pytest.raises(RuntimeError, match="superkernel::moe_gating_topk_softmax: not differentiable"):
        y.sum().backward()
