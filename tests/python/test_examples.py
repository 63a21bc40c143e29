"""The Python examples run as scripts: their success lines and files."""

import os
import subprocess
import sys

import pytest
from conftest import EXAMPLES


def run(script, *args, cwd=None):
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{script} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def test_example01():
    out = run("example01_super_kernel_base.py", "--executor", "interp").stdout
    assert "compiled output bitwise equal to eager" in out
    assert "2 super kernels" in out
    assert out.rstrip().endswith("execute sample success")


def test_example02(tmp_path):
    result = run("example02_super_kernel_profiling.py", "--iters", "3", cwd=tmp_path)
    out = result.stdout
    # identical scopes share one JIT-compiled kernel; sk3 (a bias) and sk5 (options) do not
    # (without a working C compiler the JIT falls back to interpreting and logs no such lines)
    if "scope 'sk1': compiled" in result.stderr or "scope 'sk1': cache hit" in result.stderr:
        for scope in ("sk2", "sk4"):
            assert f"scope '{scope}': reusing the kernel compiled for scope 'sk1'" in result.stderr
        for scope in ("sk3", "sk5", "sk6"):
            assert f"scope '{scope}': reusing" not in result.stderr
    else:
        assert "fall" in result.stderr, result.stderr  # the JIT said why it is not used
    for model in ("no_sk_model", "sk_model"):
        csv = tmp_path / "prof_result" / model / "op_statistic.csv"
        assert csv.is_file(), out
        assert csv.read_text().startswith("OP Type,Core Type,Count,Total Time(us)")
    assert "SuperKernel" in (tmp_path / "prof_result" / "sk_model" / "op_statistic.csv").read_text()
    assert "SuperKernel" not in (tmp_path / "prof_result" / "no_sk_model" / "op_statistic.csv").read_text()
    assert "total without super kernels:" in out and "gain" in out
    assert "outputs bitwise equal" in out
    assert out.rstrip().endswith("execute sample success")


def _has_torch_npu_compat():
    try:
        from superkernel.compat import torch_npu  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_torch_npu_compat(), reason="superkernel.compat.torch_npu is not in this tree yet")
def test_torchair_seed_script():
    out = run("torchair_superkernel_scope.py").stdout
    assert out.rstrip().endswith("execute sample success")


@pytest.mark.skipif(not _has_torch_npu_compat(), reason="superkernel.compat.torch_npu is not in this tree yet")
def test_torchair_seed_script_is_bitwise_eager():
    import runpy

    import torch

    ns = runpy.run_path(os.path.join(EXAMPLES, "torchair_superkernel_scope.py"))
    names = "gmm1_x gmm1_weight gmm1_bias gmm2_weight moe1_bias dsq_input data1 data2 scale".split()
    args = [ns[n] for n in names]
    assert torch.equal(ns["_npu_output"], ns["Network"]()(*args))
    (program,) = ns["npu_backend"].graphs()[-1].programs
    assert program.stats["n_super_kernels"] == 2
