"""Zero-copy buffers: numpy arrays and torch CPU tensors as (pointer, bytes).

The library reads and writes a buffer in place, so a buffer must be dense
and row-major (C-contiguous), on the CPU, of the dtype and shape the program
declares. Anything else is refused with an exception naming the buffer and
what was expected; nothing is copied behind the caller's back.
"""

import ctypes
import errno
import os
import sys

from . import _fork
from .dtypes import DType, to_dtype


def buffer_info(obj, what):
    """(data pointer, byte count, DType, shape) of a numpy array or torch
    tensor; raises TypeError / ValueError naming `what` when it cannot be
    handed to C as it is."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu":
            raise ValueError(f"{what}: tensor is on {obj.device}; superkernel runs on the CPU (use .cpu())")
        if obj.layout != torch.strided or obj.is_nested:  # a nested tensor may say torch.strided
            _refuse_layout(obj, what)
        if not obj.is_contiguous():
            raise ValueError(
                f"{what}: tensor is not contiguous (strides {tuple(obj.stride())} for shape "
                f"{tuple(obj.shape)}); call .contiguous()"
            )
        if obj.is_conj() or obj.is_neg():
            # Refused as a non-contiguous tensor is (nothing is copied behind
            # the caller's back; an output could not be written through a
            # copy), and as torch's own zero-copy exits (.numpy(), DLPack)
            # refuse these bits: the memory holds the values unnegated.
            raise ValueError(
                f"{what}: tensor has a lazy {'conjugate' if obj.is_conj() else 'negative'} bit (its memory "
                "holds the values before the conj / neg); call .resolve_conj() / .resolve_neg() first"
            )
        dtype = _TORCH_DTYPES.get(obj.dtype)
        if dtype is None:
            dtype = _TORCH_DTYPES[obj.dtype] = _named(to_dtype, obj.dtype, what)
        return obj.data_ptr(), obj.nbytes, dtype, tuple(obj.shape)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise ValueError(
                f"{what}: array is not C-contiguous (strides {obj.strides} for shape {obj.shape}); "
                "use numpy.ascontiguousarray"
            )
        if not obj.flags.aligned:
            raise ValueError(f"{what}: array is not aligned for its dtype")
        dtype = _NUMPY_DTYPES.get(obj.dtype)
        if dtype is None:
            if not obj.dtype.isnative:
                raise ValueError(f"{what}: array has byte order {obj.dtype.str!r}, not the machine's; use .astype")
            dtype = _NUMPY_DTYPES[obj.dtype] = _named(to_dtype, obj.dtype, what)
        return obj.ctypes.data, obj.nbytes, dtype, obj.shape
    raise TypeError(f"{what}: expected a numpy array or a torch CPU tensor, got {type(obj).__name__}")


def _refuse_layout(obj, what):
    """ValueError naming the layout of a sparse, mkldnn or nested tensor
    (the last may report torch.strided: it says it is nested)."""
    nested = "a nested tensor, " if obj.is_nested else ""
    fix = "use .unbind() or .to_padded_tensor()" if obj.is_nested else "use .to_dense()"
    raise ValueError(
        f"{what}: tensor is {nested}of layout {obj.layout}; superkernel takes dense tensors "
        f"(layout torch.strided: {fix})"
    )


def _named(fn, arg, what):
    """fn(arg), its TypeError prefixed with what."""
    try:
        return fn(arg)
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None


# Per-call lookups are on the run path: dtypes seen once are remembered.
_NUMPY_DTYPES = {}
_TORCH_DTYPES = {}


def check_buffer(obj, what, dtype, shape, writable=False):
    """buffer_info, plus: its dtype and shape must be these. Returns
    (pointer, bytes)."""
    ptr, nbytes, got_dtype, got_shape = buffer_info(obj, what)
    if got_dtype != dtype:
        raise TypeError(f"{what}: expected dtype {DType(dtype)}, got {got_dtype}")
    if tuple(got_shape) != tuple(shape):
        raise ValueError(f"{what}: expected shape {tuple(shape)}, got {tuple(got_shape)}")
    if writable and nbytes:  # nothing is written to an empty output
        if not hasattr(obj, "data_ptr"):
            if not obj.flags.writeable:
                raise ValueError(f"{what}: array is read-only")
            if not _numpy_heap(obj, sys.modules["numpy"].ndarray):
                # numpy says writeable of memory it was handed (frombuffer of
                # a ctypes buffer, ctypeslib.as_array, a memmap) without
                # knowing the protection: probed as torch's is
                _check_writable(ptr, nbytes, what, "array", ".copy()")
        elif not obj.untyped_storage().resizable():
            # Memory torch did not allocate (from_numpy, frombuffer, from_file,
            # shared memory): it may be a read-only mapping, which the run
            # would die writing into. Memory from torch's own allocator (a
            # resizable storage) is writable heap: no probe, no cost.
            _check_writable(ptr, nbytes, what)
    return ptr, nbytes


def _numpy_heap(a, ndarray):
    """Whether a's memory is numpy's own allocation (a's or that of the
    array it views, through views of views): writable heap, no probe."""
    while not a.flags.owndata:
        a = a.base
        if not isinstance(a, ndarray):  # memory numpy was handed, or None
            return False
    return True


# ---- writable memory ---------------------------------------------------------
# torch has no read-only flag, numpy's (checked above) says writeable of
# memory numpy was handed whatever its protection, and a write into a
# read-only page kills the process. The kernel can say without a fault:
# read(2) into a buffer returns EFAULT when the pages are not writable. So a
# probe copies a byte of the buffer into a pipe (write(2), which reads it:
# EFAULT when not even readable) and reads it back into the same place: the
# data is unchanged, nothing faults. The first and last byte are probed:
# protection is per mapping, and a buffer lies in one mapping unless someone
# mprotect()s part of it; probing every page would cost two syscalls per
# 4 KiB on every run (about 0.35 s a GiB). A byte changed by another thread
# between the two calls would be put back: a concurrent write into an
# output during its run is a race anyway.


class _Probe:
    """The pipe of this process (a fork child makes its own: a shared pipe
    would mix two processes' bytes), non-blocking so a probe never waits,
    and the lock that keeps two threads' bytes apart."""

    def __init__(self):
        _fork.lock(self, "lock")  # fresh in a fork child (_fork.py)
        self.pid = None
        self.fds = None
        self.libc = None

    def pipe(self):
        if self.pid != os.getpid():
            if self.libc is None:
                libc = ctypes.CDLL(None, use_errno=True)
                for name in ("read", "write"):
                    getattr(libc, name).argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
                    getattr(libc, name).restype = ctypes.c_ssize_t
                self.libc = libc
            # A pipe of a parent not closed by forget (a fork from C, without
            # Python's fork hooks) is left open: by now the child may have
            # closed those numbers and opened its own files on them.
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self.fds, self.pid = (r, w), os.getpid()
        return self.fds

    def forget(self):
        """In a fork child, before any of its own code runs (so the numbers
        are still the parent's pipe): the inherited pipe closed; the child
        makes its own at its first probe."""
        for fd in self.fds or ():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = self.pid = None


_PROBE = _Probe()
os.register_at_fork(after_in_child=_PROBE.forget)


def _probe_byte(libc, r, w, address):
    """None when the byte at address is writable, else why not."""
    if libc.write(w, address, 1) != 1:
        return _fault("not readable", ctypes.get_errno())
    if libc.read(r, address, 1) == 1:
        return None
    e = ctypes.get_errno()
    _drain(libc, r)  # the byte left in the pipe goes
    return _fault("read-only", e)


def _drain(libc, r):
    """Empties the (non-blocking) pipe."""
    scratch = ctypes.create_string_buffer(64)
    while libc.read(r, scratch, len(scratch)) > 0:
        pass


def _fault(why, e):
    if e != errno.EFAULT:  # not an answer about the memory: the pipe itself failed
        raise OSError(e, f"superkernel: probing an output's memory: {os.strerror(e)}")
    return why


def _check_writable(ptr, nbytes, what, kind="tensor", copy=".clone()"):
    """ValueError naming what (a kind: tensor or array) when
    [ptr, ptr + nbytes) cannot be written."""
    with _PROBE.lock:
        r, w = _PROBE.pipe()
        libc = _PROBE.libc
        # A byte left by a probe interrupted between its write and its read
        # (KeyboardInterrupt) would be read back into this buffer: dropped
        # first, at the cost of one read(2) that finds the pipe empty.
        _drain(libc, r)
        for address in {ptr, ptr + nbytes - 1}:
            why = _probe_byte(libc, r, w, address)
            if why is not None:
                raise ValueError(
                    f"{what}: the {kind}'s memory is {why} (at {address:#x}: a read-only mapping, e.g. a "
                    f"read-only mmap or a file opened for reading); an output must be writable (use a copy: {copy})"
                )
