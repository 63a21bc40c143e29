"""superkernel.scope: the marker ops eagerly, traced, and as the backend reads
them (pairing, nesting, options, streams, wait events)."""

import pytest
import torch
from conftest import assert_bitwise, backend, compile_run
from torch._functorch.aot_autograd import aot_module_simplified

from superkernel import scope

sk = torch.ops.superkernel


class TwoScopes(torch.nn.Module):
    def forward(self, x, y):
        with scope.super_kernel("sk1", "early-start=0"):
            a = x * y
            b = a + x
        c = torch.sin(b)
        with scope.super_kernel("sk2"):
            d = c * c
        return d, b


def test_eager_scope_is_a_no_op():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with scope.super_kernel("sk1", "early-start=0"):
        inside = x * y + x
    assert torch.equal(inside, x * y + x)
    assert sk.scope_enter(["k"], ["v"]) is None
    assert sk.scope_exit() is None
    assert_bitwise(TwoScopes()(x, y), (torch.sin(x * y + x) * torch.sin(x * y + x), x * y + x))


def test_scope_arguments_are_checked_eagerly():
    with pytest.raises(TypeError, match="scope name must be a str"):
        scope.super_kernel(3)
    with pytest.raises(TypeError, match="options must be a str"):
        scope.super_kernel("a", options=1)
    with pytest.raises(TypeError, match="must be a bool"):
        scope.op_never_timeout(1)
    assert scope.super_kernel(None).attrs[0] == ("_super_kernel_scope", "")


def test_markers_survive_dynamo_and_aot_autograd():
    seen = []

    def capture(gm, example_inputs):
        def fw(fw_gm, fw_inputs):
            seen.append(fw_gm)
            return fw_gm

        return aot_module_simplified(gm, example_inputs, fw_compiler=fw)

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with torch.no_grad():
        torch.compile(TwoScopes(), backend=capture, fullgraph=True)(x, y)
    (fw_gm,) = seen
    markers = [n for n in fw_gm.graph.nodes if n.target in (scope.scope_enter, scope.scope_exit)]
    assert [m.target for m in markers] == [scope.scope_enter, scope.scope_exit] * 2
    assert markers[0].args[0] == ["_super_kernel_scope", "_super_kernel_options"]
    assert markers[0].args[1] == ["sk1", "early-start=0"]
    assert markers[2].args[1] == ["sk2", ""]
    # the ops between the markers are the scope's
    names = [n.target for n in fw_gm.graph.nodes]
    i0, i1 = names.index(scope.scope_enter), names.index(scope.scope_exit)
    assert torch.ops.aten.mul.Tensor in names[i0:i1] and torch.ops.aten.sin.default not in names[i0:i1]


def test_backend_fuses_each_scope():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    got, want, b = compile_run(TwoScopes(), (x, y), "interp")
    assert_bitwise(got, want)
    graph = b.graphs()[-1]
    assert [s.name for s in graph.plan.scopes] == ["sk1", "sk2"]
    text = "\n".join(p.describe() for p in graph.programs)
    assert "super kernel sk1" in text and "super kernel sk2" in text
    assert "early-start=0" in text


def test_repeated_scope_names_are_separate_scopes():
    class Repeat(torch.nn.Module):
        def forward(self, x):
            for _ in range(3):
                with scope.super_kernel("layer"):
                    x = x * x + x
                x = torch.tanh(x)
            return x

    got, want, b = compile_run(Repeat(), (torch.randn(16),), "interp")
    assert_bitwise(got, want)
    assert [s.name for s in b.graphs()[-1].plan.scopes] == ["layer", "layer#2", "layer#3"]


def test_nested_scopes_are_rejected():
    class Nested(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("outer"):
                with scope.super_kernel("inner"):
                    return x * x

    with pytest.raises(Exception, match="'inner' is nested in scope 'outer'"):
        compile_run(Nested(), (torch.randn(4),))


def breaks(options=None):
    class Breaks(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("sk1", options):
                y = x * x
                print("a graph break inside the scope")
                return y + x

    return Breaks()


def test_graph_break_inside_a_scope_splits_it_with_a_warning():
    """Each part runs on its own (the warnings name the scope and the
    break), and the compiled model gives the eager bits."""
    with pytest.warns(UserWarning, match="(?s)'sk1' begins in this graph.*graph break"):
        got, want, _ = compile_run(breaks(), (torch.randn(4),), fullgraph=False)
    assert_bitwise(got, want)


def test_graph_break_inside_a_scope_under_abort_is_an_error():
    with pytest.raises(Exception, match="(?s)'sk1' begins in this graph.*strict-scope-check=abort"):
        compile_run(breaks("strict-scope-check=abort"), (torch.randn(4),), fullgraph=False)
    # the process stays usable
    got, want, _ = compile_run(TwoScopes(), (torch.randn(2, 3), torch.randn(2, 3)))
    assert_bitwise(got, want)


@pytest.mark.parametrize("options, key", [("bogus-key=1", "bogus-key"), ("early-start=7", "early-start")])
def test_invalid_options_fail_the_compile_naming_the_key(options, key):
    class Bad(torch.nn.Module):
        def forward(self, x):
            with scope.super_kernel("sk", options):
                return x * x

    with pytest.raises(Exception, match=f"scope 'sk'.*{key}"):
        compile_run(Bad(), (torch.randn(4),))


def test_invalid_default_options_fail_at_once():
    with pytest.raises(ValueError, match="nope"):
        backend(options="nope=1")


class DualStream(torch.nn.Module):
    """Chain A on stream 0, chain B on the tagged stream; B's result waits
    for A's square although it does not read it (a control edge)."""

    def forward(self, a, b):
        with scope.super_kernel("dual", "stream-fusion=1"):
            a1 = a * a
            with scope.npu_stream_switch("s1"):
                b1 = b + b
                b1w = scope.npu_wait_tensor(b1, a1)
                b2 = b1w * b1w
            a2 = a1 + a
        return a2, b2


def test_stream_switch_and_wait_tensor():
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    got, want, bk = compile_run(DualStream(), (a, b), "interp", num_threads=2)
    assert_bitwise(got, want)
    (program,) = bk.graphs()[-1].programs
    text = program.describe()
    assert "stream-fused" in text
    sub = {line.split(":")[1].split()[0]: line for line in text.splitlines() if line.strip().startswith("sub ")}
    assert "stream 1" in sub["add"] and "stream 0" in sub["mul"]
    # mul_1 (b2) reads only b1: the wait before it comes from the event
    assert any("wait for flag" in line and "mul_1" in line for line in text.splitlines())


def test_wait_tensor_eagerly_is_a_copy():
    t, dep = torch.randn(5, requires_grad=True), torch.randn(3)
    out = scope.npu_wait_tensor(t, dep)
    assert torch.equal(out, t) and out.data_ptr() != t.data_ptr()
    (out * 3).sum().backward()  # an identity for autograd
    assert torch.equal(t.grad, torch.full((5,), 3.0))


def test_a_second_stream_tag_is_an_error():
    class ThreeStreams(torch.nn.Module):
        def forward(self, a):
            with scope.npu_stream_switch("s1"):
                a = a * a
            with scope.npu_stream_switch("s2"):
                a = a + a
            return a

    with pytest.raises(Exception, match="two streams"):
        compile_run(ThreeStreams(), (torch.randn(8),))


def test_ignored_torchair_markers_warn():
    class Limits(torch.nn.Module):
        def forward(self, a):
            with scope.limit_core_num(4, 8):
                with scope.op_never_timeout(True):
                    return a * a

    with pytest.warns(UserWarning, match="limit_core_num scope is accepted and ignored"):
        got, want, _ = compile_run(Limits(), (torch.randn(8),))
    assert_bitwise(got, want)
