"""Issue 34, item 13, the parts that need changes outside the torch
helper's files (python/superkernel/scope.py, python/superkernel/__init__.py):
TorchScript says scopes are not supported there; torch.ops.superkernel.<op>
works whatever the import order."""

import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from superkernel import scope

_MESSAGE = "super-kernel scopes \\(superkernel.scope\\) are not supported under TorchScript"


class Scoped(torch.nn.Module):
    def forward(self, x):
        with scope.super_kernel("s", "early-start=0"):
            y = x * 2
        with scope.npu_stream_switch("t"):
            y = y + 1
        return y


def test_torchscript_trace_says_scopes_are_not_supported():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit's deprecation
        with pytest.raises(RuntimeError, match=_MESSAGE):
            torch.jit.trace(Scoped(), (torch.ones(2),))


def test_torchscript_script_says_scopes_are_not_supported():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(Scoped())
    with pytest.raises(Exception, match=_MESSAGE):
        scripted(torch.ones(2))
    assert torch.equal(Scoped()(torch.ones(2)), torch.full((2,), 3.0))  # eager: scopes are no-ops


@pytest.mark.parametrize("order,backend", [("import superkernel, torch", True), ("import torch, superkernel", True),
                                           ("import superkernel; import superkernel.scope; import torch", False)])
def test_torch_ops_work_whatever_the_import_order(order, backend):
    code = f"""
        {order}
        import torch
        assert torch.equal(torch.ops.superkernel.add(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
        if {backend}:  # registered by name too
            with torch.no_grad():
                y = torch.compile(lambda x: x * x + x, backend="superkernel")(torch.ones(3))
            assert torch.equal(y, torch.full((3,), 2.0))
        print("ok")
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_import_superkernel_alone_stays_torch_free():
    code = "import sys, superkernel; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
