"""_file_weights.py: torch's copy of the expert weights in a file-backed
mapping whose pages go back to the kernel once the program has packed them
(one copy in memory), the same values read back, the fallback with a
warning where no file can be made, and the experts of transformers and
superkernel.optimize running on such weights bit for bit."""

import os

import pytest
import torch

import superkernel
from superkernel import _file_weights, hf_experts, moe_optimize

transformers = pytest.importorskip("transformers")
from hf_tiny import VOCAB, tiny  # noqa: E402


def rss_file_kb():
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def test_to_file_and_page_out():
    t = torch.randn(512, 1024).to(torch.bfloat16)  # 1 MiB
    f = _file_weights.to_file(t)
    assert _file_weights.is_file_backed(f) and not _file_weights.is_file_backed(t)
    assert torch.equal(f.view(torch.int16), t.view(torch.int16)) and f.shape == t.shape
    before = rss_file_kb()
    assert _file_weights.page_out(f)
    assert rss_file_kb() <= before - 512  # at least half of its 1024 KiB left memory
    assert torch.equal(f.view(torch.int16), t.view(torch.int16))  # read back from the file
    assert _file_weights.to_file(f) is f  # already there
    assert not _file_weights.page_out(t)  # anonymous memory: nothing done


def test_small_or_disabled_stay(monkeypatch):
    small = torch.zeros(16)
    assert _file_weights.to_file(small) is small
    big = torch.zeros(1 << 18)
    monkeypatch.setenv("SUPERKERNEL_WEIGHTS_IN_MEMORY", "1")
    assert _file_weights.to_file(big) is big


def test_no_file_warns_and_keeps_memory(monkeypatch, tmp_path):
    monkeypatch.setenv("SUPERKERNEL_WEIGHTS_DIR", str(tmp_path / "missing"))
    monkeypatch.setattr(_file_weights, "_warned", [])
    big = torch.zeros(1 << 18)
    with pytest.warns(RuntimeWarning, match="stay in memory"):
        assert _file_weights.to_file(big) is big


def test_a_directory_in_memory_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("SUPERKERNEL_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setattr(_file_weights, "_warned", [])
    monkeypatch.setattr(_file_weights, "filesystem_type", lambda d: "tmpfs")
    big = torch.zeros(1 << 18)
    with pytest.warns(RuntimeWarning, match="tmpfs"):
        assert _file_weights.to_file(big) is big
    assert not os.listdir(tmp_path)


def test_filesystem_type_of_proc():
    assert _file_weights.filesystem_type("/proc/self") == "proc"


@pytest.mark.parametrize("path", ["experts_implementation", "optimize", "optimize_w8a8"])
def test_models_on_file_weights(monkeypatch, path):
    """Every weight moved (no size floor): the same logits as in memory."""
    dtype = torch.bfloat16 if path == "optimize_w8a8" else torch.float32
    ids = torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(1))
    outs = []
    for floor in (1 << 62, 0):  # in memory, then on files
        monkeypatch.setattr(_file_weights, "_MIN_BYTES", floor)
        model = tiny("deepseek_v3", dtype)
        if path == "experts_implementation":
            model.set_experts_implementation(hf_experts.KEY)
        else:
            superkernel.optimize(model, quantize="w8a8" if path == "optimize_w8a8" else None, whole_model=False)
        with torch.no_grad():
            outs.append(model(ids).logits)
        blocks = [m for m in model.modules() if isinstance(m, moe_optimize.OptimizedMoE)]
        assert bool(blocks) == path.startswith("optimize")
        held = [m.gate_up_proj for m in model.modules() if hasattr(m, "gate_up_proj")]
        assert held and all(_file_weights.is_file_backed(t) == (floor == 0) for t in held)
    assert torch.equal(outs[0], outs[1])
