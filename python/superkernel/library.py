"""The C library itself, as the package sees it: its version and path, the
int8 quantization parameters it packs, its JIT cache and its log level."""

from . import _lib


def version():
    """The loaded library's version ("0.1.0")."""
    return _lib.lib().sk_version().decode()


def library_path():
    """The path of the shared library in use."""
    _lib.lib()
    return _lib.path


def trans_quant_param(scale, offset=None):
    """sk_trans_quant_param on numpy float32 arrays: the int64 packed form."""
    import ctypes

    import numpy as np

    scale = np.ascontiguousarray(scale, dtype=np.float32).reshape(-1)
    out = np.empty(scale.shape, dtype=np.int64)
    off_ptr = None
    if offset is not None:
        offset = np.ascontiguousarray(offset, dtype=np.float32).reshape(-1)
        if offset.shape != scale.shape:
            raise ValueError(f"trans_quant_param: offset has {offset.size} values, scale {scale.size}")
        off_ptr = offset.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    _lib.check(
        _lib.lib().sk_trans_quant_param(
            scale.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            off_ptr,
            scale.size,
            out.ctypes.data_as(ctypes.POINTER(_lib.int64)),
        )
    )
    return out


def jit_cache_path():
    import ctypes

    buf = ctypes.create_string_buffer(4096)
    _lib.check(_lib.lib().sk_jit_cache_path(buf, len(buf)))
    return buf.value.decode()


def jit_cache_clear():
    """Deletes every JIT cache entry; returns how many files went."""
    import ctypes

    n = ctypes.c_size_t()
    _lib.check(_lib.lib().sk_jit_cache_clear(ctypes.byref(n)))
    return n.value


_LOG_LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3, "off": 4}


def set_log_level(level):
    """"debug", "info", "warn", "error" or "off"."""
    if not isinstance(level, str) or level not in _LOG_LEVELS:
        raise ValueError(f"set_log_level: {level!r}; expected one of {list(_LOG_LEVELS)}")
    _lib.lib().sk_set_log_level(_LOG_LEVELS[level])
