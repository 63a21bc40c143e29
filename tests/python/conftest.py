"""Shared helpers of the Python tests: bitwise comparison, compiling through
the superkernel backend, and a seeded generator of small scoped models."""

import os
import random
import sys
import warnings

import pytest
import torch

import superkernel
import superkernel.torch_ops  # noqa: F401  torch.ops.superkernel.*
from superkernel.scope import super_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "python")
EXECUTORS = ("eager", "interp", "jit")

_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def assert_bitwise(got, want, what="output"):
    """Same dtype, shape and bits (any NaN matches any NaN: payloads are
    not part of either side's contract)."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{what}: {type(got)} vs {type(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_bitwise(g, w, f"{what}[{i}]")
        return
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    if got.dtype in _INT_VIEW:
        nan_g, nan_w = torch.isnan(got), torch.isnan(want)
        assert torch.equal(nan_g, nan_w), f"{what}: NaNs at different places"
        g = got.contiguous().view(_INT_VIEW[got.dtype])[~nan_g]
        w = want.contiguous().view(_INT_VIEW[want.dtype])[~nan_w]
        bad = (g != w).nonzero()
        assert bad.numel() == 0, f"{what}: {bad.numel()} elements differ, first at flat index {bad[0].item()}"
    else:
        assert torch.equal(got, want), f"{what}: values differ"


def backend(executor="auto", **kw):
    return superkernel.get_backend(superkernel.CompilerConfig(executor=executor, **kw))


def compile_run(model, inputs, executor="auto", fullgraph=True, dynamic=False, **kw):
    """(compiled outputs, eager outputs, backend) under torch.no_grad()."""
    b = backend(executor, **kw)
    with torch.no_grad():
        want = model(*inputs)
        got = torch.compile(model, backend=b, fullgraph=fullgraph, dynamic=dynamic)(*inputs)
    return got, want, b


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield


@pytest.fixture
def quiet():
    """Ignores the backend's warnings (scope splits) inside the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def load_example(name):
    """An example module from examples/python by file name (not run as main)."""
    import importlib.util

    path = os.path.join(EXAMPLES, name)
    spec = importlib.util.spec_from_file_location(name[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---- random scoped models ---------------------------------------------------

# Each op keeps the shape [R, C] of its operands: "{a}" and "{b}" are values,
# "{s}" a scalar. Library ops (exact ATen mappings or superkernel ops) and
# torch-only ops.
LIBRARY_OPS = [
    "{a} * {b}",
    "{a} + {b}",
    "{a} * {a}",
    "torch.square({a})",
    "{a} ** 2",
    "{a} * {s}",
    "{a} + {s}",
    "torch.cat([{a}, {b}], dim=0)[{r}:{r2}]",
    "{a}.reshape(-1).reshape({a}.shape)",
    "{a}.unsqueeze(0).squeeze(0)",
    "{a}.to(torch.float32).to({a}.dtype)",
    "sk.add({a}, {b})",
    "sk.mul({a}, scalar={s})",
    "sk.square({a})",
    "sk.grouped_matmul([{a}], [self.w])[0]",
    "{a} + self.bias",
]
TORCH_OPS = [
    "torch.sin({a})",
    "torch.softmax({a}, dim=-1)",
    "torch.tanh({a}) * 0.5",
    "{a}.relu()",
    "{a} - {b}",
    "torch.clamp({a}, -2.0, 2.0)",
]


def random_model(seed, dtype=torch.float32, rows=8, cols=16, n_ops=10, p_torch=0.25):
    """A small nn.Module from a seeded generator: n_ops steps drawn from
    LIBRARY_OPS and TORCH_OPS, some in super-kernel scopes (random options),
    some not. Returns (model, inputs, source)."""
    rng = random.Random(seed)
    lines, values, indent = [], ["x0", "x1"], "    "
    scope_left, n_scopes = 0, 0
    options = ["", "early-start=0", "early-start=2", "preload-code=max", "debug-sync-all=1"]
    for i in range(n_ops):
        if scope_left == 0 and rng.random() < 0.5:
            scope_left = rng.randint(2, 5)
            lines.append(f'    with super_kernel("s{n_scopes}", "{rng.choice(options)}"):')
            n_scopes += 1
            indent = "        "
        template = rng.choice(TORCH_OPS if rng.random() < p_torch else LIBRARY_OPS)
        a, b = rng.choice(values[-4:]), rng.choice(values)
        # 0.1 and 65520.0 are not fp16 numbers: torch's add rounds them to
        # fp16 first (65520 to inf), its mul does not
        if "*" in template or "mul" in template:
            s = rng.choice([2, -3, 0.5, 1.25, -0.75, 0.1])
        else:
            s = rng.choice([1, -2, 0.25, 0.1, 65520.0])
        r = rng.randint(0, rows)
        lines.append(f"{indent}v{i} = " + template.format(a=a, b=b, s=s, r=r, r2=r + rows))
        values.append(f"v{i}")
        if scope_left:
            scope_left -= 1
            if scope_left == 0:
                indent = "    "
    outs = sorted(set(rng.sample(values[2:], min(2, len(values) - 2))) | {values[-1]})
    source = "def forward(self, x0, x1):\n" + "\n".join(lines) + f"\n    return ({', '.join(outs)},)\n"
    namespace = {"torch": torch, "sk": torch.ops.superkernel, "super_kernel": super_kernel}
    exec(compile(source, f"<random model {seed}>", "exec"), namespace)

    g = torch.Generator().manual_seed(seed)

    class RandomModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter((torch.rand(cols, cols, generator=g) - 0.5).to(dtype) / 4, requires_grad=False)
            self.register_buffer("bias", (torch.rand(cols, generator=g) - 0.5).to(dtype))

        forward = namespace["forward"]

    inputs = [(torch.rand(rows, cols, generator=g) * 2 - 1).to(dtype) for _ in range(2)]
    return RandomModel(), inputs, source
