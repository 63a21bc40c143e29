"""superkernel.export: the model compiled ahead of time and called without
torch.compile; Program._run_pointers; the shared core teams."""

import pytest
import torch
from conftest import EXECUTORS, assert_bitwise, compile_run, load_example, random_model

import superkernel
from superkernel import scope
from superkernel.program import shared_team

sk = torch.ops.superkernel


def _config(executor="auto"):
    return superkernel.CompilerConfig(executor=executor)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_example01_equals_eager_and_torch_compile(executor):
    ex = load_example("example01_super_kernel_base.py")
    inputs = ex.make_inputs()
    with torch.no_grad():
        want = ex.Network()(*inputs)
    exported = superkernel.export(ex.Network(), inputs, compiler_config=_config(executor))
    got = exported(*inputs)
    assert_bitwise(got, want)
    compiled, _, _ = compile_run(ex.Network(), inputs, executor)
    assert_bitwise(got, compiled)
    (program,) = exported.programs
    assert program.stats["n_super_kernels"] == (0 if executor == "eager" else 2)
    assert_bitwise(exported(*inputs), want)  # a second call, buffers reused


@pytest.mark.parametrize("seed", range(6))
def test_random_scoped_models(seed, quiet):
    model, inputs, source = random_model(7000 + seed, n_ops=10)
    with torch.no_grad():
        want = model(*inputs)
    exported = superkernel.export(model, inputs, compiler_config=_config("jit"))
    try:
        assert_bitwise(exported(*inputs), want)
    except AssertionError as e:
        raise AssertionError(f"{e}\nmodel:\n{source}") from None


class WithWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = torch.nn.Parameter(torch.rand(16, 8, generator=g).half() - 0.5)
        self.register_buffer("b", torch.rand(8, generator=g).half())

    def forward(self, x):
        with scope.super_kernel("s"):
            (y,) = sk.grouped_matmul([x], [self.w], [self.b])
            return torch.square(y)


def test_weights_become_constants_and_are_frozen():
    model = WithWeights()
    x = torch.rand(4, 16).half()
    with torch.no_grad():
        want = model(x)
    exported = superkernel.export(model, [x])
    assert_bitwise(exported(x), want)
    (program,) = exported.programs
    assert program.stats["n_constants"] == 2 and program.stats["n_inputs"] == 1
    with torch.no_grad():
        model.w.mul_(2)  # frozen at export: not seen
    assert_bitwise(exported(x), want)


def test_list_and_keyword_inputs():
    class M(torch.nn.Module):
        def forward(self, xs, *, scale):
            with scope.super_kernel("s"):
                return sk.concat([xs[0] * scale, xs[1]], dim=0)

    xs, scale = [torch.rand(2, 3), torch.rand(1, 3)], torch.rand(2, 3)
    exported = superkernel.export(M(), (xs,), {"scale": scale})
    assert_bitwise(exported(xs, scale=scale), M()(xs, scale=scale))
    with pytest.raises(TypeError, match="argument structure"):
        exported(xs[0], scale=scale)


def test_bad_calls_name_the_input_and_leave_it_usable():
    model = WithWeights()
    x = torch.rand(4, 16).half()
    exported = superkernel.export(model, [x])
    with pytest.raises(ValueError, match=r"input x: expected torch.float16 \[4, 16\], got torch.float32 \[4, 16\]"):
        exported(x.float())
    with pytest.raises(ValueError, match=r"input x: expected torch.float16 \[4, 16\], got torch.float16 \[5, 16\]"):
        exported(torch.rand(5, 16).half())
    with pytest.raises(ValueError, match="input x is on meta"):
        exported(torch.empty(4, 16, dtype=torch.float16, device="meta"))
    with pytest.raises(TypeError, match="expected a tensor, got list"):
        exported([1.0])
    with pytest.raises(TypeError, match="expected 1 input tensors, got 2"):
        exported(x, x)
    with torch.no_grad():
        assert_bitwise(exported(x), model(x))
    # a non-contiguous input of the right shape is copied, not misread
    xt = torch.rand(16, 4).half().t()
    with torch.no_grad():
        assert_bitwise(exported(xt), model(xt.contiguous()))


def test_front_ends_share_one_team_per_size():
    model = WithWeights()
    x = torch.rand(4, 16).half()
    a = superkernel.export(model, [x], compiler_config=superkernel.CompilerConfig(num_threads=2))
    b = superkernel.export(model, [x], compiler_config=superkernel.CompilerConfig(num_threads=2))
    backend = superkernel.get_backend(superkernel.CompilerConfig(num_threads=2))
    assert a.team is b.team is backend.team() is shared_team(2)
    assert shared_team(1) is not shared_team(2) and shared_team(2).num_cores == 2


def test_run_pointers():
    import numpy as np

    g = superkernel.Graph()
    x = g.add_input("x", "fp32", (3, 4))
    y = g.add_input("y", "fp32", (3, 4))
    (z,) = g.add_op("add", {"x": x, "y": y})
    g.mark_output(z, "z")
    p = g.compile()
    a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 0.5, np.float32)
    out, out2 = np.empty_like(a), np.empty_like(a)
    p._run_pointers([a.ctypes.data, b.ctypes.data], [out.ctypes.data])
    assert (out == a + b).all()
    b[:] = 2  # same pointers: nothing rewritten, new values read
    p._run_pointers([a.ctypes.data, b.ctypes.data], [out.ctypes.data])
    assert (out == a + 2).all()
    p._run_pointers([b.ctypes.data, a.ctypes.data], [out2.ctypes.data])  # new pointers are written
    assert (out2 == a + 2).all()
    p.run_into([a, a], [out])  # run_into and run_pointers mix
    assert (out == 2 * a).all()
    p._run_pointers([a.ctypes.data, b.ctypes.data], [out2.ctypes.data])
    assert (out2 == a + 2).all()
    with pytest.raises(TypeError, match="expected 2 inputs and 1 outputs, got 1 and 1"):
        p._run_pointers([a.ctypes.data], [out.ctypes.data])
