"""The low-level API (Graph, Team, Program, RunContext): zero-copy buffers,
constants, scopes, streams and events, options, introspection, profiles,
parallel run contexts, executors; and bad input, which raises a clear
exception naming the culprit and leaves the process usable."""

import csv
import json
import threading
import weakref

import numpy as np
import pytest
import torch

import superkernel as sk

RNG = np.random.default_rng(11)


def rand(shape, dtype=np.float32):
    return RNG.uniform(-2, 2, shape).astype(dtype)


@pytest.fixture(scope="module")
def team():
    t = sk.Team(num_cores=2, pin_threads=-1)
    yield t
    t.close()


def square_program(shape=(16, 8), dtype="fp32", team=None, executor="eager"):
    with sk.Graph() as g:
        x = g.add_input("x", dtype, shape)
        (y,) = g.add_op("square", {"x": x})
        g.mark_output(y, "y")
        return g.compile(team, executor=executor)


def scoped_graph(shape=(32, 24)):
    """x -> square -> add(w constant) -> cast fp16, in scope "sk1"."""
    g = sk.Graph()
    x = g.add_input("x", "fp32", shape)
    w = g.add_constant("w", np.full(shape, 0.5, np.float32))
    with g.scope("sk1", "early-start=1"):
        (s,) = g.add_op("square", {"x": x})
        (a,) = g.add_op("add", {"x": s, "y": w})
        (c,) = g.add_op("cast", {"x": a}, {"dtype": "fp16"})
    g.mark_output(c, "c")
    return g


def expected_scoped(x):
    return (x * x + np.float32(0.5)).astype(np.float16)


# ---- zero copy ------------------------------------------------------------


def test_numpy_buffers_are_used_in_place():
    p = square_program()
    x, y = rand((16, 8)), np.zeros((16, 8), np.float32)
    ptr = y.ctypes.data
    out = p.run(x, outputs=[y])
    assert out[0] is y and y.ctypes.data == ptr
    assert np.array_equal(y, x * x)
    x[0, 0] = 3.0  # the input is read where it lies, run after run
    p.run_into([x], [y])
    assert y[0, 0] == 9.0
    p.close()


def test_torch_buffers_are_used_in_place():
    p = square_program((5, 7), "bf16")
    x = torch.rand(5, 7).to(torch.bfloat16)
    y = torch.empty(5, 7, dtype=torch.bfloat16)
    ptr = y.data_ptr()
    view = y.view(torch.int16)  # shares y's storage
    out = p.run(x, outputs=[y])
    assert out[0] is y and y.data_ptr() == ptr
    assert torch.equal(y, x * x) and torch.equal(view, y.view(torch.int16))
    allocated = p.run(x)[0]  # no outputs given: allocated, torch because the input is
    assert isinstance(allocated, torch.Tensor) and torch.equal(allocated, y)
    p.close()


# ---- constants ----------------------------------------------------------------


def test_constants_copy_and_borrow():
    shape = (6, 10)
    copied, borrowed = rand(shape), torch.from_numpy(rand(shape))
    g = sk.Graph()
    x = g.add_input("x", "fp32", shape)
    c = g.add_constant("c", copied)
    b = g.add_constant("b", borrowed, borrow=True)
    (s,) = g.add_op("add", {"x": x, "y": c})
    (t,) = g.add_op("mul", {"x": s, "y": b})
    g.mark_output(t, "t")
    program = g.compile()
    g.close()
    want = (np.zeros(shape, np.float32) + copied) * borrowed.numpy()
    copied[:] = 100.0  # a copy: the program keeps the values it was given
    ref = weakref.ref(borrowed)
    borrowed_values = borrowed.clone()
    del borrowed  # a borrow: the program keeps the buffer alive
    assert ref() is not None
    (got,) = program.run(np.zeros(shape, np.float32))
    assert np.array_equal(got, want)
    assert torch.equal(ref(), borrowed_values)
    stats = program.stats
    assert stats["n_constants"] == 2 and stats["constant_bytes"] == 2 * 6 * 10 * 4
    assert stats["n_inputs"] == 1 and [i.name for i in program.inputs] == ["x"]
    program.close()


# ---- scopes, executors, introspection -------------------------------------------


def test_scope_fuses_and_every_executor_agrees(team):
    g = scoped_graph()
    x = rand((32, 24))
    want = expected_scoped(x)
    for executor in sk.EXECUTORS:
        p = g.compile(team, executor=executor)
        (got,) = p.run(x)
        assert got.dtype == np.float16 and np.array_equal(got, want), executor
        stats = p.stats
        assert stats["executor"] in ("eager", "reference", "interp", "jit", "auto"), stats
        if stats["executor"] in ("interp", "jit", "auto"):
            assert stats["n_super_kernels"] == 1 and stats["n_steps"] == 1
        elif stats["executor"] == "eager":
            assert stats["n_super_kernels"] == 0 and stats["n_steps"] == 3
        p.close()
    g.close()
    assert set(sk.EXECUTORS) == {"default", "eager", "reference", "interp", "jit", "auto"}


def test_describe_jit_source_stats(team):
    g = scoped_graph()
    p = g.compile(team, executor="jit")
    g.close()
    text = p.describe()
    assert "super kernel sk1" in text and "square" in text and "cast" in text
    assert "early-start=1" in text
    source = p.jit_source("sk1")
    assert "sk1" in source and len(source.splitlines()) > 10
    assert p.jit_source() == source
    with pytest.raises(sk.NotFoundError, match="nope"):
        p.jit_source("nope")
    stats = p.stats
    assert stats["executor"] == "jit" and stats["n_jit_compiled"] == 1
    assert [(i.name, str(i.dtype), i.shape) for i in p.outputs] == [("c", "fp16", (32, 24))]
    p.close()


def test_streams_and_events(team):
    """Two chains on two streams joined by an event, stream-fused: equal to
    the eager run and to numpy."""
    g = sk.Graph()
    x = g.add_input("x", "fp32", (64, 32))
    with g.scope("dual", "stream-fusion=1"):
        (a,) = g.add_op("square", {"x": x})
        g.set_stream(1)
        (b,) = g.add_op("add", {"x": x}, {"scalar": 1.0})
        event = g.record_event()
        g.set_stream(0)
        g.wait_event(event)
        (c,) = g.add_op("mul", {"x": a, "y": b})
    g.mark_output(c, "c")
    fused, eager = g.compile(team, executor="interp"), g.compile(team, executor="eager")
    g.close()
    assert "stream-fused" in fused.describe() and "stream 1" in fused.describe()
    xv = rand((64, 32))
    got = fused.run(xv)[0]
    assert np.array_equal(got, eager.run(xv)[0])
    assert np.array_equal(got, (xv * xv) * (xv + np.float32(1.0)))
    with pytest.raises(sk.SuperkernelError, match="stream"):
        sk.Graph().set_stream(2)
    fused.close()
    eager.close()


def test_options_validate_and_render():
    sk.validate_options("early-start=1:preload-code=max")
    sk.validate_options("")
    rendered = sk.render_options("early-start=1")
    assert "early-start=1" in rendered and "func-align=512" in rendered
    assert rendered == sk.render_options("early_start=1")  # '_' for '-'
    assert sk.render_options() == sk.render_options("") and "early-start=" in sk.render_options()
    with pytest.raises(sk.InvalidArgumentError, match="early-start.*accepted"):
        sk.validate_options("early-start=9")
    with pytest.raises(sk.InvalidArgumentError, match="unknown key 'bogus'"):
        sk.render_options("bogus=1")


def test_write_profile(tmp_path, team):
    g = scoped_graph()
    p = g.compile(team, executor="interp", profile=True)
    g.close()
    x = rand((32, 24))
    for _ in range(3):
        p.run(x)
    out = tmp_path / "prof"
    p.write_profile(out)
    with open(out / "op_statistic.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                       "Max Time(us)", "Ratio(%)"]
    assert rows[1][0] == "SuperKernel" and rows[1][2] == "3"
    with open(out / "trace.json") as f:
        assert json.load(f)
    # the same rows as records, from the library (no csv read back)
    records = p.op_statistics()
    assert [(r.op_type, r.core_type, str(r.count)) for r in records] == [tuple(row[:3]) for row in rows[1:]]
    assert all(r.min_us <= r.total_us / r.count <= r.max_us for r in records)
    # two programs' rows merged into one file by the library
    merged = sk.program.write_op_statistics(str(tmp_path / "merged.csv"), records + records)
    with open(merged) as f:
        both = list(csv.reader(f))
    assert [(row[0], row[1], int(row[2])) for row in both[1:]] == [(r.op_type, r.core_type, 2 * r.count) for r in records]
    assert abs(sum(float(row[7]) for row in both[1:]) - 100.0) < 0.1
    bad = records[0]
    with pytest.raises(sk.InvalidArgumentError, match="row 0.*commas"):
        sk.program.write_op_statistics(str(tmp_path / "bad.csv"), [bad._replace(op_type="a,b")])
    with pytest.raises(ValueError, match="row 0: count"):
        sk.program.write_op_statistics(str(tmp_path / "bad.csv"), [bad._replace(count=-1)])
    with pytest.raises(ValueError, match="row 0: op_type .* longer than 63 bytes"):
        sk.program.write_op_statistics(str(tmp_path / "bad.csv"), [bad._replace(op_type="x" * 64)])
    assert not (tmp_path / "bad.csv").exists()
    p.reset_profile()
    p.close()


# ---- run contexts: one program, two threads ------------------------------------


def test_run_contexts_in_parallel_threads():
    g = scoped_graph()
    program = g.compile(sk.Team(1, pin_threads=-1), executor="interp")  # planned for teams of 1
    g.close()
    x = rand((32, 24))
    want = expected_scoped(x)
    results, errors = {}, []

    def worker(k):
        try:
            team = sk.Team(num_cores=1, pin_threads=-1)
            ctx = program.run_context()
            y = np.empty((32, 24), np.float16)
            ctx.bind("input", 0, x)
            ctx.bind("output", 0, y)
            outs = []
            for _ in range(200):
                y[:] = 0
                ctx.run(team)
                outs.append(y.copy())
            ctx.close()
            team.close()
            results[k] = outs
        except Exception as e:  # reported below, with the thread's exception
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        assert all(np.array_equal(o, want) for o in results[k])
    program.close()


# ---- bad input: clear exceptions, the process stays usable ------------------------


def assert_still_usable():
    p = square_program((3,))
    assert np.array_equal(p.run(np.array([1, 2, 3], np.float32))[0], np.array([1, 4, 9], np.float32))
    p.close()


@pytest.fixture
def program():
    p = square_program((4, 3))
    yield p
    p.close()
    assert_still_usable()


def test_non_contiguous_array(program):
    with pytest.raises(ValueError, match="input x: array is not C-contiguous"):
        program.run(np.ones((3, 4), np.float32).T)
    with pytest.raises(ValueError, match="output y: tensor is not contiguous"):
        program.run(torch.ones(4, 3), outputs=[torch.ones(3, 4).t()])


def test_wrong_dtype(program):
    with pytest.raises(TypeError, match="input x: expected dtype fp32, got int32"):
        program.run(np.ones((4, 3), np.int32))
    with pytest.raises(TypeError, match="input x.*float64"):
        program.run(np.ones((4, 3), np.float64))
    with pytest.raises(TypeError, match="output y: expected dtype fp32, got fp16"):
        program.run(torch.ones(4, 3), outputs=[torch.ones(4, 3, dtype=torch.float16)])


def test_wrong_shape(program):
    with pytest.raises(ValueError, match=r"input x: expected shape \(4, 3\), got \(4, 4\)"):
        program.run(np.ones((4, 4), np.float32))
    with pytest.raises(TypeError, match="expected 1 inputs, got 2"):
        program.run(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32))


def test_tensor_not_on_the_cpu(program):
    with pytest.raises(ValueError, match="input x: tensor is on meta; superkernel runs on the CPU"):
        program.run(torch.ones(4, 3, device="meta"))
    with pytest.raises(ValueError, match="output y: tensor is on meta"):
        program.run(torch.ones(4, 3), outputs=[torch.empty(4, 3, device="meta")])


def test_not_a_buffer_and_read_only_output(program):
    with pytest.raises(TypeError, match="input x: expected a numpy array or a torch CPU tensor, got list"):
        program.run([[1.0] * 3] * 4)
    ro = np.zeros((4, 3), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="output y: array is read-only"):
        program.run(np.ones((4, 3), np.float32), outputs=[ro])


def test_invalid_options_string():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (2,))
    with pytest.raises(sk.InvalidArgumentError, match="scope 's': option early-start: illegal value '7'"):
        g.begin_scope("s", "early-start=7")
    with g.scope("s"):  # the failed begin left no scope open
        (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    # default options are checked at compile, whether or not a scope reads them
    for executor in ("interp", "eager"):
        with pytest.raises(sk.InvalidArgumentError, match="global options: .*unknown key 'nonsense'"):
            g.compile(default_options="nonsense=1", executor=executor)
    g.close()
    assert_still_usable()


def test_graph_building_errors_name_the_culprit():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (4, 3))
    with pytest.raises(sk.NotFoundError, match="unknown op type 'nosuch'") as err:
        g.add_op("nosuch", {"x": x})
    assert isinstance(err.value, LookupError)
    with pytest.raises(sk.InvalidAttributeError, match="square: unknown attribute 'bogus'"):
        g.add_op("square", {"x": x}, {"bogus": 1})
    with pytest.raises(sk.InvalidArgumentError, match="square: input x: expected 1 tensor, got 0"):
        g.add_op("square", {})
    with pytest.raises(sk.InvalidArgumentError, match="square: unknown input 'y'"):
        g.add_op("square", {"x": x, "y": x})
    with pytest.raises(sk.InvalidArgumentError, match="input 'x' is declared twice"):
        g.add_input("x", "fp32", (1,))
    with pytest.raises(TypeError, match="unknown dtype name 'fp99'"):
        g.add_input("z", "fp99", (1,))
    with pytest.raises(sk.InvalidShapeError, match="reshape"):
        g.add_op("reshape", {"x": x}, {"shape": [5]})
    with pytest.raises(TypeError, match="attribute shape: expected a list of ints"):
        g.add_op("reshape", {"x": x}, {"shape": 5})
    other = sk.Graph()
    with pytest.raises(TypeError, match="expected Values of this graph"):
        other.add_op("square", {"x": x})
    other.close()
    # the graph is unchanged by the failures and still builds
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    p = g.compile()
    assert np.array_equal(p.run(np.full((4, 3), 2, np.float32))[0], np.full((4, 3), 4, np.float32))
    with pytest.raises(sk.InvalidArgumentError, match="executor 'fast'"):
        g.compile(executor="fast")
    p.close()
    g.close()


def test_closed_objects():
    g = sk.Graph()
    x = g.add_input("x", "fp32", (2,))
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    p = g.compile()
    g.close()
    g.close()  # twice is fine
    with pytest.raises(ValueError, match="the graph was closed"):
        g.add_input("z", "fp32", (2,))
    with pytest.raises(ValueError, match="the graph was closed"):
        g.compile()
    assert np.array_equal(p.run(np.array([3, 4], np.float32))[0], [9, 16])  # the program outlives its graph
    p.close()
    with pytest.raises(ValueError, match="the program was closed"):
        p.run(np.array([3, 4], np.float32))
    t = sk.Team(1)
    t.close()
    assert repr(t) == "Team(closed)"
    with pytest.raises(ValueError, match="the team was closed"):
        t.num_cores
    with pytest.raises(sk.InvalidArgumentError, match="num_cores = -3"):
        sk.Team(num_cores=-3)
    assert_still_usable()


def test_render_options_layered_as_the_library_layers():
    """A scope's options over the defaults: the library's layering, which
    the backend reads strict-scope-check from."""
    both = sk.render_options("split-mode=8", "early-start=0:strict-scope-check=bypass")
    assert "split-mode=8" in both and "early-start=0" in both and "strict-scope-check=bypass" in both
    assert "strict-scope-check" not in sk.render_options("split-mode=8")
    with pytest.raises(sk.InvalidArgumentError, match="global options"):
        sk.render_options("", "early-start=9")
