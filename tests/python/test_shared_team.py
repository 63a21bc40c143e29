"""The shared teams (issue 34, item 10): superkernel.program.shared_team(n)
is documented as made again if someone closed it. Whoever holds the team
object (the eager op cache, a backend, an exported model, the programs
compiled on it) keeps working after shared_team(n).close(): the next use
makes its C team again. Before, every later eager op, compiled call and new
compile in the process failed with "the team was closed"."""

import threading

import torch

import superkernel
from superkernel import _omp
from superkernel.program import shared_team

from _scoped_model import Scoped, eager as _eager, tokens as _x, weights as _weights


def _close_shared():
    # the eager ops' team: torch's thread count, or the one it had before an
    # earlier test's optimize lowered it (_omp.team_threads)
    team = shared_team(_omp.team_threads())
    team.close()
    assert team.closed
    return team


def test_eager_ops_after_close():
    w, b = _weights()
    x = _x()
    want = _eager(x, w, b)
    team = _close_shared()
    torch.testing.assert_close(_eager(x, w, b), want, rtol=0, atol=0)  # the cached program
    torch.testing.assert_close(_eager(_x(3), w, b), _x(3) @ w + b)  # a new one
    assert shared_team(_omp.team_threads()) is team and not team.closed


def test_compiled_model_after_close():
    model, x = Scoped(), _x()
    backend = superkernel.get_backend(superkernel.CompilerConfig(executor="interp"))
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
        assert backend.programs(), "the library ran nothing: the test would prove nothing"
        _close_shared()
        torch.testing.assert_close(compiled(x), got, rtol=0, atol=0)  # compiled before the close
        _close_shared()
        other = Scoped()
        torch.testing.assert_close(torch.compile(other, backend="superkernel", fullgraph=True)(x), want)  # a new compile
    torch.testing.assert_close(got, want)


def test_exported_model_after_close():
    model, x = Scoped(), _x()
    exported = superkernel.export(model, (x,))
    want = exported(x)
    exported.team.close()
    torch.testing.assert_close(exported(x), want, rtol=0, atol=0)
    exported.team.close()
    torch.testing.assert_close(superkernel.export(Scoped(), (x,))(x), want, rtol=0, atol=0)


def test_close_during_runs_in_other_threads():
    """close() while other threads run ops: their runs finish on the team
    they hold, later ones get the team made again; no error anywhere."""
    w, b = _weights()
    x = _x(64)
    want = _eager(x, w, b)
    errors, stop = [], threading.Event()

    def runner():
        try:
            while not stop.is_set():
                torch.testing.assert_close(_eager(x, w, b), want, rtol=0, atol=0)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=runner) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(50):
            shared_team(torch.get_num_threads()).close()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    torch.testing.assert_close(_eager(x, w, b), want, rtol=0, atol=0)


def test_a_users_team_stays_closed():
    """Only the shared teams come back: a Team of the user's own is closed
    for good, as documented."""
    team = superkernel.Team(2)
    team.close()
    try:
        team.handle
    except ValueError as e:
        assert "the team was closed" in str(e)
    else:
        raise AssertionError("a closed Team gave a handle")


def test_teams_on_given_cpus():
    """Team(cpus=...) and shared_team(n, cpus) (the vLLM plugin's team beside
    OpenMP threads bound one a CPU): the library places the workers
    (test_team_cpus.c reads their masks back); here the binding: keyed
    apart from the unplaced team, made again with the same CPUs after a
    close, and bad lists refused by name."""
    import os

    import pytest

    cpus = sorted(os.sched_getaffinity(0))[:2]
    team = superkernel.Team(len(cpus), cpus=cpus)
    assert team.num_cores == len(cpus) and repr(team) == f"Team(num_cores={len(cpus)}, cpus={cpus})"
    team.close()
    placed = shared_team(len(cpus), cpus)
    assert placed is shared_team(len(cpus), tuple(cpus)) and placed is not shared_team(len(cpus))
    placed.close()
    assert placed.handle and placed._cpus == tuple(cpus) and not placed.closed  # made again, on the same CPUs
    with pytest.raises(superkernel.InvalidArgumentError, match=r"cfg->cpus\[0\] and cfg->cpus\[1\]"):
        superkernel.Team(2, cpus=[cpus[0], cpus[0]])
    with pytest.raises(superkernel.InvalidArgumentError, match="num_cores = 3 but cfg->num_cpus = 1"):
        superkernel.Team(3, cpus=[cpus[0]])
    with pytest.raises(TypeError, match="cpus: expected a sequence"):
        superkernel.Team(1, cpus="0")
    with pytest.raises(ValueError, match="cpus is empty"):
        superkernel.Team(1, cpus=[])
