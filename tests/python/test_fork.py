"""fork() (issue 34, item 1): a child of fork() has only the thread that
called it, so a team made before the fork has no workers there. The torch
front end's shared teams are made again in the child (as PyTorch's own
thread pool is), so eager torch.ops.superkernel ops, models compiled with
backend="superkernel" and exported models work in a fork child
(DataLoader workers, multiprocessing's fork start method); a Team or
Program of the user's own from the parent fails there at once, with the
library's message. Nothing hangs.

Every case runs its child with a deadline: the parent kills a child that
outlives it and fails the test, so a regression (a run waiting for workers
that do not exist) fails instead of hanging the suite."""

import multiprocessing
import os
import time
import warnings

import pytest
import torch

import superkernel
from superkernel.program import shared_team

from _forking import DEADLINE, in_fork
from _scoped_model import Scoped, eager as _eager, tokens as _x, weights as _weights


# ---- the torch front end works in the child ---------------------------------


def test_eager_op_in_child():
    w, b = _weights()
    x = _x()
    want = _eager(x, w, b)  # the op's program and the shared team exist before the fork

    def child():
        same = _eager(x, w, b)  # the program cached in the parent
        other = _eager(_x(5, 9), w, b)  # a new shape: compiled in the child
        return same, other

    same, other = in_fork(child)
    torch.testing.assert_close(same, want, rtol=0, atol=0)
    torch.testing.assert_close(other, _eager(_x(5, 9), w, b), rtol=0, atol=0)
    torch.testing.assert_close(_eager(x, w, b), want, rtol=0, atol=0)  # the parent's team still works


@pytest.mark.parametrize("executor", ["interp", "eager"])
def test_compiled_model_in_child(executor):
    model, x = Scoped(), _x()
    backend = superkernel.get_backend(superkernel.CompilerConfig(executor=executor))
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        want = model(x)
        got = compiled(x)  # compiled and run in the parent
    torch.testing.assert_close(got, want)
    assert backend.programs(), "the library ran nothing: the test would prove nothing"

    def child():
        with torch.no_grad():
            return compiled(x), compiled(x * 2)  # the programs of the parent

    a, b2 = in_fork(child)
    torch.testing.assert_close(a, got, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(b2, compiled(x * 2), rtol=0, atol=0)


def test_exported_model_in_child():
    model, x = Scoped(), _x()
    exported = superkernel.export(model, (x,))
    want = exported(x)

    def child():
        return exported(x)

    torch.testing.assert_close(in_fork(child), want, rtol=0, atol=0)


def test_compile_in_child():
    """A model first compiled in the child, on the shared team the parent
    made (and used) before the fork."""
    w, b = _weights()
    _eager(_x(), w, b)
    model, x = Scoped(), _x(7, 4)
    with torch.no_grad():
        want = model(x)

    def child():
        with torch.no_grad():
            return torch.compile(model, backend="superkernel", fullgraph=True)(x)

    torch.testing.assert_close(in_fork(child), want)


def _pool_op(seed):
    w, b = _weights()
    return _eager(_x(6, seed), w, b)


def test_multiprocessing_fork_pool():
    """Workers of a fork Pool (as DataLoader's are) run the ops."""
    w, b = _weights()
    _eager(_x(), w, b)  # the shared team exists in the parent
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pool = ctx.Pool(2)
    try:
        got = pool.map_async(_pool_op, range(4)).get(timeout=DEADLINE)
    except multiprocessing.TimeoutError:
        pytest.fail(f"the pool's workers hung: no answer after {DEADLINE} s")
    finally:
        pool.terminate()
        pool.join()
    for seed, y in enumerate(got):
        torch.testing.assert_close(y, _pool_op(seed), rtol=0, atol=0)


def test_dataloader_fork_workers():
    """A Dataset whose items are computed by a library op, loaded by fork
    workers."""

    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return _pool_op(i)

    _pool_op(0)
    loader = torch.utils.data.DataLoader(
        Items(), batch_size=None, num_workers=2, multiprocessing_context="fork", timeout=DEADLINE
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        got = list(loader)
    for i, y in enumerate(got):
        torch.testing.assert_close(y, _pool_op(i), rtol=0, atol=0)


# ---- what the user made in the parent fails at once -------------------------


def _program(team):
    with superkernel.Graph() as g:
        x = g.add_input("x", "fp32", (64,))
        (y,) = g.add_op("square", {"x": x})
        g.mark_output(y, "y")
        return g.compile(team, executor="eager")


def test_users_team_fails_in_child():
    team = superkernel.Team(2)
    program = _program(team)
    x = torch.arange(64, dtype=torch.float32)
    (want,) = program.run(x)

    def child():
        t0 = time.monotonic()
        with pytest.raises(superkernel.InvalidStateError) as e:
            program.run(x)
        took = time.monotonic() - t0
        message = str(e.value)
        ctx = program.run_context()
        ctx.bind("input", 0, x)
        ctx.bind("output", 0, torch.empty(64))
        with pytest.raises(superkernel.InvalidStateError) as e2:
            ctx.run()
        ctx.close()
        team.close()  # safe: nothing to join here
        # a team made in the child runs the program compiled before the fork
        mine = superkernel.Team(2)
        (y,) = program.run(x, team=mine)
        mine.close()
        return took, message, str(e2.value), y

    took, message, message2, y = in_fork(child)
    assert took < 5, f"the refusal took {took:.1f} s"
    for m in (message, message2):
        assert f"created in process {os.getpid()}" in m and "after fork()" in m and "create a new team" in m, m
    torch.testing.assert_close(y, want, rtol=0, atol=0)
    (again,) = program.run(x)  # the parent's team is untouched
    torch.testing.assert_close(again, want, rtol=0, atol=0)
    program.close()
    team.close()


def test_shared_team_is_made_again_in_child():
    team = shared_team(2)
    team.handle  # alive in the parent

    def child():
        before = team.closed  # the parent's C team was let go at the fork
        mine = shared_team(2)
        total = _program(mine).run(torch.ones(64))[0].sum().item()
        return before, mine is team, mine.closed, mine.num_cores, total

    before, same, closed, n, total = in_fork(child)
    assert before and same and not closed and n == 2 and total == 64
    assert not team.closed


# ---- a lock another thread held at the fork ---------------------------------
# The child has no such thread: a lock it held stays held there unless the
# child gets a fresh one (superkernel/_fork.py).


def test_locks_held_by_another_thread_at_fork():
    """Every lock of the package (those _fork hands out) held by a parent
    thread at the fork; the child runs a Program, a RunContext, an eager op
    and a compiled model without waiting for it."""
    from superkernel import _fork

    w, b = _weights()
    x = _x()
    program = _program(shared_team(2))
    ctx = program.run_context()
    ctx.bind("input", 0, torch.ones(64))
    ctx.bind("output", 0, torch.empty(64))
    model = Scoped()
    compiled = torch.compile(model, backend="superkernel", fullgraph=True)
    with torch.no_grad():
        want_model = compiled(x)
    want_op = _eager(x, w, b)
    held, locks = [], []
    for owner, entries in list(_fork._OWNERS.items()):
        for names, _ in entries:
            locks.append(getattr(owner, names[0]))
    assert len(locks) >= 6, f"only {len(locks)} locks registered: the test would prove little"
    import threading

    taken, release = threading.Event(), threading.Event()

    def hold():
        for lock in locks:
            lock.acquire()
            held.append(lock)
        taken.set()
        release.wait()
        for lock in held:
            lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(30)
    try:

        def child():
            ctx.run()
            with torch.no_grad():
                return program.run(torch.ones(64))[0], _eager(x, w, b), compiled(x)

        y, op, m = in_fork(child)
    finally:
        release.set()
        holder.join()
    assert y.sum().item() == 64
    torch.testing.assert_close(op, want_op, rtol=0, atol=0)
    torch.testing.assert_close(m, want_model, rtol=0, atol=0)
    ctx.close()
    program.close()


def test_fork_while_another_thread_runs():
    """A thread runs a Program (on the shared team) in a loop while the main
    thread forks: each child runs the same Program at once."""
    import threading

    program = _program(shared_team(2))
    stop = threading.Event()
    runs = [0]

    def loop():
        while not stop.is_set():
            program.run(torch.ones(64))
            runs[0] += 1

    runner = threading.Thread(target=loop)
    runner.start()
    try:
        while runs[0] < 10:
            time.sleep(0.01)
        for _ in range(5):
            assert in_fork(lambda: program.run(torch.ones(64))[0].sum().item()) == 64
    finally:
        stop.set()
        runner.join()
    program.close()
