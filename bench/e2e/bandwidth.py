"""A STREAM-like read-bandwidth probe: the floor the MoE layers of a decode
step are held to (the bytes of the experts they read over this bandwidth).

    read_bandwidth_gbs(threads)  GB/s of torch.sum over a 512 MiB fp32
                                 buffer at `threads` threads (torch's intra-op
                                 pool splits it into one slice per thread),
                                 the fastest of 5 passes after one to warm up

It mirrors tools/blas/read_bandwidth.c (the floor of `sk bench`): each
thread streams its slice once per pass; a sum reads every byte and writes
nothing, and 512 MiB is far past any cache here. tests/python/test_e2e_bandwidth.py
checks the arithmetic against a fake clock and that a real pass is plausible.
"""

import time

import torch


def read_bandwidth_gbs(threads, mib=512, passes=5, clock=time.perf_counter):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        buf = torch.ones(mib * (1 << 20) // 4, dtype=torch.float32)
        buf.sum()  # pages touched, the pool awake
        best = float("inf")
        for _ in range(passes):
            t0 = clock()
            buf.sum()
            best = min(best, clock() - t0)
        return buf.nbytes / best / 1e9 if best > 0 else 0.0
    finally:
        torch.set_num_threads(before)
