"""Zero-copy buffers: numpy arrays and torch CPU tensors as (pointer, bytes).

The library reads and writes a buffer in place, so a buffer must be dense
and row-major (C-contiguous), on the CPU, of the dtype and shape the program
declares. Anything else is refused with an exception naming the buffer and
what was expected; nothing is copied behind the caller's back.
"""

import sys

from .dtypes import DType, to_dtype


def buffer_info(obj, what):
    """(data pointer, byte count, DType, shape) of a numpy array or torch
    tensor; raises TypeError / ValueError naming `what` when it cannot be
    handed to C as it is."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu":
            raise ValueError(f"{what}: tensor is on {obj.device}; superkernel runs on the CPU (use .cpu())")
        if obj.layout != torch.strided:
            raise ValueError(f"{what}: tensor layout {obj.layout} is not dense (torch.strided)")
        if not obj.is_contiguous():
            raise ValueError(
                f"{what}: tensor is not contiguous (strides {tuple(obj.stride())} for shape "
                f"{tuple(obj.shape)}); call .contiguous()"
            )
        if obj.is_conj() or obj.is_neg():
            raise ValueError(f"{what}: tensor has a lazy conj/neg bit; call .resolve_conj()/.resolve_neg()")
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
    if writable and not hasattr(obj, "data_ptr") and not obj.flags.writeable:
        raise ValueError(f"{what}: array is read-only")
    return ptr, nbytes
