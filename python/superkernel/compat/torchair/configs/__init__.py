"""torchair.configs on superkernel."""

from .compiler_config import CompilerConfig

__all__ = ["CompilerConfig"]
