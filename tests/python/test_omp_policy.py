"""torch's OpenMP workers wait passively where superkernel can still say so
(superkernel/_omp.py): imported before torch, it sets OMP_WAIT_POLICY=PASSIVE;
after torch, or with the variable set, it changes nothing, and the per-block
path warns that the workers spin. Each case in a fresh interpreter: the
runtime reads the policy once, when it is loaded."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")


def _run(code, policy=None):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


def test_imported_first_it_asks_for_passive_workers():
    p = _run("import superkernel, os; import torch; torch.ones(4).sum(); print(os.environ['OMP_WAIT_POLICY'])")
    assert p.stdout.strip() == "PASSIVE"


def test_after_torch_or_when_set_it_changes_nothing():
    p = _run("import torch; torch.ones(4).sum(); import superkernel, os; print(os.environ.get('OMP_WAIT_POLICY'))")
    assert p.stdout.strip() == "None"
    assert _run("import superkernel, os; print(os.environ['OMP_WAIT_POLICY'])", "active").stdout.strip() == "active"


_PER_BLOCK = """
import warnings, torch
torch.set_num_threads(2)
import transformers, superkernel
cfg = transformers.Qwen3MoeConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  num_key_value_heads=1, head_dim=16, intermediate_size=32, moe_intermediate_size=16,
                                  num_experts=4, num_experts_per_tok=2)
hf = transformers.Qwen3MoeForCausalLM(cfg).eval()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    superkernel.optimize(hf, whole_model=False)
print([str(x.message) for x in w if "OpenMP" in str(x.message)])
"""


def test_the_per_block_path_warns_when_the_workers_spin():
    pytest.importorskip("transformers")
    p = _run(_PER_BLOCK)
    assert "OMP_WAIT_POLICY=PASSIVE" in p.stdout, p.stdout
    assert _run(_PER_BLOCK, "PASSIVE").stdout.strip() == "[]"
