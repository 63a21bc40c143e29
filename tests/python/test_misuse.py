"""Misuse from Python never crashes: closing objects under a run, memory
pulled from under a borrowed constant, integers ctypes would truncate,
values of another graph, foreign byte orders; and the front ends' edge
cases (many outputs, inference tensors, models that mutate buffers)."""

import os
import threading
import time

import numpy as np
import pytest
import torch
from conftest import assert_bitwise, compile_run

import superkernel as sk
from superkernel import scope


def _long_program(team, n=1 << 20, depth=40):
    g = sk.Graph()
    v = g.add_input("x", "fp32", (n,))
    for _ in range(depth):
        (v,) = g.add_op("square", {"x": v})
    g.mark_output(v, "y")
    return g.compile(team, executor="eager"), np.ones(n, np.float32), np.empty(n, np.float32)


def _close_during_runs(close, run):
    """Runs `run` in a thread while `close` is called; returns what the
    thread raised (None if it finished)."""
    caught = []

    def runner():
        try:
            for _ in range(20):
                run()
        except Exception as e:  # the failure the test expects
            caught.append(e)

    t = threading.Thread(target=runner)
    t.start()
    time.sleep(0.02)
    close()
    t.join(timeout=120)
    assert not t.is_alive(), "a run hung after close"
    return caught[0] if caught else None


@pytest.mark.parametrize("what", ["program", "team", "context"])
def test_close_during_a_run_is_an_error_not_a_crash(what):
    team = sk.Team(2, pin_threads=-1)
    program, a, b = _long_program(team)
    if what == "context":
        ctx = program.run_context()
        ctx.bind("input", 0, a)
        ctx.bind("output", 0, b)
        run, close = ctx.run, ctx.close
    else:
        run, close = (lambda: program.run(a, outputs=[b])), (program if what == "program" else team).close
    err = _close_during_runs(close, run)
    # Closing waits for the run in progress; Python's locks are not fair, so
    # the runner may even finish all its runs first. Either way no crash, no
    # hang, and every run after the close is refused.
    assert err is None or (isinstance(err, ValueError) and "was closed" in str(err)), err
    with pytest.raises(ValueError, match="was closed"):
        run()
    assert b[0] == 1.0  # the runs that did happen computed


def test_borrowed_constant_resized_after_compile():
    c = torch.arange(4, dtype=torch.float32)
    g = sk.Graph()
    x = g.add_input("x", "fp32", (4,))
    k = g.add_constant("c", c, borrow=True)
    (y,) = g.add_op("add", {"x": x, "y": k})
    g.mark_output(y, "y")
    p = g.compile()
    assert torch.equal(p.run(torch.ones(4))[0], c + 1)
    c.resize_(1 << 20)  # new memory: the program's pointer would dangle
    with pytest.raises(sk.InvalidStateError, match="borrowed constant 'c'"):
        p.run(torch.ones(4))


def test_integers_out_of_range_are_refused_not_truncated():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (6, 2))
    with pytest.raises(ValueError, match=r"slice: attribute end: 18446744073709551618 is out of range"):
        g.add_op("slice", {"x": x}, {"end": 2**64 + 2})
    with pytest.raises(ValueError, match="input y: shape: dimension 0"):
        g.add_input("y", "fp32", (2**64 + 3,))
    with pytest.raises(TypeError, match=r"reshape: attribute shape\[0\]: expected an int, got 2.7"):
        g.add_op("reshape", {"x": x}, {"shape": [2.7]})
    with pytest.raises(TypeError, match="expected a sequence of ints"):
        g.add_input("z", "fp32", "ab")
    with pytest.raises(ValueError, match="Team: num_cores"):
        sk.Team(2**32 + 1)


def test_values_of_another_graph_are_refused():
    g1, g2 = sk.Graph(), sk.Graph()
    x1 = g1.add_input("x", "fp32", (4,))
    g1.add_op("square", {"x": x1})
    x2 = g2.add_input("x", "fp32", (4,))
    (d,) = g2.add_op("add", {"x": x2, "y": x2})
    with pytest.raises(TypeError, match="mark_output 'y': expected a Value of this graph"):
        g1.mark_output(d, "y")
    with pytest.raises(TypeError, match="expected Values of this graph"):
        g1.add_op("square", {"x": d})


def test_foreign_byte_order_and_unsupported_dtypes_name_the_buffer():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (4,))
    (y,) = g.add_op("add", {"x": x}, {"scalar": 0.0})
    g.mark_output(y, "y")
    p = g.compile()
    with pytest.raises(ValueError, match="input x: array has byte order '>f4'"):
        p.run(np.arange(4, dtype=">f4"))
    with pytest.raises(TypeError, match="constant c: .*float64"):
        g.add_constant("c", np.zeros(3))
    assert (p.run(np.arange(4, dtype=np.float32))[0] == [0, 1, 2, 3]).all()


def test_run_context_bind_errors():
    team = sk.Team(1)
    program, a, b = _long_program(team, n=8, depth=1)
    ctx = program.run_context()
    with pytest.raises(ValueError, match="kind 'in'; expected 'input' or 'output'"):
        ctx.bind("in", 0, a)
    with pytest.raises(ValueError, match="input index: -1 is out of range"):
        ctx.bind("input", -1, a)
    ctx.bind("input", 0, a)
    ctx.bind("output", 0, b)
    ctx.run()
    assert (b == 1).all()
    ctx.close()
    with pytest.raises(ValueError, match="the context was closed"):
        ctx.run()


def test_many_outputs():
    n = 70
    xs = [torch.rand(2, 3) for _ in range(n)]
    ws = [torch.rand(3, 2) for _ in range(n)]
    ys = torch.ops.superkernel.grouped_matmul(xs, ws)
    assert len(ys) == n and ys[-1].shape == (2, 2)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = torch.ops.superkernel.grouped_matmul([mode.from_tensor(x) for x in xs], [mode.from_tensor(w) for w in ws])
    assert len(fake) == n


class _Weighted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(8, 8).half(), requires_grad=False)

    def forward(self, x):
        with scope.super_kernel("s"):
            (y,) = torch.ops.superkernel.grouped_matmul([x], [self.w])
            return y + 0.1  # an fp16 add of a scalar torch rounds to fp16 first


def test_backend_under_inference_mode():
    with torch.inference_mode():
        model, x = _Weighted(), torch.rand(4, 8).half()
        want = model(x)
        got, _, _ = compile_run(model, [x], "jit")
    assert_bitwise(got, want)


def test_export_refuses_models_that_mutate_buffers():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(1))

        def forward(self, x):
            self.n.add_(1)
            return x * 2

    with pytest.raises(NotImplementedError, match="changes n in place"):
        sk.export(Counter(), [torch.ones(3)])


def test_export_writes_profiles(tmp_path):
    model, x = _Weighted(), torch.rand(4, 8).half()
    exported = sk.export(model, [x], compiler_config=sk.CompilerConfig(executor="interp", profiling_dir=tmp_path))
    with torch.no_grad():
        assert_bitwise(exported(x), model(x))
    merged = exported.write_profiles()
    assert merged == os.path.join(str(tmp_path), "op_statistic.csv") and os.path.isfile(merged)
    with open(merged) as f:
        assert f.readline().startswith("OP Type,Core Type,Count")
