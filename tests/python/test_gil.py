"""A run releases the GIL: another Python thread keeps running meanwhile."""

import threading
import time

import numpy as np

import superkernel as sk


def _long_program(team):
    # One fp32 matmul of about 0.3 GFLOP: tens of milliseconds on one core.
    n = 640
    g = sk.Graph()
    x = g.add_input("x", "fp32", (n, n))
    w = g.add_input("w", "fp32", (n, n))
    (y,) = g.add_op("grouped_matmul", {"x": [x], "weight": [w]})
    g.mark_output(y, "y")
    return g.compile(team, executor="eager"), n


def test_other_threads_run_during_a_run():
    team = sk.Team(1)
    program, n = _long_program(team)
    x = np.ones((n, n), np.float32)
    out = [np.empty((n, n), np.float32)]
    program.run_into([x, x], out)  # warm

    state = {"running": False, "done": False, "during": 0}

    def counter():
        while not state["done"]:
            if state["running"]:
                state["during"] += 1
            time.sleep(0)  # only yields the GIL; the count is of loop turns

    t = threading.Thread(target=counter)
    t.start()
    try:
        calls = 0
        t0 = time.perf_counter()
        state["running"] = True
        while time.perf_counter() - t0 < 0.3:
            program.run_into([x, x], out)
            calls += 1
        state["running"] = False
    finally:
        state["done"] = True
        t.join()
    assert out[0][0, 0] == n
    # With the GIL held through each call, the counter would only run in the
    # gaps between calls (a few turns per call); released, it runs all along.
    assert state["during"] > 50 * calls, (state["during"], calls)
