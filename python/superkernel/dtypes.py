"""Data types: the library's sk_dtype, and its numpy and torch equivalents."""

import enum
import sys


class DType(enum.IntEnum):
    """sk_dtype (superkernel.h); str() is the library's name ("fp16")."""

    FP32 = 1
    FP16 = 2
    BF16 = 3
    INT8 = 4
    INT32 = 5
    INT64 = 6
    BOOL = 7
    UINT8 = 8

    def __str__(self):
        return self.name.lower()

    @property
    def itemsize(self):
        from . import _lib

        return _lib.lib().sk_dtype_size(int(self))



# numpy's names (numpy has no bfloat16 of its own: ml_dtypes' is accepted by name).
_NUMPY_NAMES = {
    "float32": DType.FP32,
    "float16": DType.FP16,
    "bfloat16": DType.BF16,
    "int8": DType.INT8,
    "int32": DType.INT32,
    "int64": DType.INT64,
    "bool": DType.BOOL,
    "uint8": DType.UINT8,
}
_ALIASES = {"float": DType.FP32, "half": DType.FP16, "long": DType.INT64, "int": DType.INT32}


def _torch():
    return sys.modules.get("torch")


def to_dtype(obj):
    """A DType from a DType, its name ("fp16"), a numpy dtype or a torch dtype.
    Raises TypeError naming what was given."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        try:
            return DType(obj)
        except ValueError:
            raise TypeError(f"superkernel: {obj} is not an sk_dtype value (1..8)") from None
    if isinstance(obj, str):
        key = obj.lower()
        for table in ({str(d): d for d in DType}, _NUMPY_NAMES, _ALIASES):
            if key in table:
                return table[key]
        raise TypeError(f"superkernel: unknown dtype name {obj!r}; expected one of {[str(d) for d in DType]}")
    torch = _torch()
    if torch is not None and isinstance(obj, torch.dtype):
        found = torch_to_dtype().get(obj)
        if found is None:
            raise TypeError(f"superkernel: torch dtype {obj} has no superkernel equivalent")
        return found
    name = getattr(obj, "name", None)  # a numpy dtype, or a numpy scalar type
    if name is None and isinstance(obj, type):
        name = obj.__name__
    if name in _NUMPY_NAMES:
        return _NUMPY_NAMES[name]
    raise TypeError(f"superkernel: {obj!r} is not a dtype superkernel supports")


_TORCH_MAP = None


def torch_to_dtype():
    """{torch.dtype: DType} (torch must be imported)."""
    global _TORCH_MAP
    if _TORCH_MAP is None:
        import torch

        _TORCH_MAP = {
            torch.float32: DType.FP32,
            torch.float16: DType.FP16,
            torch.bfloat16: DType.BF16,
            torch.int8: DType.INT8,
            torch.int32: DType.INT32,
            torch.int64: DType.INT64,
            torch.bool: DType.BOOL,
            torch.uint8: DType.UINT8,
        }
    return _TORCH_MAP


def to_torch(dtype):
    """The torch dtype of a DType."""
    dtype = to_dtype(dtype)
    for t, d in torch_to_dtype().items():
        if d == dtype:
            return t
    raise TypeError(f"superkernel: {dtype} has no torch dtype")


def to_numpy(dtype):
    """The numpy dtype of a DType (bf16 needs ml_dtypes)."""
    import numpy as np

    dtype = to_dtype(dtype)
    if dtype == DType.BF16:
        try:
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            raise TypeError("superkernel: numpy has no bfloat16; use torch tensors or install ml_dtypes") from None
    name = {v: k for k, v in _NUMPY_NAMES.items()}[dtype]
    return np.dtype(name)
