"""No memory growth: 10,000 runs of a compiled program and 10,000 eager torch
op calls keep the resident set flat after a warm-up; compile/close cycles,
run contexts and failing calls do not grow it without bound either.

RSS comes from /proc/self/statm; the slack covers allocator noise, not a
leak (a leak of even 256 bytes per call would be 2.4 MiB over 10,000)."""

import gc

import numpy as np
import pytest
import torch
from _helpers import rss_bytes

import superkernel as sk
import superkernel.torch_ops  # noqa: F401  (defines torch.ops.superkernel.*)

MiB = 1 << 20
CALLS = 10_000


def growth(fn, warmup, repeat):
    """RSS growth (bytes) over `repeat` calls of fn, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    gc.collect()
    before = rss_bytes()
    for _ in range(repeat):
        fn()
    gc.collect()
    return rss_bytes() - before


def build_graph(shape=(64, 32)):
    g = sk.Graph()
    x = g.add_input("x", "fp32", shape)
    w = g.add_constant("w", np.full(shape, 0.25, np.float32))
    with g.scope("sk1"):
        (s,) = g.add_op("square", {"x": x})
        (a,) = g.add_op("add", {"x": s, "y": w})
    g.mark_output(a, "y")
    return g


@pytest.fixture(scope="module")
def team():
    t = sk.Team(num_cores=2, pin_threads=-1)
    yield t
    t.close()


def test_program_run_into_does_not_grow(team):
    g = build_graph()
    program = g.compile(team, executor="interp")
    g.close()
    x = np.random.default_rng(0).uniform(-1, 1, (64, 32)).astype(np.float32)
    y = np.empty_like(x)
    grew = growth(lambda: program.run_into([x], [y]), 500, CALLS)
    assert np.array_equal(y, x * x + np.float32(0.25))
    assert grew < 2 * MiB, f"RSS grew {grew / MiB:.2f} MiB over {CALLS} Program.run_into calls"
    # the allocating form too (outputs made per call, then dropped)
    grew = growth(lambda: program.run(x), 200, CALLS // 2)
    assert grew < 2 * MiB, f"RSS grew {grew / MiB:.2f} MiB over {CALLS // 2} Program.run calls"
    program.close()


def test_eager_torch_op_does_not_grow():
    x = torch.rand(64, 32)
    want = x * x
    out = []

    def call():
        out[:] = [torch.ops.superkernel.square(x)]

    grew = growth(call, 500, CALLS)
    assert torch.equal(out[0], want)
    assert grew < 2 * MiB, f"RSS grew {grew / MiB:.2f} MiB over {CALLS} torch.ops.superkernel.square calls"


def test_compile_close_cycles_are_bounded(team):
    x = np.ones((64, 32), np.float32)

    def cycle():
        g = build_graph()
        p = g.compile(team, executor="interp")
        g.close()
        p.run(x)
        ctx = p.run_context()  # a run context per cycle too
        ctx.close()
        p.close()

    grew = growth(cycle, 20, 200)
    assert grew < 4 * MiB, f"RSS grew {grew / MiB:.2f} MiB over 200 compile/close cycles"


def test_failing_calls_do_not_grow():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (4, 3))

    def fail():
        for bad in (lambda: g.add_op("reshape", {"x": x}, {"shape": [5]}),
                    lambda: g.add_op("square", {"x": x}, {"nope": 1}),
                    lambda: sk.validate_options("early-start=9")):
            try:
                bad()
            except sk.SuperkernelError:
                pass
            else:
                raise AssertionError("expected an error")

    grew = growth(fail, 100, 2000)
    g.close()
    assert grew < 2 * MiB, f"RSS grew {grew / MiB:.2f} MiB over 6000 failing calls"
