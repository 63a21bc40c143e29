"""in_fork: a function run in a child of os.fork() under a deadline, for the
tests of fork children (a module, not a conftest: import it as
`_forking`). A child that hangs is killed and fails the test instead of
hanging the suite."""

import os
import pickle
import select
import signal
import time
import traceback
import warnings

import pytest

DEADLINE = 60  # seconds a child may take


def in_fork(fn, *args):
    """fn(*args) in a child made by os.fork(); returns what it returned
    (pickled back through a pipe), or fails the test with the child's
    exception, or kills the child and fails when it outlives DEADLINE."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(r)
            signal.alarm(DEADLINE + 5)  # also ends it should the parent be gone
            try:
                result = ("ok", fn(*args))
            except BaseException as e:
                result = ("raised", f"{type(e).__name__}: {e}", traceback.format_exc())
            data = pickle.dumps(result)
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    chunks, deadline = [], time.monotonic() + DEADLINE
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the fork child hung: killed after {DEADLINE} s")
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    assert chunks, f"the fork child died without an answer (wait status {status:#x})"
    result = pickle.loads(b"".join(chunks))
    if result[0] != "ok":
        pytest.fail(f"in the fork child: {result[1]}\n{result[2]}")
    return result[1]
