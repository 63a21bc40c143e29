"""The cost of torch.compile(backend="superkernel") on a graph the library
takes nothing from: eager, Dynamo with its "eager" backend (Dynamo's own
cost: frame evaluation and guards, the floor of any backend) and the
superkernel backend, per call in microseconds, medians of interleaved
rounds, one thread.

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        .venv/bin/python bench/python/backend_passthrough.py
"""

import statistics
import time

import torch

import superkernel  # noqa: F401  registers the backend


def nothing_for_the_library():
    """A fresh module whose forward has its own code object: Dynamo keeps
    compiled code per code object, and two backends on one would share
    (and walk) one cache."""
    scope = {}
    exec("def forward(self, x):\n    return x.softmax(-1).cumsum(-1)\n", scope)
    return type("NothingForTheLibrary", (torch.nn.Module,), {"forward": scope["forward"]})()


def per_call_us(fn, x, calls=2000):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    torch.set_num_threads(1)
    model, x = nothing_for_the_library(), torch.randn(4, 16)
    runs = {"eager": model, "dynamo (eager backend)": torch.compile(nothing_for_the_library(), backend="eager"),
            "superkernel": torch.compile(nothing_for_the_library(), backend="superkernel")}
    times = {k: [] for k in runs}
    with torch.no_grad():
        for fn in runs.values():
            assert torch.equal(fn(x), model(x))
            per_call_us(fn, x, 200)
        for _ in range(9):
            for name, fn in runs.items():
                times[name].append(per_call_us(fn, x))
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, m in med.items():
        print(f"{name:>24}: {m:6.2f} us  (+{m - med['eager']:5.2f} over eager)")
    print(f"superkernel over Dynamo's floor: {med['superkernel'] - med['dynamo (eager backend)']:+.2f} us")


if __name__ == "__main__":
    main()
