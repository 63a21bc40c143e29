"""bench/e2e/bandwidth.py, the read-bandwidth probe of the end-to-end
benchmark's decode floor: its arithmetic (bytes over the fastest pass, on a
fake clock) and a plausible real measurement."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "e2e"))
import bandwidth  # noqa: E402


def test_bytes_over_the_fastest_pass():
    ticks = iter([0.0, 0.004, 1.0, 1.002, 2.0, 2.003])  # passes of 4, 2 and 3 ms
    gbs = bandwidth.read_bandwidth_gbs(1, mib=16, passes=3, clock=lambda: next(ticks))
    assert gbs == pytest.approx(16 * (1 << 20) / 0.002 / 1e9)


def test_a_real_pass_is_plausible():
    gbs = bandwidth.read_bandwidth_gbs(1, mib=64, passes=3)
    assert 0.5 < gbs < 2000  # any machine this runs on reads faster than 0.5 GB/s
