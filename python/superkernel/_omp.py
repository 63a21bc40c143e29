"""torch's OpenMP workers and the library's team on the same cores.

After each parallel torch op, libgomp's workers spin for milliseconds
(OMP_WAIT_POLICY's default) before they sleep. Where the library runs a
MoE block between torch ops (optimize(whole_model=False),
experts_implementation="superkernel"), those workers spin on the cores the
library's team needs: on a truncated Qwen3-30B-A3B at 2 threads the MoE
step took 1.44x its bandwidth floor, and 0.79x with the workers waiting
passively (BENCHMARKS.md, issue 43).

libgomp reads its wait policy once, when it is loaded (with torch), and
has no call to change it later. So `import superkernel` sets
OMP_WAIT_POLICY=PASSIVE when nothing has set it and no OpenMP runtime is
loaded yet (superkernel imported before torch); an explicit
OMP_WAIT_POLICY (ACTIVE keeps the spinning) is left as it is. The
per-block paths warn once when the runtime was loaded spinning. The
whole-model path needs none of this: optimize sets torch's intra-op threads
to 1 (torch runs nothing there but the sampling).
"""

import os
import warnings

_RUNTIMES = ("libgomp", "libiomp", "libomp")
_warned = []
_torch_threads_before = []  # torch's intra-op threads before optimize lowered them (once)


def lower_torch_threads(n):
    """torch.set_num_threads(n) for a whole model in the library; the
    library's default teams keep the count torch had before (team_threads)."""
    import torch

    if not _torch_threads_before:
        _torch_threads_before.append(torch.get_num_threads())
    torch.set_num_threads(n)


def team_threads():
    """The default size of the library's teams: torch's intra-op threads,
    or the count they had before optimize lowered them for a whole model."""
    import torch

    return max([torch.get_num_threads()] + _torch_threads_before)


def _loaded():
    """Whether an OpenMP runtime is mapped into this process."""
    try:
        with open("/proc/self/maps") as f:
            return any(r in line for line in f for r in _RUNTIMES)
    except OSError:
        return True  # cannot tell: assume it is, and set nothing


def prefer_passive():
    """At import: OMP_WAIT_POLICY=PASSIVE where it can still take effect."""
    if "OMP_WAIT_POLICY" not in os.environ and not _loaded():
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def spinning():
    """Whether torch's workers spin after their ops (the policy the runtime read)."""
    return os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE"


def warn_if_spinning(what):
    """Once: the per-block paths share the cores with spinning workers."""
    import torch

    if _warned or not spinning() or torch.get_num_threads() < 2:  # one torch thread: no workers to spin
        return
    _warned.append(True)
    warnings.warn(f"superkernel: {what} runs between torch ops whose OpenMP workers spin on the cores the "
                  "library's team needs (the MoE step measured 1.44x slower): import superkernel before torch, or "
                  "set OMP_WAIT_POLICY=PASSIVE in the environment (docs/python.md, 'Threads')", stacklevel=3)
