"""The shared library and its C declarations (ctypes).

Only this module touches ctypes prototypes. Every call that returns an
sk_status goes through `check`, which turns a failure into an exception
carrying the library's message (sk_last_error is per thread and read at once,
on the thread that made the call). ctypes releases the GIL for the duration
of every foreign call, so runs of the library do not block other Python
threads.
"""

import ctypes
import os
import threading

from . import errors

_C = ctypes
size_t = _C.c_size_t
int64 = _C.c_int64
c_int = _C.c_int
c_char_p = _C.c_char_p
c_void_p = _C.c_void_p

SK_MAX_RANK = 8


def _find_library():
    """The shared library: $SUPERKERNEL_LIBRARY, else the copy installed in
    this package (a wheel), else the source tree's build (python/superkernel
    -> <repo>/build/lib)."""
    env = os.environ.get("SUPERKERNEL_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise ImportError(f"superkernel: $SUPERKERNEL_LIBRARY={env!r} is not a file")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(here, "lib", "libsuperkernel.so"),
        os.path.join(os.path.dirname(os.path.dirname(here)), "build", "lib", "libsuperkernel.so"),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise ImportError(
        "superkernel: the shared library libsuperkernel.so was not found; looked in "
        + ", ".join(candidates)
        + ". Install the package with `pip install .`, build the source tree with `make`, "
        "or set SUPERKERNEL_LIBRARY to the library's path."
    )


# ---- structs (superkernel.h, same order and types) -------------------------


class TeamConfig(_C.Structure):
    _fields_ = [("struct_size", size_t), ("num_cores", c_int), ("pin_threads", c_int)]


class OpInput(_C.Structure):
    _fields_ = [("name", c_char_p), ("values", _C.POINTER(_C.c_uint32)), ("count", size_t)]


class Attr(_C.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("kind", c_int),
        ("i", int64),
        ("f", _C.c_double),
        ("ints", _C.POINTER(int64)),
        ("n_ints", size_t),
    ]


class OpDesc(_C.Structure):
    _fields_ = [
        ("struct_size", size_t),
        ("op", c_char_p),
        ("name", c_char_p),
        ("inputs", _C.POINTER(OpInput)),
        ("n_inputs", size_t),
        ("attrs", _C.POINTER(Attr)),
        ("n_attrs", size_t),
    ]


class SlotInfo(_C.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("is_list", c_int),
        ("is_optional", c_int),
        ("doc", c_char_p),
        ("dtypes", _C.c_uint),
        ("min_rank", c_int),
        ("max_rank", c_int),
        ("same_dtype_as", c_int),
    ]


class AttrInfo(_C.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("kind", c_int),
        ("is_required", c_int),
        ("has_default", c_int),
        ("default_int", int64),
        ("default_float", _C.c_double),
        ("has_range", c_int),
        ("min", int64),
        ("max", int64),
        ("doc", c_char_p),
    ]


class OutputInfo(_C.Structure):
    _fields_ = [("name", c_char_p), ("is_list", c_int), ("doc", c_char_p)]


class OpSchema(_C.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("kernel_type", c_int),
        ("is_view", c_int),
        ("inputs", _C.POINTER(SlotInfo)),
        ("n_inputs", size_t),
        ("attrs", _C.POINTER(AttrInfo)),
        ("n_attrs", size_t),
        ("outputs", _C.POINTER(OutputInfo)),
        ("n_outputs", size_t),
        ("doc", c_char_p),
    ]


class TensorMeta(_C.Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int), ("shape", int64 * SK_MAX_RANK)]


ON_JIT = _C.CFUNCTYPE(None, c_char_p, size_t, size_t, c_void_p)


class CompileConfig(_C.Structure):
    _fields_ = [
        ("struct_size", size_t),
        ("team", c_void_p),
        ("executor", c_int),
        ("default_options", c_char_p),
        ("profile", c_int),
        ("on_jit", ON_JIT),
        ("on_jit_user", c_void_p),
        ("watchdog_ms", int64),
    ]


class Buffer(_C.Structure):
    _fields_ = [("name", c_char_p), ("data", c_void_p), ("bytes", size_t)]


class ProgramStats(_C.Structure):
    _fields_ = [("struct_size", size_t), ("executor", c_int)] + [
        (name, size_t)
        for name in (
            "n_inputs",
            "n_outputs",
            "n_constants",
            "constant_bytes",
            "packed_bytes",
            "n_steps",
            "n_super_kernels",
            "n_jit_compiled",
            "arena_bytes",
            "workspace_bytes",
        )
    ] + [("max_tokens", int64), ("n_token_buckets", size_t)]


class KernelDesc(_C.Structure):
    _fields_ = [
        ("struct_size", size_t),
        ("name", c_char_p),
        ("entry", c_void_p),  # an sk_kernel_fn: a C function's address
        ("type", c_int),
        ("block_count", int64),
        ("workspace_bytes", size_t),
        ("n_params", c_int),
        ("barriers_per_block", c_int),
        ("unfusable", c_int),
        ("infer", c_void_p),  # a C infer function's address, or None
        ("user", c_void_p),
    ]


# Each mirror and the C struct it mirrors: tests/python/test_ctypes_layout.py
# compiles the header's offsetof / sizeof of every field listed here and
# compares them with ctypes', so a field added in C and not here (or moved,
# or retyped to another size) fails the suite.
C_STRUCTS = {
    TeamConfig: "sk_team_config",
    OpInput: "sk_op_input",
    Attr: "sk_attr",
    OpDesc: "sk_op_desc",
    SlotInfo: "sk_op_slot_info",
    AttrInfo: "sk_op_attr_info",
    OutputInfo: "sk_op_output_info",
    OpSchema: "sk_op_schema",
    TensorMeta: "sk_tensor_meta",
    CompileConfig: "sk_compile_config",
    Buffer: "sk_buffer",
    ProgramStats: "sk_program_stats",
    KernelDesc: "sk_kernel_desc",
}


# ---- prototypes -------------------------------------------------------------

P = _C.POINTER
_STATUS = c_int  # every sk_status function is declared with this restype, then checked

_PROTOTYPES = {
    # name: (restype, argtypes)
    "sk_version": (c_char_p, []),
    "sk_version_number": (c_int, []),
    "sk_status_string": (c_char_p, [c_int]),
    "sk_last_error": (c_char_p, []),
    "sk_set_log_level": (None, [c_int]),
    "sk_get_log_level": (c_int, []),
    "sk_dtype_name": (c_char_p, [c_int]),
    "sk_dtype_size": (size_t, [c_int]),
    "sk_trans_quant_param": (_STATUS, [P(_C.c_float), P(_C.c_float), size_t, P(int64)]),
    "sk_team_create": (_STATUS, [P(TeamConfig), P(c_void_p)]),
    "sk_team_destroy": (None, [c_void_p]),
    "sk_team_num_cores": (c_int, [c_void_p]),
    "sk_graph_create": (_STATUS, [P(c_void_p)]),
    "sk_graph_destroy": (None, [c_void_p]),
    "sk_graph_add_input": (_STATUS, [c_void_p, c_char_p, c_int, c_int, P(int64), P(_C.c_uint32)]),
    "sk_graph_set_max_tokens": (_STATUS, [c_void_p, int64]),
    "sk_program_max_tokens": (int64, [c_void_p]),
    "sk_graph_add_constant": (
        _STATUS,
        [c_void_p, c_char_p, c_int, c_int, P(int64), c_void_p, c_int, P(_C.c_uint32)],
    ),
    "sk_graph_add_op": (_STATUS, [c_void_p, P(OpDesc), P(_C.c_uint32), size_t, P(size_t)]),
    "sk_graph_mark_output": (_STATUS, [c_void_p, _C.c_uint32, c_char_p]),
    "sk_graph_begin_scope": (_STATUS, [c_void_p, c_char_p, c_char_p]),
    "sk_graph_end_scope": (_STATUS, [c_void_p]),
    "sk_graph_set_stream": (_STATUS, [c_void_p, c_int]),
    "sk_graph_record_event": (_STATUS, [c_void_p, P(_C.c_uint32)]),
    "sk_graph_wait_event": (_STATUS, [c_void_p, _C.c_uint32]),
    "sk_graph_value_info": (_STATUS, [c_void_p, _C.c_uint32, P(c_int), P(c_int), P(int64)]),
    "sk_op_count": (size_t, []),
    "sk_op_info": (_STATUS, [size_t, P(OpSchema)]),
    "sk_op_info_by_name": (_STATUS, [c_char_p, P(OpSchema)]),
    "sk_op_infer": (_STATUS, [P(OpDesc), P(TensorMeta), size_t, P(TensorMeta), size_t, P(size_t)]),
    "sk_op_supported": (_STATUS, [P(OpDesc), P(TensorMeta), size_t]),
    "sk_options_validate": (_STATUS, [c_char_p]),
    "sk_options_render": (_STATUS, [c_char_p, c_char_p, size_t, P(size_t)]),
    "sk_options_render_layered": (_STATUS, [c_char_p, c_char_p, c_char_p, size_t, P(size_t)]),
    "sk_executor_name": (c_char_p, [c_int]),
    "sk_executor_parse": (_STATUS, [c_char_p, P(c_int)]),
    "sk_compile": (_STATUS, [c_void_p, P(CompileConfig), P(c_void_p)]),
    "sk_program_destroy": (None, [c_void_p]),
    "sk_program_run": (_STATUS, [c_void_p, c_void_p, P(Buffer), size_t, P(Buffer), size_t]),
    "sk_program_run_by_index": (_STATUS, [c_void_p, c_void_p, P(Buffer), size_t, P(Buffer), size_t]),
    "sk_program_find": (_STATUS, [c_void_p, c_int, c_char_p, P(size_t)]),
    "sk_program_bind": (_STATUS, [c_void_p, c_int, size_t, c_void_p, size_t]),
    "sk_program_unbind_all": (None, [c_void_p]),
    "sk_program_run_bound": (_STATUS, [c_void_p, c_void_p]),
    "sk_run_context_create": (_STATUS, [c_void_p, P(c_void_p)]),
    "sk_run_context_destroy": (None, [c_void_p]),
    "sk_run_context_bind": (_STATUS, [c_void_p, c_int, size_t, c_void_p, size_t]),
    "sk_run_context_run": (_STATUS, [c_void_p, c_void_p]),
    "sk_program_describe": (_STATUS, [c_void_p, P(c_void_p)]),
    "sk_program_jit_source": (_STATUS, [c_void_p, c_char_p, P(c_void_p)]),
    "sk_free": (None, [c_void_p]),
    "sk_jit_cache_path": (_STATUS, [c_char_p, size_t]),
    "sk_jit_cache_clear": (_STATUS, [P(size_t)]),
    "sk_program_write_profile": (_STATUS, [c_void_p, c_char_p]),
    "sk_program_reset_profile": (None, [c_void_p]),
    "sk_program_num_inputs": (size_t, [c_void_p]),
    "sk_program_num_outputs": (size_t, [c_void_p]),
    "sk_program_input_info": (_STATUS, [c_void_p, size_t, P(c_char_p), P(c_int), P(c_int), P(int64)]),
    "sk_program_output_info": (_STATUS, [c_void_p, size_t, P(c_char_p), P(c_int), P(c_int), P(int64)]),
    "sk_program_get_stats": (_STATUS, [c_void_p, P(ProgramStats)]),
    "sk_kernel_register": (_STATUS, [P(KernelDesc), P(c_void_p)]),
}

_lock = threading.Lock()
_lib = None
path = None


def lib():
    """The loaded library, with every prototype declared (loaded once)."""
    global _lib, path
    if _lib is None:
        with _lock:
            if _lib is None:
                found = _find_library()
                handle = _C.CDLL(found)
                for name, (restype, argtypes) in _PROTOTYPES.items():
                    fn = getattr(handle, name)
                    fn.restype = restype
                    fn.argtypes = argtypes
                path = found
                _lib = handle
    return _lib


def last_error():
    return (lib().sk_last_error() or b"").decode("utf-8", "replace")


def check(status, what=None):
    """Raises the exception for a failed sk_status, with the C message."""
    if status == 0:
        return
    message = last_error()
    if not message:
        message = lib().sk_status_string(status).decode()
    if what:
        message = f"{what}: {message}"
    raise errors.from_status(status, message)


def take_text(ptr):
    """A library-allocated C string as str; frees it."""
    try:
        return _C.string_at(ptr.value).decode("utf-8", "replace") if ptr.value else ""
    finally:
        lib().sk_free(ptr)


CINT_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def as_int(value, what, lo=INT64_MIN, hi=INT64_MAX):
    """value as a Python int in [lo, hi] (ctypes would silently truncate
    one out of range): TypeError for a non-integer (a float, a bool),
    ValueError naming what for one out of range."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what}: expected an int, got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"{what}: {value} is out of range [{lo}, {hi}]")
    return value


def encode(text):
    return None if text is None else str(text).encode("utf-8")
