"""Team: a persistent team of cores (sk_team_create), and the shared teams
of the torch front end."""

import ctypes
import threading

from . import _lib
from ._owned import Owned


class Team(Owned):
    """A persistent team of cores (sk_team_create): num_cores threads, the
    caller included (0: every CPU available, or $SK_NUM_THREADS).
    pin_threads: 0 auto, 1 always, -1 never (see superkernel.h).

    A run holds the team (_acquire / _release), so close() during a run in
    another thread does not pull the team from under it: the team is then
    destroyed when the last run ends, and refuses new runs at once."""

    def __init__(self, num_cores=0, pin_threads=0):
        self._lib = _lib.lib()
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False
        self._handle = None
        cfg = _lib.TeamConfig(
            ctypes.sizeof(_lib.TeamConfig),
            # only what a C int holds: the library checks the values and names the range
            _lib.as_int(num_cores, "Team: num_cores", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
            _lib.as_int(pin_threads, "Team: pin_threads", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
        )
        handle = ctypes.c_void_p()
        _lib.check(self._lib.sk_team_create(ctypes.byref(cfg), ctypes.byref(handle)))
        self._handle = handle

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
            handle = self.handle  # ValueError once closed
            self._users += 1
            return handle

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
        return "Team(closed)" if self.closed else f"Team(num_cores={self.num_cores})"


_SHARED_TEAMS = {}
_SHARED_LOCK = threading.Lock()


def shared_team(num_cores):
    """The process's team of num_cores cores that the torch front end (the
    eager torch ops, the torch.compile backend, superkernel.export) runs
    on, made at first use and kept (made again if someone closed it). One
    team per size, not one per model: every live team's workers count
    against the CPUs, and once they outnumber them the library's waits stop
    spinning (runtime/wait.c), so separate teams would slow each other
    down. Never pinned: PyTorch's own threads share the CPUs. Launches on
    one team take turns."""
    num_cores = _lib.as_int(num_cores, "shared_team: num_cores", 1, _lib.CINT_MAX)
    with _SHARED_LOCK:
        team = _SHARED_TEAMS.get(num_cores)
        if team is None or team.closed:
            team = _SHARED_TEAMS[num_cores] = Team(num_cores=num_cores, pin_threads=-1)
        return team
