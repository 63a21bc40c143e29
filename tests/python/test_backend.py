"""The torch.compile backend: compiled == eager bit for bit (the seed model,
seeded random scoped models on every executor, graph breaks, new shapes),
scope splits, parameters as constants, errors."""

import os
import warnings

import pytest
import torch
from conftest import EXECUTORS, assert_bitwise, backend, compile_run, load_example, random_model

import superkernel
from superkernel import scope
from superkernel.backend import last_programs

sk = torch.ops.superkernel


def test_registered_by_name():
    class M(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("s"):
                return x * x + x

    x = torch.randn(8, 8)
    with torch.no_grad():
        got = torch.compile(M(), backend="superkernel", fullgraph=True)(x)
    assert_bitwise(got, x * x + x)
    (program,) = last_programs()
    assert program.stats["n_super_kernels"] == 1


@pytest.mark.parametrize("executor", EXECUTORS)
def test_example01_bitwise(executor):
    ex = load_example("example01_super_kernel_base.py")
    got, want, b = compile_run(ex.Network(), ex.make_inputs(), executor)
    assert_bitwise(got, want)
    assert got.shape == (6, 48, 64) and got.dtype == torch.float16
    (program,) = b.graphs()[-1].programs
    stats = program.stats
    if executor == "eager":
        assert stats["n_super_kernels"] == 0
    else:
        # sk1 and sk2 fused; the middle segment (square, concat) launches on its own
        assert stats["n_super_kernels"] == 2 and stats["n_steps"] == 4


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_random_scoped_models(executor, dtype, quiet):
    """Seeded models from LIBRARY_OPS (exact ATen mappings, superkernel ops)
    and TORCH_OPS (sin, softmax, ...), inside and outside scopes."""
    fused = 0
    for seed in range(5):
        model, inputs, source = random_model(1000 * EXECUTORS.index(executor) + seed, dtype=dtype, n_ops=12)
        got, want, b = compile_run(model, inputs, executor)
        try:
            assert_bitwise(got, want)
        except AssertionError as e:
            raise AssertionError(f"{e}\nmodel:\n{source}") from None
        fused += sum(p.stats["n_super_kernels"] for p in b.programs())
    assert executor == "eager" or fused > 0


class WithBreak(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x, y):
        with scope.super_kernel("before"):
            a = x * y + x
        if self.kind == "print":
            print("graph break")
        elif self.kind == "item":
            a = a * float(a.sum().item() > 0)
        elif self.kind == "branch":
            if a.sum() > 0:  # data-dependent control flow
                a = a * 2.0
            else:
                a = a + 1.0
        with scope.super_kernel("after"):
            b = a * a + y
        return b


@pytest.mark.parametrize("kind", ["print", "item", "branch"])
def test_graph_breaks_outside_scopes(kind):
    x, y = torch.randn(16, 16), torch.randn(16, 16)
    got, want, b = compile_run(WithBreak(kind), (x, y), "interp", fullgraph=False)
    assert_bitwise(got, want)
    assert len(b.graphs()) >= 2
    scopes = [s.name for g in b.graphs() for s in (g.plan.scopes if g.plan else [])]
    assert "before" in scopes and "after" in scopes


class SplitScope(torch.nn.Module):
    def __init__(self, options=""):
        super().__init__()
        self.options = options

    def forward(self, x):
        with scope.super_kernel("s", self.options):
            a = x * x + x
            b = torch.sin(a)
            c = b * b + a
        return c


def test_unsupported_op_in_a_scope_warns_and_splits():
    x = torch.randn(8, 32)
    with pytest.warns(UserWarning, match=r"op aten\.sin\.default .* scope 's' runs in torch .* splits the scope"):
        got, want, b = compile_run(SplitScope(), (x,), "interp")
    assert_bitwise(got, want)
    programs = b.graphs()[-1].programs
    assert len(programs) == 2 and all(p.stats["n_super_kernels"] == 1 for p in programs)


def test_strict_scope_check_abort_fails_naming_the_op():
    with pytest.raises(Exception, match=r"scope 's': op aten\.sin\.default .*strict-scope-check=abort"):
        compile_run(SplitScope("strict-scope-check=abort"), (torch.randn(8, 32),))


def test_strict_scope_check_abort_from_the_default_options():
    with pytest.raises(Exception, match="strict-scope-check=abort"):
        compile_run(SplitScope(), (torch.randn(8, 32),), options="strict-scope-check=abort")


def test_strict_scope_check_bypass_runs_the_scope_unfused():
    with pytest.warns(UserWarning, match="strict-scope-check=bypass"):
        got, want, b = compile_run(SplitScope("strict-scope-check=bypass"), (torch.randn(8, 32),), "interp")
    assert_bitwise(got, want)
    assert sum(p.stats["n_super_kernels"] for p in b.graphs()[-1].programs) == 0


class Layer(torch.nn.Module):
    def __init__(self, n=16, dtype=torch.float16):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        self.w = torch.nn.Parameter(((torch.rand(n, n, generator=g) - 0.5) / 4).to(dtype), requires_grad=False)
        self.register_buffer("b", ((torch.rand(n, generator=g) - 0.5) / 4).to(dtype))

    def forward(self, x):
        with scope.super_kernel("layer"):
            h = sk.grouped_matmul([x], [self.w], [self.b])[0]
            return h * h + x


class AtenOnly(torch.nn.Module):
    def forward(self, x, y):
        with scope.super_kernel("s"):
            a = x * y + x
            b = torch.cat([a, y], dim=0).view(-1)
        return torch.sin(b)[: a.numel()] * a.view(-1)


@pytest.mark.parametrize("dynamic", [False, None, True])
def test_new_input_shapes_give_correct_results(dynamic):
    """dynamic=True (and None after a shape change) give graphs with
    symbolic shapes, specialized per signature by the backend; the
    superkernel ops' fake kernels specialize shapes themselves."""
    b = backend("interp")
    aten_only = torch.compile(AtenOnly(), backend=b, dynamic=dynamic)
    layer = Layer()
    layer_compiled = torch.compile(layer, backend=b, dynamic=dynamic)
    with torch.no_grad():
        for rows in (8, 4, 12, 8):
            x, y = torch.randn(rows, 16), torch.randn(rows, 16)
            assert_bitwise(aten_only(x, y), AtenOnly()(x, y), f"aten rows={rows}")
            h = (torch.rand(rows, 16) - 0.5).half()
            assert_bitwise(layer_compiled(h), layer(h), f"layer rows={rows}")
    symbolic = [g for g in b.graphs() if g.symbolic]
    if dynamic is False:
        assert not symbolic
    else:
        assert symbolic and len(symbolic[0].all_segments()) >= 2  # one runner per signature
    runners = [r for g in b.graphs() for r in (g._runners.values() if g.symbolic else [g.runner])]
    assert all(sum(p.stats["n_super_kernels"] for p in r.programs) == 1 for r in runners)  # scope s each time


def test_parameters_become_constants_and_changes_are_seen():
    model, b = Layer(), backend("interp")
    compiled = torch.compile(model, backend=b, fullgraph=True, dynamic=False)
    x = (torch.rand(8, 16) - 0.5).half()
    with torch.no_grad():
        assert_bitwise(compiled(x), model(x))
        (program,) = b.graphs()[-1].programs
        stats = program.stats
        assert stats["n_constants"] == 2 and stats["n_inputs"] == 1 and stats["packed_bytes"] > 0
        model.w.mul_(2)  # in place: the version counter moves, the programs are rebuilt
        assert_bitwise(compiled(x), model(x), "after w.mul_(2)")
        assert b.graphs()[-1].programs[0] is not program


def test_integer_and_cast_ops():
    class Ints(torch.nn.Module):
        def forward(self, i, f):
            with scope.super_kernel("ints"):
                a = i * i + i  # wraps like torch
                b = a * 3 + 7
                c = f.to(torch.float16)
                d = i.to(torch.float32) + f
            e = f.to(torch.int32)  # float -> int: torch's own conversion, not mapped
            return a, b, c, d, e

    i = torch.randint(-(2**31), 2**31 - 1, (64,), dtype=torch.int32)
    f = torch.randn(64) * 100
    got, want, b = compile_run(Ints(), (i, f), "interp")
    assert_bitwise(got, want)
    plan = b.graphs()[-1].plan
    to_int = [n for n in plan.gm.graph.nodes if n.op == "call_function" and n.kwargs.get("dtype") == torch.int32]
    assert to_int and all(n not in plan.sk for n in to_int)


def test_embedding_and_argmax_run_in_the_library():
    class Decode(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(100, 32).to(torch.bfloat16)

        def forward(self, ids, logits):
            with scope.super_kernel("decode"):
                h = self.emb(ids)
                return h * h, torch.argmax(logits, dim=-1), torch.argmax(h, dim=1, keepdim=True)

    ids = torch.randint(0, 100, (4, 6))
    logits = (torch.randn(4, 6, 1000) * 4).round().to(torch.bfloat16)  # ties
    logits[1, 2, 7] = float("nan")
    got, want, b = compile_run(Decode(), (ids, logits), "interp")
    assert_bitwise(got, want)
    plan = b.graphs()[-1].plan
    mapped = {n.target for n in plan.gm.graph.nodes if n in plan.sk}
    assert torch.ops.aten.embedding.default in mapped and torch.ops.aten.argmax.default in mapped


def test_outputs_that_are_inputs_or_views():
    class Views(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("v"):
                y = x * x
            return x, x.view(-1), y.view(2, -1), y[1:3], y.unsqueeze(0)

    x = torch.randn(4, 6)
    got, want, _ = compile_run(Views(), (x,), "interp")
    assert_bitwise(got, want)


def test_grad_enabled_forward_and_backward():
    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8, 8))

        def forward(self, x):
            with scope.super_kernel("s"):
                h = x * self.w + x
            return torch.tanh(h).sum()

    model, x = Mlp(), torch.randn(8, 8)
    want = model(x)
    want.backward()
    g_want = model.w.grad.clone()
    model.w.grad = None
    got = torch.compile(model, backend=backend("interp"), fullgraph=True)(x)
    got.backward()
    assert_bitwise(got.detach(), want.detach())
    assert_bitwise(model.w.grad, g_want, "grad")


def test_wrong_input_dtype_recompiles_or_fails_clearly():
    class Quant(torch.nn.Module):
        def forward(self, x, scale):
            with scope.super_kernel("q"):
                y, s = sk.dequant_swiglu_quant(x, weight_scale=scale, quant_mode=1)
            return y

    x, scale = torch.randint(-1000, 1000, (8, 32), dtype=torch.int32), torch.rand(32) / 100
    model, b = Quant(), backend("interp")
    compiled = torch.compile(model, backend=b, fullgraph=True, dynamic=False)
    with torch.no_grad():
        assert_bitwise(compiled(x, scale), model(x, scale))
        # a float x is another signature: recompiled, and legal (float x takes no scales)
        with pytest.raises(Exception, match="weight_scale"):
            compiled(x.float(), scale)
        # a dtype the library has no equivalent of
        with pytest.raises(Exception, match="float64"):
            compiled(x.double(), scale)
        # still usable
        assert_bitwise(compiled(x, scale), model(x, scale))


def test_float64_runs_in_torch():
    class M(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("s"):
                return x * x + x

    x = torch.randn(16, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, want, b = compile_run(M(), (x,), "interp")
    assert_bitwise(got, want)
    assert b.programs() == []  # nothing for the library: Dynamo's own graph runs
    assert any("float64" in str(w.message) for w in caught)


def test_profiling_dir(tmp_path):
    model = Layer()
    b = backend("interp", profiling_dir=str(tmp_path))
    compiled = torch.compile(model, backend=b, fullgraph=True)
    x = (torch.rand(8, 16) - 0.5).half()
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
    merged = b.write_profiles()
    assert merged == os.path.join(str(tmp_path), "op_statistic.csv")
    lines = open(merged).read().splitlines()
    assert lines[0].startswith("OP Type,Core Type,Count,Total Time(us)")
    assert any(line.startswith("SuperKernel,") and ",3," in line for line in lines[1:])
    (sub,) = [d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d)]
    assert {"op_statistic.csv", "trace.json"} <= set(os.listdir(tmp_path / sub))
    b.reset_profiles()
    assert superkernel.write_profiles()  # the module-level call writes every profiling backend


def test_config_is_validated():
    with pytest.raises(ValueError, match="executor"):
        backend("fast")
    with pytest.raises(ValueError, match="num_threads"):
        backend(num_threads=0)


def test_views_alone_stay_in_torch():
    class Views(torch.nn.Module):
        def forward(self, x):
            y = torch.sin(x)
            return y.view(-1), y[1:3].unsqueeze(0), torch.cos(y.reshape(2, -1))

    got, want, b = compile_run(Views(), (torch.randn(4, 6),), "interp")
    assert_bitwise(got, want)
    assert b.programs() == []  # a view in torch costs nothing; a library program would copy


def test_torch_side_effects_keep_their_place_among_library_nodes():
    """An in-place torch op (here traced without functionalization) is a
    barrier: the library node before it reads the value before it."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from superkernel.backend.runner import Plan

    def f(x, y):
        u = torch.sin(x) * x  # sin in torch; the product in the library, after sin
        x.add_(y)  # in place: must come after the product
        return u, x * y

    x, y = torch.randn(8), torch.randn(8)
    gm = make_fx(f, tracing_mode="fake")(x, y)
    plan = Plan(gm, ())
    order = [n.name for sk_nodes, torch_nodes in plan.stages for n in sk_nodes + torch_nodes]
    assert order.index("mul") < order.index("add_") < order.index("mul_1")
    runner = plan.build([x, y], backend("interp").team(), backend("interp").config, "t")
    x2 = x.clone()
    got = runner(x, y)
    want = f(x2, y)
    assert_bitwise(list(got), list(want))
    assert_bitwise(x, x2, "x after add_")


def test_backend_keeps_its_own_copy_of_the_config():
    config = superkernel.CompilerConfig(executor="interp")
    b = superkernel.get_backend(config)
    config.executor = "eager"
    assert b.config.executor == "interp" and b.config is not config
    with pytest.raises(ValueError, match="profiling_dir"):
        b.write_profiles()


class NothingForTheLibrary(torch.nn.Module):
    def forward(self, x):
        return x.softmax(-1).cumsum(-1)


class ViewsOnly(torch.nn.Module):
    def forward(self, x):
        return x.reshape(4, -1).unsqueeze(0).softmax(-1)


@pytest.mark.parametrize("model", [NothingForTheLibrary, ViewsOnly])
def test_a_graph_with_nothing_for_the_library_runs_as_dynamo_compiled_it(model):
    """No library op (or views alone): the backend hands Dynamo its own
    graph back (no AOTAutograd wrapper, no program), the same bits."""
    b = superkernel.get_backend()
    x = torch.randn(8, 16)
    with torch.no_grad():
        got = torch.compile(model(), backend=b, fullgraph=True)(x)
    assert_bitwise(got, model()(x))
    assert b.graphs() == [] and b.programs() == []


def test_a_graph_with_work_keeps_its_program():
    b = superkernel.get_backend()
    x = torch.randn(8, 16)
    with torch.no_grad():
        got = torch.compile(NothingForTheLibrary(), backend=b, fullgraph=True)(x * x)
        torch.compile(lambda t: (t * t).softmax(-1).cumsum(-1), backend=b, fullgraph=True)(x)
    assert_bitwise(got, NothingForTheLibrary()(x * x))
    assert len(b.graphs()) == 1 and len(b.programs()) == 1
