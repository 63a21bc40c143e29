"""transformers' experts_implementation="superkernel" (superkernel/hf_experts.py):
registered by `import superkernel`, it runs tiny random models of three
families (Qwen3-MoE, Mixtral, DeepSeek-V3) through the library — logits
against the family's own grouped_mm experts within fp32 / bf16 tolerances,
greedy generate — every weight layout of the decorator (transposed, bias; the
default gate reads gate | up in halves whatever is_concatenated says), the fallback for a module it cannot run (GPT-OSS's
clamped gate, with one warning naming the class), a parameter changed in
place, and batch invariance through the experts module."""

import warnings

import pytest
import torch

import superkernel  # noqa: F401  registers "superkernel"
from superkernel import hf_experts

transformers = pytest.importorskip("transformers")
from transformers.integrations.moe import (  # noqa: E402
    ALL_EXPERTS_FUNCTIONS,
    grouped_mm_experts_forward,
    use_experts_implementation,
)

from hf_tiny import tiny  # noqa: E402

GEN = torch.Generator().manual_seed(11)


def set_impl(model, impl):
    model.set_experts_implementation(impl)
    assert model.config._experts_implementation == impl


def experts_modules(model):
    return [m for m in model.modules() if hasattr(m, "gate_up_proj") and hasattr(m, "down_proj")]


def test_registered():
    assert hf_experts.KEY in ALL_EXPERTS_FUNCTIONS


@pytest.mark.parametrize("family", ["qwen3", "mixtral", "deepseek_v3"])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2)])
def test_family_logits_and_generate(family, dtype, tol):
    """Logits within tol * max|logit| of grouped_mm's (fp32: rounding
    order only; bf16: every matmul and combine rounds to bf16 at other
    points), the library ran every experts module, and greedy generation
    (fp32) picks the same tokens."""
    model = tiny(family, dtype)
    ids = torch.randint(0, 96, (2, 9), generator=GEN)
    logits = {}
    for impl in ("grouped_mm", hf_experts.KEY):
        set_impl(model, impl)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback
            logits[impl] = model(ids).logits.float()
    ref = logits["grouped_mm"]
    diff = (logits[hf_experts.KEY] - ref).abs().max().item()
    assert diff <= tol * ref.abs().max().item(), f"{family} {dtype}: max |diff| {diff}"
    ran = [m for m in experts_modules(model) if m in hf_experts._programs]
    assert len(ran) == len(experts_modules(model)) > 0
    if dtype == torch.float32:
        tokens = {}
        for impl in ("grouped_mm", hf_experts.KEY):
            set_impl(model, impl)
            with torch.no_grad():
                tokens[impl] = model.generate(ids[:1], max_new_tokens=8, do_sample=False)
        assert torch.equal(tokens["grouped_mm"], tokens[hf_experts.KEY])


def layout_experts(is_transposed, has_bias, is_concatenated, e=5, h=24, inter=12):
    @use_experts_implementation(is_transposed=is_transposed, has_bias=has_bias, is_concatenated=is_concatenated)
    class Experts(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.num_experts = e
            shape_gu = (e, h, 2 * inter) if is_transposed else (e, 2 * inter, h)
            shape_d = (e, inter, h) if is_transposed else (e, h, inter)
            self.gate_up_proj = torch.nn.Parameter(torch.randn(shape_gu, generator=GEN) * 0.3)
            self.down_proj = torch.nn.Parameter(torch.randn(shape_d, generator=GEN) * 0.3)
            if has_bias:
                self.gate_up_proj_bias = torch.nn.Parameter(torch.randn(e, 2 * inter, generator=GEN) * 0.1)
                self.down_proj_bias = torch.nn.Parameter(torch.randn(e, h, generator=GEN) * 0.1)
            self.act_fn = torch.nn.SiLU()

    cfg = transformers.PretrainedConfig()
    cfg._experts_implementation = "grouped_mm"
    return Experts(cfg).requires_grad_(False)


def routing(t, e, k=2, dtype=torch.float32):
    idx = torch.stack([torch.randperm(e, generator=GEN)[:k] for _ in range(t)])
    w = torch.softmax(torch.randn(t, k, generator=GEN), -1).to(dtype)
    return idx, w


@pytest.mark.parametrize("is_transposed", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("is_concatenated", [True, False])
def test_weight_layouts(is_transposed, has_bias, is_concatenated):
    mod = layout_experts(is_transposed, has_bias, is_concatenated)
    for t in (1, 7, 40):
        x = torch.randn(t, 24, generator=GEN)
        idx, w = routing(t, 5)
        want = grouped_mm_experts_forward(mod, x, idx, w)
        got = hf_experts.experts_forward(mod, x, idx, w)
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_fallback_warns_once_per_class():
    """GPT-OSS's experts clamp their gate: grouped_mm runs them, with one
    warning naming the class and the reason, and the same outputs."""
    model = tiny("gpt_oss")
    ids = torch.randint(0, 96, (1, 6), generator=GEN)
    set_impl(model, "grouped_mm")
    with torch.no_grad():
        want = model(ids).logits
    set_impl(model, hf_experts.KEY)
    hf_experts._warned.discard(type(experts_modules(model)[0]))
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        got = model(ids).logits
        model(ids)
    mine = [w for w in caught if "superkernel" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert "GptOssExperts" in str(mine[0].message) and "_apply_gate" in str(mine[0].message)
    assert torch.equal(got, want)


def test_parameter_changed_in_place():
    mod = layout_experts(False, False, True)
    x = torch.randn(6, 24, generator=GEN)
    idx, w = routing(6, 5)
    before = hf_experts.experts_forward(mod, x, idx, w)
    with torch.no_grad():
        mod.gate_up_proj.mul_(2.0)  # same storage, a new version
    after = hf_experts.experts_forward(mod, x, idx, w)
    assert not torch.equal(before, after)
    torch.testing.assert_close(after, grouped_mm_experts_forward(mod, x, idx, w), rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        mod.down_proj = torch.nn.Parameter(mod.down_proj * 0.5)  # replaced: a new address
    torch.testing.assert_close(hf_experts.experts_forward(mod, x, idx, w),
                               grouped_mm_experts_forward(mod, x, idx, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_invariance(dtype):
    """A token's output rows are bitwise the same alone and at any place
    of batches of 4, 7 and 33 tokens (grouped_mm's are not promised to be)."""
    mod = layout_experts(False, False, True).to(dtype)
    pool_x = torch.randn(40, 24, generator=GEN).to(dtype)
    pool_idx, pool_w = routing(40, 5, dtype=dtype)
    alone = torch.cat([hf_experts.experts_forward(mod, pool_x[i : i + 1], pool_idx[i : i + 1], pool_w[i : i + 1])
                       for i in range(40)])
    for t in (4, 7, 33):
        rows = torch.randint(0, 40, (t,), generator=GEN)
        got = hf_experts.experts_forward(mod, pool_x[rows], pool_idx[rows], pool_w[rows])
        assert torch.equal(got.view(torch.int16 if dtype == torch.bfloat16 else torch.int32),
                           alone[rows].view(torch.int16 if dtype == torch.bfloat16 else torch.int32)), t


def test_more_tokens_than_one_program_runs(monkeypatch):
    """Past MAX_TOKENS a call runs in chunks: the same bits as one run."""
    mod = layout_experts(False, False, True)
    x = torch.randn(37, 24, generator=GEN)
    idx, w = routing(37, 5)
    whole = hf_experts.experts_forward(mod, x, idx, w)
    monkeypatch.setattr(hf_experts, "MAX_TOKENS", 16)
    hf_experts._programs.pop(mod, None)
    assert torch.equal(hf_experts.experts_forward(mod, x, idx, w), whole)


def test_unsupported_parameters_fall_back():
    """A parameter the library cannot borrow (not contiguous) runs
    grouped_mm, warning once for the class, with its outputs."""
    mod = layout_experts(False, False, True)
    mod.down_proj = torch.nn.Parameter(mod.down_proj.detach().transpose(1, 2).contiguous().transpose(1, 2),
                                       requires_grad=False)
    assert not mod.down_proj.is_contiguous()
    x = torch.randn(5, 24, generator=GEN)
    idx, w = routing(5, 5)
    hf_experts._warned.discard(type(mod))
    with pytest.warns(RuntimeWarning, match="not contiguous"):
        got = hf_experts.experts_forward(mod, x, idx, w)
    assert torch.equal(got, grouped_mm_experts_forward(mod, x, idx, w))


def test_invalidate_after_a_write_through_data():
    """.data writes bump no version: invalidate(module) makes the next call
    read the weights as they are."""
    mod = layout_experts(False, False, True)
    x = torch.randn(4, 24, generator=GEN)
    idx, w = routing(4, 5)
    hf_experts.experts_forward(mod, x, idx, w)
    mod.gate_up_proj.data.mul_(3.0)
    hf_experts.invalidate(mod)
    torch.testing.assert_close(hf_experts.experts_forward(mod, x, idx, w),
                               grouped_mm_experts_forward(mod, x, idx, w), rtol=1e-5, atol=1e-5)
