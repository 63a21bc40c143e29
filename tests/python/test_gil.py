"""A run releases the GIL: another Python thread keeps running meanwhile."""

import bisect
import threading
import time

import numpy as np

import superkernel as sk


def _long_program(team, n):
    # One fp32 matmul: 2 n^3 FLOP, about 0.1 s on one core at n = 1536.
    g = sk.Graph()
    x = g.add_input("x", "fp32", (n, n))
    w = g.add_input("w", "fp32", (n, n))
    (y,) = g.add_op("grouped_matmul", {"x": [x], "weight": [w]})
    g.mark_output(y, "y")
    return g.compile(team, executor="eager")


def test_other_threads_run_during_a_run():
    n = 1536
    team = sk.Team(1)
    program = _long_program(team, n)
    x = np.ones((n, n), np.float32)
    out = [np.empty((n, n), np.float32)]
    program.run_into([x, x], out)  # warm

    stamps = []  # when the other thread ran (it can only run holding the GIL)
    done = threading.Event()

    def counter():
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0)  # yields the GIL

    t = threading.Thread(target=counter)
    t.start()
    calls = []
    try:
        for _ in range(4):
            a = time.perf_counter()
            program.run_into([x, x], out)
            calls.append((a, time.perf_counter()))
    finally:
        done.set()
        t.join()
    assert out[0][0, 0] == n
    # Held through a call, the GIL would let the other thread run at most one
    # switch interval (5 ms) past the call's start, never in the middle third
    # of a call of ~100 ms. Released, it runs there, even on a loaded machine
    # (one call of the four is enough: a busy CPU may take the others).
    in_middle = 0
    for a, b in calls:
        third = (b - a) / 3
        lo, hi = bisect.bisect_left(stamps, a + third), bisect.bisect_right(stamps, b - third)
        in_middle += hi > lo
    durations = [round((b - a) * 1e3, 1) for a, b in calls]
    assert in_middle >= 1, (durations, len(stamps))
