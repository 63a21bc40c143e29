"""torchair.scope on superkernel: the same functions and argument names
(torchair/scope/__init__.py), built on superkernel.scope's markers."""

from superkernel import scope as _sk

__all__ = ["super_kernel", "npu_stream_switch", "npu_wait_tensor", "limit_core_num", "op_never_timeout", "data_dump"]

npu_stream_switch = _sk.npu_stream_switch
npu_wait_tensor = _sk.npu_wait_tensor
limit_core_num = _sk.limit_core_num
op_never_timeout = _sk.op_never_timeout
data_dump = _sk.data_dump


def super_kernel(scope, options=""):
    """torchair.scope.super_kernel(scope, options=''): the ops inside
    become one super kernel (superkernel.scope.super_kernel)."""
    return _sk.super_kernel(scope, options)
