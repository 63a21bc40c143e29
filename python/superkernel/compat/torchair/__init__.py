"""torchair's front end on superkernel: a torchair script runs on the CPU
by changing only its imports (docs/python.md lists the lines):

    import torchair as tng                                  ->  from superkernel.compat import torchair as tng
    from torchair.configs.compiler_config import CompilerConfig
        ->  from superkernel.compat.torchair.configs.compiler_config import CompilerConfig

    tng.scope.super_kernel("sk1") / npu_stream_switch / npu_wait_tensor / limit_core_num / ...
    tng.get_npu_backend(compiler_config=CompilerConfig())   the superkernel torch.compile backend
"""

import warnings

from . import scope
from .configs.compiler_config import CompilerConfig

__all__ = ["scope", "get_npu_backend", "get_compiler", "CompilerConfig"]


def get_npu_backend(*, compiler_config=None, custom_decompositions=None):
    """torchair.get_npu_backend: the superkernel backend configured by
    compiler_config.superkernel (a superkernel.CompilerConfig); torchair's
    other settings are accepted (those without a CPU meaning with one
    warning naming them)."""
    from superkernel.backend import get_backend

    config = compiler_config if compiler_config is not None else CompilerConfig()
    if not isinstance(config, CompilerConfig):
        raise TypeError(
            f"get_npu_backend: compiler_config must be a superkernel.compat.torchair CompilerConfig, got "
            f"{type(config).__name__}"
        )
    if custom_decompositions:
        warnings.warn("superkernel.compat.torchair: custom_decompositions are ignored", stacklevel=2)
    return get_backend(config.to_superkernel(stacklevel=3))


def get_compiler(compiler_config=None):
    """torchair.get_compiler: the same backend (it compiles ATen graphs)."""
    return get_npu_backend(compiler_config=compiler_config)
