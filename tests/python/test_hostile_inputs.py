"""Values a careless or hostile caller hands the Python front door (issue
34, items 9, 12 and 13): every int and string crossing into C is checked
for its type and range first, with an error naming the argument, never cut
or wrapped; configs and $SUPERKERNEL_LIBRARY are checked where they are
given; wrong types, layouts and containers get a clear error; an exported
model copies and pickles."""

import copy
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from conftest import assert_bitwise

import superkernel as sk
from superkernel import _lib, scope
from superkernel.compat import torch_npu

NUL = "a\0b"


def _graph():
    g = sk.Graph()
    return g, g.add_input("x", "fp32", (4, 4))


def _square_program(team=None):
    g, x = _graph()
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    return g.compile(team, executor="eager")


# ---- item 9: strings with a NUL are refused, naming the argument ---------------


@pytest.mark.parametrize(
    "call,what",
    [
        (lambda g, x: g.add_input(NUL, "fp32", (2,)), "add_input: name"),
        (lambda g, x: g.add_constant(NUL, np.zeros(2, np.float32)), "add_constant: name"),
        (lambda g, x: g.mark_output(x, NUL), "mark_output: name"),
        (lambda g, x: g.begin_scope(NUL), "begin_scope: name"),
        (lambda g, x: g.begin_scope("s", "early-start=1\0junk"), "scope s: options"),
        (lambda g, x: g.add_op("squ\0are", {"x": x}), "op"),
        (lambda g, x: g.add_op("square", {"x\0y": x}), "square: input slot name"),
        (lambda g, x: g.add_op("square", {"x": x}, name=NUL), "square: node name"),
        (lambda g, x: g.add_op("add", {"x": x}, {"scal\0ar": 1.0}), "add: attribute name"),
        (lambda g, x: g.compile(default_options="early-start=1\0junk"), "Program: default_options"),
        (lambda g, x: g.compile(executor="eager\0"), "executor"),
        (lambda g, x: sk.validate_options("early-start=1\0junk"), "options"),
        (lambda g, x: sk.render_options("", "early-start=1\0junk"), "default_options"),
        (lambda g, x: sk.op_schema("square\0"), "op"),
        (lambda g, x: sk.op_infer("square\0", {"x": (sk.FP32, (2,))}), "op"),
        (lambda g, x: scope.super_kernel(NUL), "super_kernel: scope name"),
        (lambda g, x: scope.super_kernel("s", "early-start=1\0junk"), "super_kernel 's': options"),
        (lambda g, x: scope.npu_stream_switch(NUL), "npu_stream_switch: stream_tag"),
        (lambda g, x: sk.CompilerConfig(options="early-start=1\0junk"), "options"),
        (lambda g, x: sk.CompilerConfig(profiling_dir="/tmp/a\0b"), "CompilerConfig.profiling_dir"),
    ],
)
def test_strings_with_a_nul_are_refused_naming_the_argument(call, what):
    g, x = _graph()
    with pytest.raises(ValueError, match=f"^{_re(what)}: .*contains a NUL character"):
        call(g, x)


def _re(text):
    import re

    return re.escape(text)


def test_program_string_arguments_refuse_a_nul():
    p = _square_program()
    with pytest.raises(ValueError, match="jit_source: scope: .*NUL"):
        p.jit_source(NUL)
    with pytest.raises(ValueError, match="write_profile: directory: .*NUL"):
        p.write_profile("/tmp/x\0y")


def test_non_strings_are_refused_where_a_string_is_expected():
    g, _ = _graph()
    with pytest.raises(TypeError, match="add_input: name: expected a str, got int"):
        g.add_input(5, "fp32", (2,))
    with pytest.raises(TypeError, match="begin_scope: name: expected a str"):
        g.begin_scope(["s"])


# ---- item 9: ints past the C type's range, floats, strings and bools -----------


def test_executor_ids_and_watchdogs_are_checked_against_their_c_types():
    g, x = _graph()
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    # 2**32 + 3 wrapped to 3, the interpreter; 2**64 - 1 to -1, the watchdog off
    with pytest.raises(ValueError, match=r"Program: executor: 4294967299 is out of range \[-2147483648, 2147483647\]"):
        g.compile(executor=2**32 + 3)
    with pytest.raises(TypeError, match="Program: executor: expected an int, got 2.9"):
        g.compile(executor=2.9)
    with pytest.raises(TypeError, match="Program: executor: expected an int, got True"):
        g.compile(executor=True)
    with pytest.raises(ValueError, match="Program: watchdog_ms: 18446744073709551615 is out of range"):
        g.compile(watchdog_ms=2**64 - 1)
    with pytest.raises(TypeError, match="Program: watchdog_ms: expected an int, got '100'"):
        g.compile(watchdog_ms="100")
    p = g.compile(executor=np.int64(sk.EXECUTORS.index("eager")), watchdog_ms=np.int32(500))
    assert p.stats["executor"] == "eager"


def test_streams_events_and_dimensions_are_checked():
    g, x = _graph()
    with pytest.raises(ValueError, match=r"set_stream: stream: 4294967296 is out of range"):
        g.set_stream(2**32)  # was stream 0
    with pytest.raises(TypeError, match="set_stream: stream: expected an int, got '1'"):
        g.set_stream("1")
    with pytest.raises(TypeError, match="set_stream: stream: expected an int, got 1.0"):
        g.set_stream(1.0)
    g.add_op("square", {"x": x})
    ev = g.record_event()
    with pytest.raises(ValueError, match=r"wait_event: event: \d+ is out of range \[0, 4294967295\]"):
        g.wait_event(ev + 2**32)  # was the same event
    with pytest.raises(TypeError, match="wait_event: event: expected an int"):
        g.wait_event(float(ev))
    g.wait_event(np.uint32(ev))
    # op_infer wrapped a dimension of 2**64 + 5 to 5
    with pytest.raises(ValueError, match=r"square: input x\[0\]: dimension 0: 18446744073709551621 is out of range"):
        sk.op_infer("square", {"x": (sk.FP32, (2**64 + 5,))})
    with pytest.raises(TypeError, match=r"square: input x\[0\]: dimension 1: expected an int, got 2.5"):
        sk.op_infer("square", {"x": (sk.FP32, (4, 2.5))})
    with pytest.raises(TypeError, match=r"add: input y\[0\]: shape: expected a sequence of ints"):
        sk.op_infer("add", {"x": (sk.FP32, (4,)), "y": (sk.FP32, "4")})
    assert sk.op_infer("square", {"x": (sk.FP32, (np.int64(3), torch.tensor(2)))}) == [(sk.FP32, (3, 2))]


def test_run_context_bind_index_is_checked():
    p = _square_program()
    ctx = p.run_context()
    with pytest.raises(TypeError, match="RunContext.bind: input index: expected an int, got 0.0"):
        ctx.bind("input", 0.0, np.ones((4, 4), np.float32))


# ---- item 13: attributes take numpy scalars alike; a dict is not a list --------


def test_attributes_take_numpy_scalars_for_floats_and_ints():
    g, x = _graph()
    gamma = g.add_input("g", "fp32", (4,))
    for eps in (np.float32(1e-6), np.float64(1e-6), np.float16(1e-3), 1e-6, 1, np.int64(1)):
        g.add_op("rms_norm", {"x": x, "gamma": gamma}, {"epsilon": eps})
    for dim in (np.int64(-1), np.int32(-1), np.uint8(1), torch.tensor(1), -1):
        g.add_op("swiglu", {"x": x}, {"dim": dim})
    assert sk.op_infer("rms_norm", {"x": (sk.FP32, (2, 4)), "gamma": (sk.FP32, (4,))},
                       {"epsilon": np.float32(1e-6)})[0] == (sk.FP32, (2, 4))
    (got,) = sk.op_infer("reshape", {"x": (sk.FP32, (4, 4))}, {"shape": np.array([2, 8])})
    assert got == (sk.FP32, (2, 8))


def test_attributes_refuse_what_they_would_misread():
    g, x = _graph()
    gamma = g.add_input("g", "fp32", (4,))
    for bad in ({16: 1}, {16}, "16", b"\x10", (d for d in [16])):
        with pytest.raises(TypeError, match="reshape: attribute shape: expected a list of ints"):
            g.add_op("reshape", {"x": x}, {"shape": bad})
    with pytest.raises(TypeError, match="reshape: attribute shape: expected a list of ints"):
        sk.op_infer("reshape", {"x": (sk.FP32, (4, 4))}, {"shape": {16: 1}})
    with pytest.raises(TypeError, match=r"swiglu: attribute dim: expected an int, got 1.0"):
        g.add_op("swiglu", {"x": x}, {"dim": 1.0})  # was taken as 1
    with pytest.raises(TypeError, match=r"swiglu: attribute dim: expected an int, got np.float64\(1.0\)"):
        g.add_op("swiglu", {"x": x}, {"dim": np.float64(1.0)})
    with pytest.raises(TypeError, match="swiglu: attribute dim: expected an int, got '1'"):
        g.add_op("swiglu", {"x": x}, {"dim": "1"})
    with pytest.raises(TypeError, match="rms_norm: attribute epsilon: expected a float, got '1e-6'"):
        g.add_op("rms_norm", {"x": x, "gamma": gamma}, {"epsilon": "1e-6"})
    with pytest.raises(TypeError, match="rms_norm: attribute epsilon: expected a float, got True"):
        g.add_op("rms_norm", {"x": x, "gamma": gamma}, {"epsilon": True})


# ---- item 13: Program.run(team="x") -------------------------------------------


def test_a_team_that_is_not_a_team_is_a_type_error():
    p = _square_program()
    a, out = np.ones((4, 4), np.float32), np.empty((4, 4), np.float32)
    for call in (lambda: p.run(a, team="x"), lambda: p.run_into([a], [out], team=3),
                 lambda: p.run_context().run(team=object())):
        with pytest.raises(TypeError, match=r"Program.run: team: expected a superkernel.Team or None, got"):
            call()
    g, x = _graph()
    g.mark_output(g.add_op("square", {"x": x})[0], "y")
    with pytest.raises(TypeError, match="Program: team: expected a superkernel.Team or None, got str"):
        g.compile("x")
    with sk.Team(1) as team:
        assert (p.run(a, team=team)[0] == 1).all()


# ---- item 13: layouts the library cannot read, empty lists ---------------------


@pytest.mark.parametrize(
    "make,layout",
    [
        (lambda t: t.to_sparse(), "of layout torch.sparse_coo"),
        (lambda t: t.to_sparse_csr(), "of layout torch.sparse_csr"),
        (lambda t: t.to_mkldnn(), "of layout torch._mkldnn"),
        (lambda t: torch.nested.nested_tensor([t, t]), "a nested tensor, of layout torch.strided"),
        (lambda t: torch.nested.nested_tensor([t, t], layout=torch.jagged), "a nested tensor, of layout torch.jagged"),
    ],
)
def test_sparse_mkldnn_and_nested_tensors_name_their_layout(make, layout, recwarn):
    t = make(torch.ones(4, 4))
    p = _square_program()
    with pytest.raises(ValueError, match=f"input x: tensor is {_re(layout)}; superkernel takes dense tensors"):
        p.run(t)
    with pytest.raises(ValueError, match=f"npu_rms_norm: self: tensor is {_re(layout)}"):
        torch_npu.npu_rms_norm(t, torch.ones(4))
    with pytest.raises(ValueError, match=rf"npu_grouped_matmul: x\[0\]: tensor is {_re(layout)}"):
        torch_npu.npu_grouped_matmul([t], [torch.ones(4, 4)])
    ops = torch.ops.superkernel  # the dispatcher's other backends: the same message
    with pytest.raises(ValueError, match=f"superkernel::square: input x: tensor is {_re(layout)}"):
        ops.square(t)
    with pytest.raises(ValueError, match=rf"superkernel::grouped_matmul: input weight\[0\]: tensor is {_re(layout)}"):
        ops.grouped_matmul([torch.ones(4, 4)], [t])


def test_empty_lists_get_the_librarys_message():
    g, _ = _graph()
    with pytest.raises(sk.InvalidArgumentError, match="concat: input x: expected a non-empty list"):
        g.add_op("concat", {"x": []}, {"dim": 0})
    with pytest.raises(sk.InvalidArgumentError, match="grouped_matmul: input x: expected a non-empty list"):
        g.add_op("grouped_matmul", {"x": [], "weight": []})
    with pytest.raises(sk.InvalidArgumentError,
                       match="npu_grouped_matmul: grouped_matmul: input x: expected a non-empty list"):
        torch_npu.npu_grouped_matmul([], [])
    ops = torch.ops.superkernel  # no tensor to dispatch on: the same message
    with pytest.raises(sk.InvalidArgumentError, match="concat: input x: expected a non-empty list"):
        ops.concat([], dim=0)
    with pytest.raises(sk.InvalidArgumentError, match="grouped_matmul: input x: expected a non-empty list"):
        ops.grouped_matmul([], [])


# ---- item 9: the torch_npu compat layer checks its scalars from one table ------

X, W = torch.rand(4, 8), torch.rand(8, 4)


@pytest.mark.parametrize(
    "call,name,kind,got",
    [
        (lambda: torch_npu.npu_moe_gating_top_k_softmax(X, k=2.9), "k", "int", "2.9"),
        (lambda: torch_npu.npu_moe_gating_top_k_softmax(X, k="3"), "k", "int", "'3'"),
        (lambda: torch_npu.npu_moe_gating_top_k_softmax(X, k=True), "k", "int", "True"),
        (lambda: torch_npu.npu_moe_gating_top_k_softmax_v2(X, k=2, renorm=0.5), "renorm", "int", "0.5"),
        (lambda: torch_npu.npu_moe_gating_top_k_softmax_v2(X, k=2, output_softmax=1), "output_softmax", "bool", "1"),
        (lambda: torch_npu.npu_moe_gating_top_k(X, 2.0), "k", "int", "2.0"),
        (lambda: torch_npu.npu_moe_gating_top_k(X, 2, out_flag="yes"), "out_flag", "bool", "'yes'"),
        (lambda: torch_npu.npu_moe_gating_top_k(X, 2, eps="tiny"), "eps", "float", "'tiny'"),
        (lambda: torch_npu.npu_grouped_matmul([X], [W], split_item=2.5), "split_item", "int", "2.5"),
        (lambda: torch_npu.npu_grouped_matmul([X], [W, W], group_list=[1.5, 4.0], group_type=0, split_item=2),
         r"group_list\[0\]", "int", "1.5"),
        (lambda: torch_npu.npu_grouped_matmul([X], [W], group_list={4: 1}, group_type=0), "group_list",
         "list of ints", "dict"),
        (lambda: torch_npu.npu_grouped_matmul([X], [W, W], group_list=torch.tensor([1.5, 4.0]), group_type=0),
         "group_list", "list of ints", "a torch.float32 tensor"),
        (lambda: torch_npu.npu_swiglu(X, dim=-1.0), "dim", "int", "-1.0"),
        (lambda: torch_npu.npu_rms_norm(X, torch.ones(8), epsilon="1e-6"), "epsilon", "float", "'1e-6'"),
        (lambda: torch_npu.npu_add_rms_norm(X, X, torch.ones(8), epsilon=None or [1e-6]), "epsilon", "float", r"\["),
        (lambda: torch_npu.npu_moe_init_routing_v2(X, torch.zeros(4, 1, dtype=torch.int32), expert_num=8.0),
         "expert_num", "int", "8.0"),
        (lambda: torch_npu.npu_moe_init_routing_v2(X, torch.zeros(4, 1, dtype=torch.int32), expert_num=8,
                                                   active_expert_range=[0, 4.5]),
         r"active_expert_range\[1\]", "int", "4.5"),
        (lambda: torch_npu.npu_moe_finalize_routing(X, None, None, None, None, None, None, k=1.5), "k", "int", "1.5"),
        (lambda: torch_npu.npu_dequant_swiglu_quant(X, quant_mode="1"), "quant_mode", "int", "'1'"),
        (lambda: torch_npu.npu_dequant_swiglu_quant(X, activate_left=1), "activate_left", "bool", "1"),
        (lambda: torch_npu.npu_trans_quant_param(torch.ones(3), round_mode=0.0), "round_mode", "int", "0.0"),
    ],
)
def test_torch_npu_scalars_are_checked_naming_the_argument(call, name, kind, got):
    with pytest.raises(TypeError, match=rf"torch_npu\.\w+: {name}: expected an? {kind}, got {got}"):
        call()


def test_torch_npu_ranges_come_from_the_table():
    with pytest.raises(ValueError, match=r"npu_moe_init_routing_v2: expert_num: 0 is out of range \[1, "):
        torch_npu.npu_moe_init_routing_v2(X, torch.zeros(4, 1, dtype=torch.int32), expert_num=0)
    with pytest.raises(ValueError, match=r"npu_moe_gating_top_k_softmax: k: 18446744073709551616 is out of range"):
        torch_npu.npu_moe_gating_top_k_softmax(X, k=2**64)
    # numpy's scalars are ints and floats, bools bools
    y, idx, _ = torch_npu.npu_moe_gating_top_k_softmax(X, k=np.int64(2))
    assert y.shape == idx.shape == (4, 2)
    y, rstd = torch_npu.npu_rms_norm(X, torch.ones(8), epsilon=np.float32(1e-6))
    assert_bitwise(y, torch_npu.npu_rms_norm(X, torch.ones(8), epsilon=float(np.float32(1e-6)))[0])
    torch_npu.npu_moe_gating_top_k(X, 2, out_flag=np.bool_(True))


def test_every_scalar_argument_of_torch_npu_is_in_the_table():
    """Each function's non-tensor, non-dtype argument is checked by _ARGS or
    is one torch_npu takes at its default only (NotImplementedError)."""
    import inspect

    tensors = {"x", "weight", "bias", "scale", "offset", "per_token_scale", "group_list", "x1", "x2", "self", "gamma",
               "weight_scale", "activation_scale", "quant_scale", "quant_offset", "group_index", "pertoken_scale",
               "expert_idx", "finished", "skip1", "skip2", "scales", "expanded_permuted_rows",
               "expanded_src_to_dst_row", "export_for_source_row", "input_ids", "tid2eid", "antiquant_scale",
               "antiquant_offset", "activation_input", "activation_quant_scale", "activation_quant_offset",
               "group_sizes", "y_scale", "tuning_config"}
    for fn in torch_npu.__all__:
        f = getattr(torch_npu, fn)
        if not callable(f):
            continue
        for name in inspect.signature(f).parameters:
            if name in tensors or name.endswith("dtype") or name == "dst_type":
                continue
            assert name in torch_npu._ARGS, f"{fn}: argument {name} is not in torch_npu._ARGS"


# ---- item 12: configs checked when made, naming the field ---------------------


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"watchdog_ms": "soon"}, TypeError, r"CompilerConfig.watchdog_ms .*expected an int, got 'soon'"),
        ({"watchdog_ms": 1.5}, TypeError, r"CompilerConfig.watchdog_ms .*expected an int, got 1.5"),
        ({"watchdog_ms": 2**64 - 1}, ValueError, r"CompilerConfig.watchdog_ms .*out of range"),
        ({"num_threads": 5000}, ValueError, r"CompilerConfig.num_threads .*5000 is out of range \[1, 1024\]"),
        ({"num_threads": 0}, ValueError, r"CompilerConfig.num_threads .*0 is out of range \[1, 1024\]"),
        ({"num_threads": 2.0}, TypeError, r"CompilerConfig.num_threads .*expected an int, got 2.0"),
        ({"num_threads": True}, TypeError, r"CompilerConfig.num_threads .*expected an int, got True"),
        ({"executor": "warp"}, ValueError, "warp"),
        ({"executor": 3}, TypeError, "CompilerConfig.executor: expected a str"),
        ({"options": "early-start=maybe"}, ValueError, "early-start"),
        ({"options": None}, TypeError, "CompilerConfig.options: expected a str"),
        ({"profiling_dir": 5}, TypeError, "CompilerConfig.profiling_dir: expected None or a path"),
    ],
)
def test_compiler_config_is_checked_when_made(kwargs, error, message):
    with pytest.raises(error, match=message):
        sk.CompilerConfig(**kwargs)


def test_compiler_config_changed_later_is_checked_before_any_compile():
    config = sk.CompilerConfig()
    config.watchdog_ms = "soon"
    with pytest.raises(TypeError, match="CompilerConfig.watchdog_ms"):
        sk.get_backend(config)
    with pytest.raises(TypeError, match="CompilerConfig.watchdog_ms"):
        sk.export(torch.nn.Identity(), [torch.ones(2)], compiler_config=config)
    with pytest.raises(TypeError, match="compiler_config: expected a superkernel.CompilerConfig or None, got dict"):
        sk.export(torch.nn.Identity(), [torch.ones(2)], compiler_config={"executor": "jit"})
    config = sk.CompilerConfig(num_threads=np.int64(2), watchdog_ms=np.int32(100))
    assert config.num_threads == 2 and type(config.num_threads) is int


def test_num_threads_limit_is_the_librarys():
    """CompilerConfig's 1..SK_TEAM_MAX_CORES is the library's own limit."""
    with pytest.raises(sk.InvalidArgumentError, match=f"expected 0 .* or 1..{_lib.SK_TEAM_MAX_CORES}"):
        sk.Team(_lib.SK_TEAM_MAX_CORES + 1)


def test_torchair_config_checks_its_superkernel_section():
    from superkernel.compat.torchair.configs.compiler_config import CompilerConfig

    config = CompilerConfig()
    with pytest.raises(TypeError, match="CompilerConfig.superkernel: expected a superkernel.CompilerConfig, got dict"):
        config.superkernel = {"num_threads": 4}
    config.superkernel = sk.CompilerConfig(num_threads=2)
    config.superkernel.num_threads = 5000
    from superkernel.compat import torchair

    with pytest.raises(ValueError, match="CompilerConfig.num_threads"):
        torchair.get_npu_backend(compiler_config=config)


# ---- item 12: $SUPERKERNEL_LIBRARY says what is wrong with it -----------------


def _import_with_library(value, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    env["SUPERKERNEL_LIBRARY"] = value
    return subprocess.run(
        [sys.executable, "-c", "import superkernel; print('loaded', superkernel.library_path())"],
        capture_output=True, text=True, timeout=120, env=env, cwd=cwd,
    )


def test_superkernel_library_variable_errors_say_what_is_wrong(tmp_path):
    import ctypes.util

    text = tmp_path / "notes.txt"
    text.write_text("not a library\n")
    libm = ctypes.util.find_library("m")
    cases = [
        (str(tmp_path / "missing.so"), "no such file"),
        (str(tmp_path), "is a directory"),
        (str(text), "cannot be loaded as a shared library"),
    ]
    if libm:
        libm_path = next((os.path.join(d, libm) for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                                          "/lib64", "/usr/lib64", "/lib", "/usr/lib")
                          if os.path.exists(os.path.join(d, libm))), None)
        if libm_path:
            cases.append((libm_path, "is not the superkernel library (it has no sk_version)"))
    for value, why in cases:
        r = _import_with_library(value, tmp_path)
        assert r.returncode != 0, (value, r.stdout)
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: superkernel: $SUPERKERNEL_LIBRARY=") and why in last, (value, last)
        assert repr(value) in last, last


def test_superkernel_library_variable_takes_an_existing_relative_path(tmp_path):
    library = os.path.realpath(sk.library_path())
    relative = os.path.relpath(library, tmp_path)
    assert not os.path.isabs(relative)
    r = _import_with_library(relative, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == f"loaded {library}"
    # a bare file name is the file in the working directory, not a search of the library path
    link = tmp_path / "libsuperkernel.so"
    link.symlink_to(library)
    r = _import_with_library("libsuperkernel.so", tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"loaded {link}", (r.stdout, r.stderr[-2000:])


# ---- item 13: copies and pickles ----------------------------------------------


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(8, 4, generator=torch.Generator().manual_seed(5)), requires_grad=False)

    def forward(self, x):
        with scope.super_kernel("s"):
            (y,) = torch.ops.superkernel.grouped_matmul([x], [self.w])
            return torch.square(y)


def test_exported_model_deepcopies_and_pickles():
    model, x = _Model(), torch.rand(3, 8)
    exported = sk.export(model, [x], compiler_config=sk.CompilerConfig(executor="eager"))
    want = exported(x)
    copied = copy.deepcopy(exported)
    assert copied is not exported and copied.programs[0] is not exported.programs[0]
    assert_bitwise(copied(x), want)
    del exported  # the copy owns programs of its own
    import gc

    gc.collect()
    assert_bitwise(copied(x), want)
    assert_bitwise(pickle.loads(pickle.dumps(copied))(x), want)


def test_exported_model_pickle_loads_in_a_fresh_process(tmp_path):
    model, x = _Model(), torch.rand(3, 8)
    exported = sk.export(model, [x], compiler_config=sk.CompilerConfig(executor="eager"))
    path = tmp_path / "m.pkl"
    with open(path, "wb") as f:
        pickle.dump((exported, x, exported(x)), f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    code = f"""
        import pickle, torch
        with open({str(path)!r}, "rb") as f:  # superkernel is imported by the load itself
            m, x, want = pickle.load(f)
        print("equal", torch.equal(m(x), want))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0 and "equal True" in r.stdout, (r.stdout, r.stderr[-2000:])


def test_c_objects_refuse_copies_with_a_type_error():
    """A copy shared the C handle (two owners: a double free at exit, an
    abort); in a child, so that a regression fails here."""
    code = """
        import copy, pickle, superkernel as sk
        g = sk.Graph()
        x = g.add_input("x", "fp32", (4,))
        g.mark_output(g.add_op("square", {"x": x})[0], "y")
        p = g.compile(executor="eager")
        for obj in (g, p, sk.Team(1), p.run_context()):
            for how in (copy.copy, copy.deepcopy, pickle.dumps):
                try:
                    how(obj)
                    print(type(obj).__name__, how.__name__, "copied")
                except TypeError as e:
                    print(type(obj).__name__, how.__name__, "refused:", e)
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    for kind in ("Graph", "Program", "Team", "RunContext"):
        for how in ("copy", "deepcopy", "dumps"):
            assert f"{kind} {how} refused: superkernel.{kind} cannot be copied or pickled" in r.stdout, r.stdout
