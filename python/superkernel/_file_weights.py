"""One copy of the expert weights in memory: torch's copy moved to a file.

A program packs its constant weights once, at compile, into the panels its
GEMMs read (packed_bytes); torch's own copy stays readable, for the
module's state_dict, for a change to be seen, and for the rare tile the
library reads unpacked. Held in anonymous memory that doubles the experts'
footprint. So before a program borrows a large weight, `to_file(t)` copies
it into a shared mapping of an unlinked temporary file (in
$SUPERKERNEL_WEIGHTS_DIR, else the system's temporary directory), and once
the program has packed it `page_out(t)` hands those pages back to the
kernel (madvise MADV_PAGEOUT: written to the file and dropped). The
values, the address and every torch use stay as they were; a page read
later comes back from the file. The file goes when the last tensor on it
does (nothing is left behind at exit).

Where no file can be made (no space: the file is allocated first, so a
full disk is an error here, never a SIGBUS later), or the directory is in
memory itself (tmpfs, ramfs: nothing would be saved), the tensor stays in
memory with one warning. SUPERKERNEL_WEIGHTS_IN_MEMORY=1 keeps every weight
in memory (two copies, no disk).
"""

import ctypes
import ctypes.util
import os
import tempfile
import warnings

import torch

MADV_PAGEOUT = 21  # linux/mman.h
_MIN_BYTES = 1 << 20  # smaller tensors are not worth a file
_warned = []


def enabled():
    return os.environ.get("SUPERKERNEL_WEIGHTS_IN_MEMORY", "") in ("", "0")


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def is_file_backed(t):
    return getattr(t.untyped_storage(), "filename", None) is not None


def filesystem_type(directory):
    """The type of the filesystem holding directory (/proc/self/mounts:
    the longest mount point above it), or None when unknown."""
    path, best, kind = os.path.realpath(directory), -1, None
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount = parts[1].replace("\\040", " ")
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) > best:
                    best, kind = len(mount), parts[2]
    except OSError:
        return None
    return kind


def _keep(t, why):
    if not _warned:
        _warned.append(True)
        warnings.warn(f"superkernel: expert weights stay in memory (two copies with the packed ones): {why}",
                      RuntimeWarning, stacklevel=4)
    return t


def to_file(t):
    """t (dense, CPU) copied into a file-backed tensor, or t itself (small,
    already file-backed, disabled, or no file could be made)."""
    if not enabled() or t.nbytes < _MIN_BYTES or is_file_backed(t):
        return t
    directory = os.environ.get("SUPERKERNEL_WEIGHTS_DIR") or tempfile.gettempdir()
    if filesystem_type(directory) in ("tmpfs", "ramfs"):  # its files are memory: nothing would be saved
        return _keep(t, f"{directory} is in memory ({filesystem_type(directory)}); set SUPERKERNEL_WEIGHTS_DIR "
                        "to a directory on a disk")
    try:
        fd, path = tempfile.mkstemp(prefix="superkernel-weights-", dir=directory)
        try:
            os.posix_fallocate(fd, 0, t.nbytes)
            out = torch.from_file(path, shared=True, size=t.numel(), dtype=t.dtype)
        finally:
            os.unlink(path)
            os.close(fd)
    except OSError as e:
        return _keep(t, f"no file for them in {directory}: {e}")
    return out.view(t.shape).copy_(t)


def page_out(t):
    """Hands t's pages back to the kernel when t is file-backed (they are
    read again from the file when used); False when nothing was done."""
    if not is_file_backed(t):
        return False
    page = os.sysconf("SC_PAGE_SIZE")
    start = t.data_ptr() // page * page
    length = t.data_ptr() + t.nbytes - start
    return _libc().madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), MADV_PAGEOUT) == 0
