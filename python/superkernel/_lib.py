"""The shared library and its C declarations (ctypes).

Only this module touches ctypes prototypes. Every call that returns an
sk_status goes through `check`, which turns a failure into an exception
carrying the library's message (sk_last_error is per thread and read at once,
on the thread that made the call). ctypes releases the GIL for the duration
of every foreign call, so runs of the library do not block other Python
threads.
"""

import ctypes
import numbers
import operator
import os
import sys

from . import _fork, errors

_C = ctypes
size_t = _C.c_size_t
int64 = _C.c_int64
c_int = _C.c_int
c_char_p = _C.c_char_p
c_void_p = _C.c_void_p

SK_MAX_RANK = 8


def _find_library():
    """(path, where it came from) of the shared library: $SUPERKERNEL_LIBRARY,
    else the copy installed in this package (a wheel), else the source
    tree's build (python/superkernel -> <repo>/build/lib)."""
    env = os.environ.get("SUPERKERNEL_LIBRARY")
    if env:
        origin = f"$SUPERKERNEL_LIBRARY={env!r}"
        # A relative path is the user's, from the working directory: dlopen
        # would look a name without '/' up in the library search path instead.
        path = os.path.abspath(env)
        if not os.path.exists(path):
            raise ImportError(f"superkernel: {origin}: no such file (looked for {path})")
        if os.path.isdir(path):
            raise ImportError(f"superkernel: {origin} is a directory; set it to the file libsuperkernel.so")
        if not os.path.isfile(path):
            raise ImportError(f"superkernel: {origin} is not a regular file; set it to the file libsuperkernel.so")
        return path, origin
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(here, "lib", "libsuperkernel.so"),
        os.path.join(os.path.dirname(os.path.dirname(here)), "build", "lib", "libsuperkernel.so"),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path, f"the library {path!r}"
    raise ImportError(
        "superkernel: the shared library libsuperkernel.so was not found; looked in "
        + ", ".join(candidates)
        + ". Install the package with `pip install .`, build the source tree with `make`, "
        "or set SUPERKERNEL_LIBRARY to the library's path."
    )


def _open(path, origin):
    """The CDLL of path, every prototype declared; ImportError saying what
    is wrong with the file (not a shared library, another library, an older
    superkernel) instead of ctypes' OSError / AttributeError."""
    try:
        handle = _C.CDLL(path)
    except OSError as e:
        raise ImportError(f"superkernel: {origin} cannot be loaded as a shared library: {e}") from None
    missing = [name for name in _PROTOTYPES if not hasattr(handle, name)]
    if "sk_version" in missing:
        raise ImportError(
            f"superkernel: {origin} is not the superkernel library (it has no sk_version); "
            "set SUPERKERNEL_LIBRARY to libsuperkernel.so, or unset it"
        )
    if missing:
        version = handle.sk_version
        version.restype = c_char_p
        raise ImportError(
            f"superkernel: {origin} is superkernel {version().decode(errors='replace')} without "
            f"{', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}: older than this package; "
            "rebuild it (make) or point SUPERKERNEL_LIBRARY at a current build"
        )
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(handle, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return handle


# ---- structs (superkernel.h, same order and types) -------------------------


class TeamConfig(_C.Structure):
    _fields_ = [("struct_size", size_t), ("num_cores", c_int), ("pin_threads", c_int), ("cpus", _C.POINTER(c_int)),
                ("num_cpus", c_int)]


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
        ("numerics", c_int),
    ]


# superkernel_model.h's structs
MODEL_MAX_RANK = 8


class ModelTensor(_C.Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int), ("shape", int64 * MODEL_MAX_RANK), ("data", c_void_p)]


MODEL_WEIGHT_FN = _C.CFUNCTYPE(c_int, c_void_p, c_char_p, _C.POINTER(ModelTensor))


class ModelConfig(_C.Structure):
    _fields_ = [("struct_size", size_t), ("config_json", c_char_p), ("weight", MODEL_WEIGHT_FN),
                ("weight_user", c_void_p), ("max_tokens", int64), ("max_context", int64), ("team", c_void_p),
                ("executor", c_int), ("options", c_char_p), ("profile", c_int), ("quantize", c_char_p),
                ("numerics", c_int)]


class ModelInfo(_C.Structure):
    _fields_ = [("family", c_char_p), ("about", c_char_p), ("dtype", c_int), ("vocab", int64), ("hidden", int64),
                ("layers", int64), ("max_tokens", int64), ("max_context", int64), ("weight_bytes", size_t),
                ("cache_bytes", size_t), ("experts", int64), ("experts_per_token", int64)]


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
    ] + [("max_tokens", int64), ("n_token_buckets", size_t), ("numerics", c_int)]


SK_OP_TYPE_MAX = 64


class OpStatistic(_C.Structure):
    _fields_ = [
        ("op_type", _C.c_char * SK_OP_TYPE_MAX),
        ("core_type", _C.c_char * 16),
        ("count", int64),
        ("total_us", _C.c_double),
        ("min_us", _C.c_double),
        ("max_us", _C.c_double),
    ]


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
    OpStatistic: "sk_op_statistic",
    KernelDesc: "sk_kernel_desc",
    ModelTensor: "sk_model_tensor",
    ModelConfig: "sk_model_config",
    ModelInfo: "sk_model_info",
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
    "sk_numerics_name": (c_char_p, [c_int]),
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
    "sk_program_op_statistics": (_STATUS, [c_void_p, P(OpStatistic), size_t, P(size_t)]),
    "sk_write_op_statistics": (_STATUS, [c_char_p, P(OpStatistic), size_t]),
    "sk_program_num_inputs": (size_t, [c_void_p]),
    "sk_program_num_outputs": (size_t, [c_void_p]),
    "sk_program_input_info": (_STATUS, [c_void_p, size_t, P(c_char_p), P(c_int), P(c_int), P(int64)]),
    "sk_program_output_info": (_STATUS, [c_void_p, size_t, P(c_char_p), P(c_int), P(c_int), P(int64)]),
    "sk_program_get_stats": (_STATUS, [c_void_p, P(ProgramStats)]),
    "sk_kernel_register": (_STATUS, [P(KernelDesc), P(c_void_p)]),
    "sk_model_create": (_STATUS, [P(ModelConfig), P(c_void_p)]),
    "sk_model_destroy": (None, [c_void_p]),
    "sk_checkpoint_open": (_STATUS, [c_char_p, P(c_void_p)]),
    "sk_checkpoint_close": (None, [c_void_p]),
    "sk_model_create_from_checkpoint": (_STATUS, [c_void_p, P(ModelConfig), P(c_void_p)]),
    "sk_model_families": (c_char_p, []),
    "sk_model_weight_error": (None, [c_char_p]),
    "sk_model_write_profile": (_STATUS, [c_void_p, c_char_p]),
    "sk_model_get_info": (_STATUS, [c_void_p, P(ModelInfo)]),
    "sk_model_seq_create": (_STATUS, [c_void_p, P(c_void_p)]),
    "sk_model_seq_destroy": (None, [c_void_p]),
    "sk_model_seq_length": (int64, [c_void_p]),
    "sk_model_seq_truncate": (_STATUS, [c_void_p, int64]),
    "sk_model_forward": (_STATUS, [c_void_p, c_void_p, P(_C.c_int32), int64, c_void_p, int64]),
    "sk_moe_block_create": (_STATUS, [P(ModelConfig), P(c_void_p)]),
    "sk_moe_block_destroy": (None, [c_void_p]),
    "sk_moe_block_run": (_STATUS, [c_void_p, c_void_p, c_void_p, c_void_p, int64]),
    "sk_moe_block_about": (c_char_p, [c_void_p]),
}

_lock = _fork.lock(sys.modules[__name__], "_lock")
_lib = None
path = None


def lib():
    """The loaded library, with every prototype declared (loaded once)."""
    global _lib, path
    if _lib is None:
        with _lock:
            if _lib is None:
                found, origin = _find_library()
                handle = _open(found, origin)
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


# ---- values crossing into C ------------------------------------------------
# Every int and string handed to the library goes through as_int / encode
# first: ctypes converts silently (an int past the C type's range wraps,
# a str is cut at its first NUL), so the C side would see another value
# than the caller gave and accept it. Here each is checked against the C
# type it becomes, with an error naming the argument.

CINT_MIN, CINT_MAX = -(2**31), 2**31 - 1  # int
UINT32_MAX = 2**32 - 1  # uint32_t: sk_value, sk_event
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # int64_t: dims, attributes, watchdog_ms
SIZE_MAX = 2 ** (8 * _C.sizeof(size_t)) - 1  # size_t
# The most cores a team has (SK_TEAM_MAX_CORES, src/runtime/team.h; not in
# the public header): CompilerConfig checks num_threads against it at
# construction, and test_hostile_inputs checks that sk_team_create agrees.
SK_TEAM_MAX_CORES = 1024


def as_int(value, what, lo=INT64_MIN, hi=INT64_MAX):
    """value as a Python int in [lo, hi] (default: int64_t's range):
    TypeError naming what for a non-integer (a float, even 2.0, a str,
    a bool, as torch's own int arguments refuse them; numpy's integers are
    ints), ValueError naming what for one out of range."""
    if type(value) is not int:
        # __index__: Python's "is an integer" (numpy's ints, a one-element
        # integer tensor), which a float lacks; a bool has it and is refused
        try:
            if isinstance(value, bool):
                raise TypeError
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{what}: expected an int, got {value!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{what}: {value} is out of range [{lo}, {hi}]")
    return value


def as_cint(value, what, lo=CINT_MIN, hi=CINT_MAX):
    """as_int for a C int (a narrower [lo, hi] when the argument has one)."""
    return as_int(value, what, lo, hi)


def as_float(value, what):
    """value as a Python float (a C double): any real number, numpy's
    float32 / int64 scalars included, not a bool or a str (TypeError
    naming what)."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: expected a float, got {value!r}")
    return float(value)


def encode(text, what="string"):
    """text (a str, or bytes as they are) as a C string, None as NULL:
    TypeError naming what for anything else, ValueError for a NUL inside
    (C would read the string only up to it) or a str UTF-8 cannot hold."""
    if text is None:
        return None
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{what}: {text!r} cannot be encoded as UTF-8 ({e.reason})") from None
    elif isinstance(text, bytes):
        data = text
    else:
        raise TypeError(f"{what}: expected a str, got {type(text).__name__} {text!r}")
    if b"\0" in data:
        raise ValueError(
            f"{what}: {text!r} contains a NUL character (at byte {data.index(0)}); C strings end at the first NUL"
        )
    return data
