"""Owned: a Python object that owns one C object (a graph, team, program or
run context)."""


class Owned:
    """Holds the C handle: `handle` (ValueError once closed), close()
    (idempotent, also run by the garbage collector and on leaving a `with`
    block). A subclass names its noun and its destroy call; one whose runs
    must not see the object freed under them closes under `_close_lock`,
    which its runs hold too."""

    _handle = None
    _noun = "object"
    _remake = "make a new one"  # what to do instead of a copy
    _close_lock = None  # a threading.Lock where runs and close take turns

    def _destroy(self, handle):
        raise NotImplementedError

    @property
    def closed(self):
        return self._handle is None

    @property
    def handle(self):
        if self.closed:
            raise ValueError(f"superkernel.{type(self).__name__}: the {self._noun} was closed")
        return self._handle

    def close(self):
        lock = self._close_lock
        with lock if lock is not None else _NO_LOCK:
            if self._handle is not None:
                self._destroy(self._handle)
                self._handle = None

    def __del__(self):
        self.close()

    def __reduce_ex__(self, protocol):
        # copy.copy / deepcopy and pickle would duplicate the handle (two
        # owners, one C object: a double free) or fail inside ctypes.
        raise TypeError(
            f"superkernel.{type(self).__name__} cannot be copied or pickled: it owns a C {self._noun}; "
            f"{self._remake}"
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_LOCK = _NoLock()
