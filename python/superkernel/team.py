"""Team: a persistent team of cores (sk_team_create), and the shared teams
of the torch front end.

fork(): a child has only the thread that called fork(), so a team made
before it has no workers there. The library refuses every run on such a
team at once (InvalidStateError naming the process that made it), and
closing it in the child is safe. The shared teams are made again in the
child at their next use, as PyTorch's own thread pool is, so the torch ops,
compiled models and exported models of the parent work in a fork child
(DataLoader workers, multiprocessing's fork start method); a Team of the
user's own from the parent fails at once there."""

import ctypes
import os
import threading
import weakref

from . import _lib
from ._owned import Owned

# Every live Team: after fork() the child replaces their locks (one held by
# another thread of the parent at the fork would be held for ever in the
# child, which has no such thread).
_LIVE = weakref.WeakSet()


def _cpu_list(cpus):
    """cpus as a tuple of C ints (None stays None); the library checks the values."""
    if cpus is None:
        return None
    if isinstance(cpus, (str, bytes)) or not hasattr(cpus, "__iter__"):
        raise TypeError(f"Team: cpus: expected a sequence of CPU numbers or None, got {type(cpus).__name__} {cpus!r}")
    out = tuple(_lib.as_int(c, "Team: cpus entry", -_lib.CINT_MAX - 1, _lib.CINT_MAX) for c in cpus)
    if not out:
        raise ValueError("Team: cpus is empty: give at least one CPU, or None for the calling thread's mask")
    return out


class Team(Owned):
    """A persistent team of cores (sk_team_create): num_cores threads, the
    caller included (0: every CPU available, or $SK_NUM_THREADS).
    pin_threads: 0 auto, 1 always, -1 never (see superkernel.h). cpus: the
    CPUs it runs on, the caller's first (None: the calling thread's
    affinity mask); pinned, worker c runs on cpus[c].

    A run holds the team (_acquire / _release), so close() during a run in
    another thread does not pull the team from under it: the team is then
    destroyed when the last run ends, and refuses new runs at once."""

    def __init__(self, num_cores=0, pin_threads=0, cpus=None):
        self._lib = _lib.lib()
        # reentrant: a shared team makes its C team again under it (_live_handle)
        self._lock = threading.RLock()
        self._users = 0
        self._closing = False
        self._handle = None
        self._cpus = _cpu_list(cpus)
        self._handle = self._create(num_cores, pin_threads)
        _LIVE.add(self)

    def _create(self, num_cores, pin_threads):
        cpus = self._cpus
        cfg = _lib.TeamConfig(
            ctypes.sizeof(_lib.TeamConfig),
            # only what a C int holds: the library checks the values and names the range
            _lib.as_int(num_cores, "Team: num_cores", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
            _lib.as_int(pin_threads, "Team: pin_threads", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
            (ctypes.c_int * len(cpus))(*cpus) if cpus is not None else None,
            len(cpus) if cpus is not None else 0,
        )
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_team_create(ctypes.byref(cfg), ctypes.byref(handle)))
        return handle

    _noun = "team"

    @property
    def closed(self):
        return self._handle is None or self._closing

    @property
    def num_cores(self):
        return self._lib.sk_team_num_cores(self.handle)

    def _acquire(self):
        """The handle, held until _release (a run)."""
        with self._lock:
            handle = self._live_handle()  # ValueError once closed
            self._users += 1
            return handle

    def _live_handle(self):
        return self.handle

    def _after_fork_in_child(self):
        """In a fork child: no run of the parent goes on here, and no
        thread holds the lock. The C team stays: runs on it are refused
        (it has no workers here), close() frees it."""
        self._lock = threading.RLock()
        self._users = 0
        if self._closing:  # closed during a run of the parent, which is not here to end it
            self._destroy(self._handle)

    def _release(self):
        with self._lock:
            self._users -= 1
            if self._closing and self._users == 0:
                self._destroy(self._handle)

    def _destroy(self, handle):
        self._lib.sk_team_destroy(handle)
        self._handle = None
        self._closing = False

    def close(self):
        """Stops the workers (at once, or when the runs in progress end)."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._handle is None:
                return
            if self._users:
                self._closing = True
            else:
                self._destroy(self._handle)

    def __repr__(self):
        if self.closed:
            return "Team(closed)"
        cpus = f", cpus={list(self._cpus)}" if self._cpus is not None else ""
        return f"Team(num_cores={self.num_cores}{cpus})"


class _SharedTeam(Team):
    """A team shared_team hands out: one object per size for the life of
    the process, whose C team is made again at its next use when someone
    closed it, and in a fork child (where the parent's has no workers), so
    whoever holds it (the eager op cache, a backend, an exported model, the
    programs compiled on it) keeps working. Never pinned, unless placed on
    given CPUs (shared_team's cpus)."""

    def __init__(self, num_cores, cpus=None, pin_threads=-1):
        self._num_cores = num_cores
        self._pin = pin_threads
        super().__init__(num_cores=num_cores, pin_threads=pin_threads, cpus=cpus)

    @property
    def num_cores(self):
        return self._num_cores

    @property
    def handle(self):
        return self._live_handle()

    def _live_handle(self):
        with self._lock:
            if self._handle is None:  # closed (or forked): made again
                self._handle = self._create(self._num_cores, self._pin)
            # closing (close() during a run): the C team is alive until the
            # last run ends, and serves new runs meanwhile
            return self._handle

    def _after_fork_in_child(self):
        super()._after_fork_in_child()
        if self._handle is not None:
            # the parent's C team, copied: freed (nothing to stop here); the
            # next use makes one with workers in this process
            self._destroy(self._handle)

    def __repr__(self):
        cpus = f", cpus={list(self._cpus)}" if self._cpus is not None else ""
        return f"Team(num_cores={self._num_cores}{cpus}, shared{', closed' if self.closed else ''})"


_SHARED_TEAMS = {}
_SHARED_LOCK = threading.Lock()


def shared_team(num_cores, cpus=None):
    """The process's team of num_cores cores that the torch front end (the
    eager torch ops, the torch.compile backend, superkernel.export) runs
    on: one object per size, made at first use and kept. Its C team is made
    again at the next use when someone closed it, and in a child after
    fork(), so holders of the object keep working. One team per size, not
    one per model: every live team's workers count against the CPUs, and
    once they outnumber them the library's waits stop spinning
    (runtime/wait.c), so separate teams would slow each other down. Never
    pinned: PyTorch's own threads share the CPUs. Launches on one team take
    turns.

    cpus (the vLLM plugin): the CPUs where torch's OpenMP threads are bound,
    one each, the caller's first; the team's worker c is pinned to cpus[c],
    beside OpenMP thread c (see Team)."""
    num_cores = _lib.as_int(num_cores, "shared_team: num_cores", 1, _lib.CINT_MAX)
    cpus = _cpu_list(cpus)
    key = (num_cores, cpus)
    with _SHARED_LOCK:
        team = _SHARED_TEAMS.get(key)
        if team is None:
            team = _SHARED_TEAMS[key] = _SharedTeam(num_cores, cpus, pin_threads=-1 if cpus is None else 0)
        return team


def _after_fork_in_child():
    global _SHARED_LOCK
    _SHARED_LOCK = threading.Lock()
    for team in list(_LIVE):
        team._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
