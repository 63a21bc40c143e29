"""superkernel.optimize(model, whole_model=False), the per-block path (superkernel/moe_optimize.py, hf_moe_blocks.py):
tiny random models of six MoE families (Qwen2-MoE's sigmoid-gated shared expert included) — each block replaced by one
library op, logits against the unoptimized model within fp32 / bf16 / w8a8
tolerances, greedy generate, torch.compile (Inductor and the superkernel
backend) and superkernel.export around the op, the blocks it leaves and
why, w8a8 keeping the modules, a weight changed in place, batch
invariance through the optimized modules, and the errors. The library
builds each block (sk_moe_block: tests/test_moe_block.c)."""

import pytest
import torch

import superkernel
from superkernel import moe_optimize

transformers = pytest.importorskip("transformers")
from hf_tiny import VOCAB, tiny  # noqa: E402

GEN = torch.Generator().manual_seed(5)
FAMILIES = ["qwen3", "mixtral", "olmoe", "deepseek_v2", "deepseek_v3", "qwen2"]
# (mean |logit difference| / mean |logit|, max |difference| / max |logit|):
# fp32 differs in rounding order only; bf16 rounds every matmul, the
# router's logits and the combine at other points than torch, and w8a8 adds
# the int8 rounding of weights and activations (about 1/254 of each row's
# range). In bf16 a rounding difference can flip a near tie of the router
# in a later layer, which moves that one token's logits by up to about 10%
# of the largest: the max bound allows that, the mean bound catches
# anything systematic.
TOLERANCE = {(torch.float32, None): (1e-5, 1e-4), (torch.bfloat16, None): (1.5e-2, 0.25),
             (torch.bfloat16, "w8a8"): (2e-2, 0.25)}


def ids(batch=2, length=9):
    return torch.randint(0, VOCAB, (batch, length), generator=GEN)


def optimized_blocks(model):
    return [m for m in model.modules() if isinstance(m, moe_optimize.OptimizedMoE)]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype,quantize", list(TOLERANCE))
def test_family_logits(family, dtype, quantize):
    model = tiny(family, dtype)
    x = ids()
    with torch.no_grad():
        want = model(x).logits.float()
    keys = set(model.state_dict())
    report = superkernel.optimize(model, quantize=quantize, whole_model=False)
    assert len(report.replaced) == model.config.num_hidden_layers and not report.left, report
    assert set(model.state_dict()) == keys  # the block's modules kept under their names
    assert len(optimized_blocks(model)) == model.config.num_hidden_layers
    with torch.no_grad():
        got = model(x).logits.float()
    diff = (got - want).abs()
    mean_tol, max_tol = TOLERANCE[(dtype, quantize)]
    assert diff.mean() <= mean_tol * want.abs().mean(), f"{family}: mean |diff| {diff.mean()}"
    assert diff.max() <= max_tol * want.abs().max(), f"{family}: max |diff| {diff.max()}"


@pytest.mark.parametrize("family", ["qwen3", "deepseek_v3"])
def test_generate(family):
    """fp32: greedy decoding picks the unoptimized model's tokens."""
    model = tiny(family)
    prompt = ids(1, 6)
    with torch.no_grad():
        want = model.generate(prompt, max_new_tokens=8, do_sample=False)
        superkernel.optimize(model, whole_model=False)
        got = model.generate(prompt, max_new_tokens=8, do_sample=False)
    assert torch.equal(got, want)


def test_compiled_and_exported():
    """The op has a fake kernel: Inductor compiles the model around it (a
    whole graph), the superkernel backend runs it bit for bit as eager, and
    superkernel.export serves it. (Qwen3: DeepSeek's attention with grouped
    key/value heads does not trace under Dynamo in this torch.)"""
    model = tiny("qwen3")
    model.config.use_cache = False
    superkernel.optimize(model, whole_model=False)
    x = ids()
    with torch.no_grad():
        eager = model(x).logits
        inductor = torch.compile(model, backend="inductor", fullgraph=True)(x).logits
        ours = torch.compile(model, backend="superkernel", fullgraph=True)(x).logits
        exported = superkernel.export(model, (x,))(x).logits
    torch.testing.assert_close(inductor, eager, rtol=1e-4, atol=1e-4)
    assert torch.equal(ours, eager)
    assert torch.equal(exported, eager)


@pytest.mark.parametrize("family,reason", [("gpt_oss", "GptOss")])
def test_blocks_left_alone(family, reason):
    """Blocks the library cannot run stay as they were, listed with why."""
    model = tiny(family)
    x = ids()
    with torch.no_grad():
        want = model(x).logits
    report = superkernel.optimize(model, whole_model=False)
    assert not report.replaced and len(report.left) == 2
    assert all(reason in why for _, why in report.left), report
    assert "left" in repr(report) and report.left[0][0] in repr(report)
    with torch.no_grad():
        assert torch.equal(model(x).logits, want)
    assert not optimized_blocks(model)


def test_optimize_twice_leaves_optimized_blocks():
    model = tiny("qwen3")
    superkernel.optimize(model, whole_model=False)
    report = superkernel.optimize(model, whole_model=False)
    assert not report.replaced and all(why == "already optimized" for _, why in report.left)


def test_w8a8_keeps_the_modules():
    """w8a8: the library quantizes (its rule: tests/test_moe_block.c's
    test_w8a8_rule) and holds the int8 copies; the block's bf16 modules stay,
    so state_dict is unchanged; the output differs from the bf16 block's
    (it did quantize) and stays near it."""
    model = tiny("qwen3", torch.bfloat16)
    before = {name: t.clone() for name, t in model.state_dict().items()}
    superkernel.optimize(model, quantize="w8a8", whole_model=False)
    after = model.state_dict()
    assert set(after) == set(before) and all(torch.equal(after[n], t) for n, t in before.items())
    block = optimized_blocks(model)[0]
    assert "w8a8" in block.about, block.about
    plain = tiny("qwen3", torch.bfloat16)
    superkernel.optimize(plain, whole_model=False)
    x = torch.randn(5, 64, generator=GEN).to(torch.bfloat16)
    with torch.no_grad():
        q, y = block(x).float(), optimized_blocks(plain)[0](x).float()
    assert not torch.equal(q, y)
    assert (q - y).abs().max() <= 0.05 * y.abs().max()


def test_weight_changed_in_place():
    model = tiny("mixtral")
    reference = tiny("mixtral")
    superkernel.optimize(model, whole_model=False)
    x = ids()
    with torch.no_grad():
        for m in (model, reference):
            m.model.layers[1].mlp.experts.down_proj.mul_(3.0)
            m.model.layers[0].mlp.gate.weight.mul_(-1.0)
        torch.testing.assert_close(model(x).logits, reference(x).logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family,dtype", [("deepseek_v3", torch.bfloat16), ("qwen3", torch.float32)])
def test_batch_invariance(family, dtype):
    """Each token's MoE output is bitwise the same alone as at any place of
    the batch the model ran it in (the block's inputs recorded in a batch
    of 3 prompts, then run one token at a time)."""
    model = tiny(family, dtype)
    superkernel.optimize(model, whole_model=False)
    block = optimized_blocks(model)[1]
    seen = []
    handle = block.register_forward_hook(lambda mod, args, out: seen.append((args[0].clone(), out.clone())))
    with torch.no_grad():
        model(ids(3, 7))
        handle.remove()
        x, y = seen[0]
        rows, outs = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
        alone = torch.cat([block(rows[i : i + 1]) for i in range(rows.shape[0])])
        part = block(rows[5:9])
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    assert torch.equal(alone.view(bits), outs.view(bits))
    assert torch.equal(part.view(bits), outs[5:9].view(bits))


def test_chunks_past_one_program(monkeypatch):
    model = tiny("qwen3")
    superkernel.optimize(model, whole_model=False)
    block = optimized_blocks(model)[0]
    x = torch.randn(2, 19, 64, generator=GEN)
    with torch.no_grad():
        whole = block(x)
        monkeypatch.setattr(moe_optimize, "MAX_TOKENS", 8)
        block._compile()
        assert torch.equal(block(x), whole)


def test_errors():
    model = tiny("qwen3")
    with pytest.raises(ValueError, match="quantize"):
        superkernel.optimize(model, quantize="int4", whole_model=False)
    with pytest.raises(TypeError, match="nn.Module"):
        superkernel.optimize("model")
    with pytest.raises(superkernel.SuperkernelError):
        superkernel.optimize(model, options="no-such-option=1", whole_model=False)
    superkernel.optimize(model, whole_model=False)
    block = optimized_blocks(model)[0]
    x = torch.randn(3, 64, requires_grad=True)
    y = block(x)  # a forward with gradients enabled runs: the same bits
    with torch.no_grad():
        assert torch.equal(y.detach(), block(x))
    with pytest.raises(RuntimeError, match="inference only"):
        y.sum().backward()
    with torch.no_grad(), pytest.raises(ValueError, match="expected"):
        block(torch.randn(3, 32))


def test_moe_block_errors():
    """superkernel.MoEBlock (what the per-block path runs) raises naming the
    bad key or weight; a closed block raises instead of running."""
    model = tiny("qwen3")
    block = optimized_blocks_of(model)[0]
    desc, tensors = moe_optimize._description(block._spec, block.dtype), block._tensors()
    with pytest.raises(superkernel.SuperkernelError, match="num_experts_per_tok"):
        superkernel.MoEBlock({**desc, "num_experts_per_tok": 99}, tensors)
    with pytest.raises(superkernel.SuperkernelError, match="router = \"tanh\""):
        superkernel.MoEBlock({**desc, "router": "tanh"}, tensors)
    with pytest.raises(superkernel.SuperkernelError, match="weight gate.weight: missing"):
        superkernel.MoEBlock(desc, {n: t for n, t in tensors.items() if n != "gate.weight"})
    with pytest.raises(TypeError, match="experts.down_proj"):
        superkernel.MoEBlock(desc, {**tensors, "experts.down_proj": "not a tensor"})
    with pytest.raises(ValueError, match="quantize"):
        superkernel.MoEBlock(desc, tensors, quantize="int4")
    ours = superkernel.MoEBlock(desc, tensors)
    x = torch.randn(4, 64, generator=GEN)
    assert torch.equal(ours.run_into(x, torch.empty_like(x)), block(x))
    assert "8 experts" in repr(ours), repr(ours)
    ours.close()
    with pytest.raises(ValueError, match="closed"):
        ours.run_into(x, torch.empty_like(x))


def optimized_blocks_of(model):
    superkernel.optimize(model, whole_model=False)
    return optimized_blocks(model)
