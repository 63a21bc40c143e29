"""superkernel.compat.torchair: the config, get_npu_backend, the scopes, and
the seed script's body on a local torch_npu shim (the real
superkernel.compat.torch_npu is tested with the example in test_examples)."""

import os
import warnings

import pytest
import torch
from conftest import EXAMPLES, assert_bitwise, load_example

from superkernel.backend import Backend
from superkernel.compat import torchair as tng
from superkernel.compat.torchair.configs.compiler_config import CompilerConfig

sk = torch.ops.superkernel


def test_config_accepts_torchair_sections():
    config = CompilerConfig()
    config.debug.graph_dump.type = "pbtxt"
    config.experimental_config.frozen_parameter = True
    config.experimental_config.tiling_schedule_optimize = True
    config.mode = "max-autotune"
    config.superkernel.executor = "interp"
    assert config.ignored_settings() == [
        "debug.graph_dump.type='pbtxt'",
        "experimental_config.tiling_schedule_optimize=True",
    ]
    with pytest.warns(UserWarning, match="without effect on the CPU: debug.graph_dump.type='pbtxt', experimental"):
        backend = tng.get_npu_backend(compiler_config=config)
    assert isinstance(backend, Backend) and backend.config.executor == "interp"


def test_default_config_warns_about_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backend = tng.get_npu_backend(compiler_config=CompilerConfig())
        tng.get_npu_backend()
    assert backend.config.executor == "auto"


def test_frozen_parameter_false_is_reported():
    config = CompilerConfig()
    config.experimental_config.frozen_parameter = False
    assert config.ignored_settings() == ["experimental_config.frozen_parameter=False"]


def test_bad_config_types():
    with pytest.raises(TypeError, match="compiler_config"):
        tng.get_npu_backend(compiler_config=object())
    config = CompilerConfig()
    config.superkernel.executor = "warp"
    with pytest.raises(ValueError, match="warp"):
        tng.get_npu_backend(compiler_config=config)


def test_scope_functions_take_torchair_argument_names():
    assert tng.scope.super_kernel(scope="sk1", options="early-start=0").attrs == [
        ("_super_kernel_scope", "sk1"),
        ("_super_kernel_options", "early-start=0"),
    ]
    keys = [k for k, _ in tng.scope.npu_stream_switch(stream_tag="1", stream_priority=0).attrs]
    assert keys == ["_user_stream_label", "_user_stream_priority", "_enable_inner_parallel"]
    t = torch.randn(3)
    assert torch.equal(tng.scope.npu_wait_tensor(t, t), t)
    assert [k for k, _ in tng.scope.limit_core_num(1, 2).attrs] == ["_op_aicore_num", "_op_vectorcore_num"]


class _TorchNpuShim:
    """The few torch_npu calls of the seed, on torch.ops.superkernel (the
    real layer is superkernel.compat.torch_npu)."""

    @staticmethod
    def npu_grouped_matmul(x, weight, *, bias=None, group_type=None):
        return sk.grouped_matmul(x, weight, bias, group_type=-1 if group_type is None else group_type)

    @staticmethod
    def npu_moe_gating_top_k(x, k, *, bias=None, k_group=1, group_count=1, group_select_mode=0, norm_type=0):
        return sk.moe_gating_topk(
            x, bias, k=k, k_group=k_group, group_count=group_count, group_select_mode=group_select_mode,
            norm_type=norm_type,
        )

    @staticmethod
    def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                                 quant_offset=None, group_index=None, activate_left=False, quant_mode=0):
        return sk.dequant_swiglu_quant(
            x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index,
            activate_left=int(activate_left), quant_mode=quant_mode,
        )

    @staticmethod
    def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None):
        return sk.quant_matmul(x1, x2, scale, offset, pertoken_scale, bias, output_dtype=output_dtype)


def seed_network():
    """The Network class of examples/python/torchair_superkernel_scope.py
    (the seed's, verbatim), defined with the shim as its torch_npu."""
    with open(os.path.join(EXAMPLES, "torchair_superkernel_scope.py")) as f:
        source = f.read()
    start = source.index("class Network(")
    end = source.index("\nconfig = CompilerConfig()")
    namespace = {"torch": torch, "tng": tng, "torch_npu": _TorchNpuShim()}
    exec(compile(source[start:end], "torchair_superkernel_scope.py", "exec"), namespace)
    return namespace["Network"]


def test_seed_body_through_get_npu_backend():
    inputs = load_example("example01_super_kernel_base.py").make_inputs()
    config = CompilerConfig()
    npu_backend = tng.get_npu_backend(compiler_config=config)
    network = seed_network()
    model = network()
    model = torch.compile(model, fullgraph=True, backend=npu_backend, dynamic=False)
    _npu_output = model(*inputs)
    assert_bitwise(_npu_output, network()(*inputs))
    (program,) = npu_backend.graphs()[-1].programs
    assert program.stats["n_super_kernels"] == 2
