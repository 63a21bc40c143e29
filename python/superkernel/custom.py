"""Custom kernels from Python: a user's C kernel, in the user's own shared
library, registered with the library's custom-kernel API (sk_kernel_register)
and exposed as a torch op.

    k = superkernel.custom.register_kernel(
        "./libmykernels.so", entry="pows_kernel", name="pows", type="vector",
        block_count=8, n_params=2, infer="pows_infer")
    (y,) = torch.ops.superkernel.pows([x])       # or: y = k(x)

The kernel's block function and its infer function are C functions of that
library, found by symbol name and handed to the library by address: no
Python runs while blocks run. The kernel is then an op like the built-ins:
in a superkernel.Graph (`g.add_op("pows", {"x": [x]})`), inside or outside a
scope, and as torch.ops.superkernel.<name>, which runs eagerly through the
library and which the torch.compile backend fuses with its neighbours in a
super_kernel scope.

In a graph (and so as a torch op) the kernel's argument list is the input
data pointers, then the output data pointers: n_params = inputs + outputs.
The torch op takes the inputs as one list and returns the outputs as a list
(the library's schema: list input "x", list output "y"). Shapes come to the
kernel through sk_kernel_arg_info; scalars through the user pointer
(sk_kernel_user).

Writing the kernel: include superkernel.h (include_dir() finds it) and build
with `cc -shared -fPIC -O2 -I<include_dir> kernels.c -o libmykernels.so`. The
sk_* functions it calls resolve against the superkernel library this process
has loaded (it is made global before the user's library is opened), so no
-lsuperkernel is needed.

Kernels live until the process exits (the C API has no unregister): a name
can be registered once per process.

A custom kernel is trusted code running in this process, as any C library
loaded with ctypes is (SECURITY.md: custom ops are the embedding program's
code). The library checks its registration (names, fields, symbols) and the
shapes and dtypes of a graph, but not what the kernel's C code does: a
kernel that reads or writes outside its buffers, divides by zero or
crashes takes the Python interpreter down with it (no exception can be
raised), and one that never returns hangs the run (the watchdog ends the
other cores' waits, not the kernel). Register only libraries you would
import as Python extension modules.
"""

import ctypes
import os
import re
import sys

from . import _fork, _lib
from .errors import InvalidArgumentError, NotFoundError

__all__ = ["register_kernel", "load_library", "include_dir", "CustomKernel", "KERNEL_TYPES"]

KERNEL_TYPES = {"vector": 0, "cube": 1, "mix": 2}
_TORCH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the library also allows '-' and '.'; torch does not

_lock = _fork.lock(sys.modules[__name__], "_lock")
_kernels = {}  # name -> CustomKernel: keeps libraries, descriptors and user data alive


def include_dir():
    """The directory holding superkernel.h: the package's own copy (an
    installed wheel) or the source tree's include/. None if neither."""
    _lib.lib()
    here = os.path.dirname(os.path.abspath(__file__))
    build_lib = os.path.dirname(os.path.abspath(_lib.path))  # <repo>/build/lib in a source tree
    for candidate in (
        os.path.join(here, "include"),
        os.path.join(os.path.dirname(os.path.dirname(here)), "include"),
        os.path.join(os.path.dirname(os.path.dirname(build_lib)), "include"),
    ):
        if os.path.isfile(os.path.join(candidate, "superkernel.h")):
            return candidate
    return None


def _make_superkernel_global():
    # Promote the already loaded library to RTLD_GLOBAL so a user library's
    # undefined sk_* symbols bind to this very copy (one process state).
    _lib.lib()
    ctypes.CDLL(_lib.path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL | os.RTLD_NOW)


def load_library(library):
    """A ctypes.CDLL of the user's library: a path, or a CDLL as is."""
    if isinstance(library, ctypes.CDLL):
        return library  # opened by the caller: its sk_* symbols must already be bound (see the module doc)
    if not isinstance(library, (str, bytes, os.PathLike)):
        raise TypeError(f"superkernel.custom: library: expected a path or a ctypes.CDLL, got {type(library).__name__}")
    path = os.fspath(library)
    if isinstance(path, bytes):
        path = path.decode()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"superkernel.custom: library {path!r}: no such file")
    _make_superkernel_global()
    try:
        return ctypes.CDLL(os.path.abspath(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise OSError(f"superkernel.custom: cannot load library {path!r}: {e}") from None


def _symbol(handle, symbol, what, kernel):
    if not isinstance(symbol, str) or not symbol:
        raise TypeError(f"superkernel.custom: kernel {kernel!r}: {what}: expected a symbol name, got {symbol!r}")
    _lib.encode(symbol, f"superkernel.custom: kernel {kernel!r}: {what}")  # dlsym would stop at a NUL
    try:
        fn = getattr(handle, symbol)
    except AttributeError:
        raise NotFoundError(
            f"superkernel.custom: kernel {kernel!r}: {what} symbol {symbol!r} not found in {handle._name}", "NOT_FOUND"
        ) from None
    return ctypes.cast(fn, ctypes.c_void_p).value


def _kernel_type(value, kernel):
    if isinstance(value, str) and value.lower() in KERNEL_TYPES:
        return KERNEL_TYPES[value.lower()]
    if isinstance(value, int) and not isinstance(value, bool) and value in KERNEL_TYPES.values():
        return value
    raise InvalidArgumentError(
        f"superkernel.custom: kernel {kernel!r}: type {value!r}: expected one of {list(KERNEL_TYPES)}",
        "INVALID_ARGUMENT",
    )


def _user_pointer(user, kernel):
    """(address, object to keep alive) of the user pointer."""
    if user is None:
        return None, None
    if isinstance(user, int) and not isinstance(user, bool):
        return _lib.as_int(user, f"superkernel.custom: kernel {kernel!r}: user (an address)", 0, _lib.SIZE_MAX), None
    if isinstance(user, ctypes.c_void_p):
        return user.value, user
    try:
        return ctypes.addressof(user), user  # a ctypes object (c_float, an array, a Structure)
    except TypeError:
        raise TypeError(
            f"superkernel.custom: kernel {kernel!r}: user: expected a ctypes object or an address, "
            f"got {type(user).__name__}"
        ) from None


class CustomKernel:
    """A registered kernel. `op` is torch.ops.superkernel.<name> (None
    without torch); calling the kernel runs that op on tensors: k(a, b)
    returns the one output, or a tuple of them."""

    def __init__(self, name, library, desc, handle, user_keep):
        self.name = name
        self.library = library
        self.block_count = desc.block_count
        self.n_params = desc.n_params
        self._desc = desc
        self._user_keep = user_keep
        self.handle = handle  # the sk_kernel*, valid until the process exits
        self.op = None

    def __call__(self, *tensors):
        if self.op is None:
            raise RuntimeError(f"superkernel.custom: kernel {self.name!r} has no torch op (torch not importable)")
        outs = self.op(list(tensors))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self):
        return f"CustomKernel({self.name!r}, block_count={self.block_count}, n_params={self.n_params})"


def _torch_namespace_has(name):
    try:
        import torch
    except ImportError:
        return False
    from . import torch_ops  # noqa: F401  (defines the namespace)

    return hasattr(torch.ops.superkernel, name)


def register_kernel(
    library,
    entry,
    name,
    *,
    n_params,
    type="vector",
    block_count=1,
    workspace_bytes=0,
    infer=None,
    barriers_per_block=0,
    unfusable=False,
    user=None,
    torch_op=True,
):
    """Registers the C function `entry` of `library` as kernel `name`
    (sk_kernel_register) and, with torch importable and torch_op set,
    defines torch.ops.superkernel.<name>. Returns a CustomKernel. The
    library's code is trusted: it runs in this process, and a crash in it
    ends the interpreter (see the module's docstring).

    library     path of the user's shared library, or a ctypes.CDLL of it
    entry       symbol of the block function (sk_kernel_fn)
    name        the op type (letters, digits, '_', '-', '.'; unique)
    n_params    argument count; in a graph, inputs + outputs
    type        "vector", "cube" or "mix"
    block_count blocks per launch; workspace_bytes scratch per core
    infer       symbol of the infer function in the same library, or None
                (one output shaped like the first input)
    barriers_per_block, unfusable: as sk_kernel_desc
    user        the user pointer: a ctypes object (kept alive) or an address

    Errors: a missing symbol (NotFoundError naming it), a bad field (the
    library's message, naming the kernel and the field), a name already
    used by a kernel, an op or a torch op (InvalidArgumentError); a failed
    registration leaves the process as it was."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"superkernel.custom: name: expected a non-empty str, got {name!r}")
    handle = load_library(library)
    kind = _kernel_type(type, name)
    entry_addr = _symbol(handle, entry, "entry", name)
    infer_addr = None if infer is None else _symbol(handle, infer, "infer", name)
    user_addr, user_keep = _user_pointer(user, name)
    with _lock:
        if name in _kernels:
            raise InvalidArgumentError(
                f"superkernel.custom: kernel {name!r} is already registered in this process", "INVALID_ARGUMENT"
            )
        if torch_op and not _TORCH_NAME.fullmatch(name):
            raise InvalidArgumentError(
                f"superkernel.custom: kernel {name!r}: not a torch op name (letters, digits and '_', not starting "
                "with a digit); rename it, or pass torch_op=False to use it in graphs only",
                "INVALID_ARGUMENT",
            )
        if torch_op and _torch_namespace_has(name):
            raise InvalidArgumentError(
                f"superkernel.custom: kernel {name!r}: torch.ops.superkernel.{name} already exists", "INVALID_ARGUMENT"
            )
        desc = _lib.KernelDesc(
            ctypes.sizeof(_lib.KernelDesc),
            _lib.encode(name, "superkernel.custom: name"),
            entry_addr,
            kind,
            _lib.as_int(block_count, f"kernel {name!r}: block_count"),
            _lib.as_int(workspace_bytes, f"kernel {name!r}: workspace_bytes", 0),
            _lib.as_int(n_params, f"kernel {name!r}: n_params", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
            _lib.as_int(barriers_per_block, f"kernel {name!r}: barriers_per_block", -_lib.CINT_MAX - 1, _lib.CINT_MAX),
            1 if unfusable else 0,
            infer_addr,
            user_addr,
        )
        out = ctypes.c_void_p()
        _lib.check(_lib.lib().sk_kernel_register(ctypes.byref(desc), ctypes.byref(out)))
        kernel = CustomKernel(name, handle, desc, out, user_keep)
        _kernels[name] = kernel
    if torch_op:
        try:
            from . import torch_ops
        except ImportError:
            torch_ops = None
        if torch_ops is not None:
            import torch

            torch_ops.register(name)
            kernel.op = getattr(torch.ops.superkernel, name)
    return kernel


def registered():
    """{name: CustomKernel} of the kernels registered through this module."""
    with _lock:
        return dict(_kernels)
