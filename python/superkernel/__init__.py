"""superkernel: fuse scoped sequences of operators into super kernels run by
a persistent team of CPU cores.

The C library is the engine; this package binds it (ctypes) and translates:

- the low-level API, mirroring the C one: Graph, Team, Program, RunContext,
  op schemas (op_schema, op_infer), options (validate_options);
- with torch installed: the torch ops torch.ops.superkernel.*, the scopes
  superkernel.scope.super_kernel(...), and the torch.compile backend
  "superkernel" (get_backend, CompilerConfig).

numpy is enough for the low-level API; torch is imported only by the torch
parts (import superkernel.torch_ops, or use the backend).
"""

from . import _omp

_omp.prefer_passive()  # before torch loads its OpenMP runtime (_omp.py says why)

from . import _lib  # noqa: E402
from .dtypes import DType  # noqa: E402
from .errors import (
    InvalidArgumentError,
    InvalidAttributeError,
    InvalidDtypeError,
    InvalidShapeError,
    InvalidStateError,
    NotFoundError,
    SuperkernelError,
    UnsupportedError,
)
from .graph import Graph, Value
from .library import jit_cache_clear, jit_cache_path, library_path, set_log_level, trans_quant_param, version
from .program import EXECUTORS, IOInfo, Program, RunContext, Team
from .schema import op_infer, op_names, op_schema, op_supported, render_options, validate_options

FP32, FP16, BF16, INT8 = DType.FP32, DType.FP16, DType.BF16, DType.INT8
INT32, INT64, BOOL, UINT8 = DType.INT32, DType.INT64, DType.BOOL, DType.UINT8
__version__ = version()


def __getattr__(name):
    # The torch parts load on first use, so `import superkernel` needs no torch.
    if name in ("get_backend", "CompilerConfig", "write_profiles"):
        from . import backend

        return getattr(backend, name)
    if name in ("export", "ExportedModel"):
        from . import exported as _export

        return getattr(_export, name)
    if name in ("optimize", "OptimizedMoE"):
        from . import moe_optimize as _optimize

        return getattr(_optimize, name)
    if name in ("Model", "Sequence", "MoEBlock"):
        from . import model as _model

        return getattr(_model, name)
    if name in ("scope", "torch_ops", "compat", "custom"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'superkernel' has no attribute {name!r}")


# transformers' experts_implementation="superkernel" (hf_experts.py):
# registered as soon as transformers' experts module is imported, whether
# before or after this package; neither is imported here.
from . import hf_experts as _hf_experts  # noqa: E402

_hf_experts.install()


def _torch_imported():
    # Not while a module of this package imports torch itself: it imports
    # the torch parts it needs, and importing them from inside it would be
    # circular.
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + ".") and getattr(getattr(module, "__spec__", None), "_initializing", False):
            return
    from . import backend  # noqa: F401  (torch.ops.superkernel.*, the scopes, the backend)


# With torch imported, before or after this package, the torch ops
# torch.ops.superkernel.* and the torch.compile backend "superkernel" are
# registered (torch.compile(backend="superkernel") works after `import
# superkernel`); without torch, importing superkernel stays torch-free.
_hf_experts.after_import("torch", _torch_imported)
