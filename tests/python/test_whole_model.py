"""superkernel.optimize(model) taking a transformers causal LM over whole
(superkernel/whole_model.py): generate() unchanged (greedy equal to the
original model's, sampling, a second prompt, a padded batch), model(ids)
logits close to the original's, a sequence's logits bitwise the same alone
or beside others in a batch, and in one pass or token by token; what it
refuses and the families it leaves to the per-block path."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

import superkernel  # noqa: E402

COMMON = dict(vocab_size=96, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, max_position_embeddings=64)


def _model(kind="qwen3_moe", dtype=torch.float32):
    torch.manual_seed(0)
    if kind == "qwen3_moe":
        cfg = transformers.Qwen3MoeConfig(**COMMON, head_dim=16, moe_intermediate_size=32, num_experts=4,
                                          num_experts_per_tok=2, norm_topk_prob=True)
        hf = transformers.Qwen3MoeForCausalLM(cfg)
    else:
        hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**COMMON))
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "norm" not in name:
                p.mul_(4.0)
    return hf.eval().to(dtype)


def _prompts():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, COMMON["vocab_size"], (2, 7), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # the second prompt is 4 tokens, padded on the left
    return ids, mask


@pytest.mark.parametrize("kind", ["qwen3_moe", "llama"])
def test_generate_matches_the_original(kind):
    hf = _model(kind)
    ids, mask = _prompts()
    with torch.no_grad():
        want = hf.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
        want_logits = hf(ids[:1]).logits
    report = superkernel.optimize(hf, max_context=32)
    assert [name for name, _ in report.replaced] == ["(whole model)"] and "whole decoder" in str(report)
    got = hf.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    assert torch.equal(got, want)
    logits = hf(ids[:1]).logits
    assert logits.shape == want_logits.shape
    assert (logits - want_logits).abs().max() <= 2e-4 * want_logits.abs().max()
    # a second prompt on the same model, alone
    again = hf.generate(ids[:1], max_new_tokens=8, do_sample=False)
    assert torch.equal(again, want[:1])


def test_one_copy_of_the_packed_weights_stays_resident():
    from superkernel import _file_weights

    torch.manual_seed(0)
    cfg = transformers.Qwen3MoeConfig(**{**COMMON, "hidden_size": 256}, head_dim=64, moe_intermediate_size=512,
                                      num_experts=8, num_experts_per_tok=2)
    hf = transformers.Qwen3MoeForCausalLM(cfg).eval()
    superkernel.optimize(hf, max_context=16)
    experts = hf.model.layers[0].mlp.experts.gate_up_proj  # 8 x 1024 x 256 fp32: 8 MiB, packed by the program
    import os
    import tempfile

    where = os.environ.get("SUPERKERNEL_WEIGHTS_DIR") or tempfile.gettempdir()
    on_disk = _file_weights.enabled() and _file_weights.filesystem_type(where) not in ("tmpfs", "ramfs")
    assert _file_weights.is_file_backed(experts) == on_disk
    assert not _file_weights.is_file_backed(hf.model.embed_tokens.weight)  # read in place by the embedding op
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    assert hf(ids).logits.shape == (1, 5, COMMON["vocab_size"])


def test_a_new_prompt_reuses_the_sequences_of_a_dropped_cache():
    hf = _model()
    superkernel.optimize(hf, max_context=32)
    whole = hf._superkernel_whole
    made = []
    sequence = whole.model.sequence
    whole.model.sequence = lambda: made.append(1) or sequence()
    ids, mask = _prompts()
    first = hf.generate(ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
    assert len(made) == 2  # one sequence a row
    for _ in range(2):  # each generate's cache is gone when the next starts: its sequences come back
        again = hf.generate(ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
        assert torch.equal(again, first)  # a reused sequence starts empty
        alone = hf.generate(ids[:1], max_new_tokens=4, do_sample=False)
        assert torch.equal(alone, first[:1])
    assert len(made) == 2
    # the same cache continues its own sequences, a live cache's are not handed out
    cache = transformers.DynamicCache(config=hf.config)
    hf(ids[:1], past_key_values=cache, use_cache=True)
    other = hf.generate(ids[1:], max_new_tokens=2, do_sample=False)
    assert other.shape == (1, 9) and len(made) == 2
    assert len(whole._free) <= whole._keep == 2


def test_sampling_runs_on_library_logits():
    hf = _model()
    superkernel.optimize(hf, max_context=32)
    ids, mask = _prompts()
    torch.manual_seed(1)
    out = hf.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=True, top_k=20, temperature=0.8)
    assert out.shape == (2, 12) and torch.equal(out[:, :7], ids)


def test_batch_and_chunking_do_not_change_a_sequence():
    hf = _model(dtype=torch.bfloat16)
    superkernel.optimize(hf, max_context=32)
    ids, mask = _prompts()
    alone = hf(ids[1:, 3:]).logits[0]  # the padded row's tokens, alone and unpadded
    batched = hf(ids, attention_mask=mask).logits[1, 3:]
    assert torch.equal(alone.view(torch.int32), batched.view(torch.int32))
    seq = hf._superkernel_whole.model.sequence()
    steps = torch.cat([seq.forward(ids[1, 3 + i:4 + i]) for i in range(4)])
    assert torch.equal(steps.view(torch.int32), alone.view(torch.int32))


def test_refusals_name_what_to_do():
    hf = _model()
    superkernel.optimize(hf, max_context=16)
    ids, _ = _prompts()
    cache = transformers.DynamicCache(config=hf.config)
    with pytest.raises(ValueError, match="padding_side"):
        hf(ids, attention_mask=torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 1, 1, 1]]), cache=cache)
    assert cache not in hf._superkernel_whole._states  # nothing ran, not even the good first row
    with pytest.raises(NotImplementedError, match="inputs_embeds"):
        hf(inputs_embeds=torch.zeros(1, 3, 64))
    with pytest.raises(NotImplementedError, match="labels"):
        hf(ids, labels=ids)
    with pytest.raises(ValueError, match="max_context 16"):
        hf(torch.zeros(1, 17, dtype=torch.long))
    report = superkernel.optimize(hf)
    assert "already optimized" in str(report)


def test_other_families_keep_the_per_block_path():
    cfg = transformers.FlexOlmoConfig(**COMMON, num_experts=4, num_experts_per_tok=2, pad_token_id=0,
                                      eos_token_id=1, bos_token_id=2)
    hf = transformers.FlexOlmoForCausalLM(cfg).eval()
    report = superkernel.optimize(hf)
    assert any(name == "(whole model)" and "flex_olmo" in why for name, why in report.left), report
    assert len(report.replaced) == COMMON["num_hidden_layers"]  # its MoE blocks, fused as before
    w8a8 = superkernel.optimize(transformers.FlexOlmoForCausalLM(cfg).eval(), quantize="w8a8")
    assert len(w8a8.replaced) == COMMON["num_hidden_layers"] and "w8a8" in str(w8a8), w8a8


@pytest.mark.parametrize("kind", ["qwen3_moe", "llama"])
def test_w8a8_runs_whole_and_a_row_is_its_own(kind):
    hf = _model(kind, torch.bfloat16)
    ids, mask = _prompts()
    report = superkernel.optimize(hf, quantize="w8a8", max_context=32)
    assert [name for name, _ in report.replaced] == ["(whole model)"] and "w8a8" in str(report), report
    got = hf.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    alone = hf.generate(ids[1:, 3:], max_new_tokens=8, do_sample=False)  # the padded row, unpadded and alone
    assert torch.equal(got[1, 3:], alone[0])
    again = hf.generate(ids[:1], max_new_tokens=8, do_sample=False)  # a second generate on the same model
    assert torch.equal(again, got[:1])


def test_torch_threads_leave_the_cores_to_the_team():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        report = superkernel.optimize(_model(), max_context=16)
        assert torch.get_num_threads() == 1 and "torch.set_num_threads(1) (was 2)" in str(report), report
        from superkernel import _omp

        assert _omp.team_threads() >= 2  # the library's later default teams keep torch's former count
        hf = _model()
        with pytest.raises(ValueError, match="torch_threads=0"):
            superkernel.optimize(hf, torch_threads=0)
        assert getattr(hf, "_superkernel_whole", None) is None  # refused before anything changed
        torch.set_num_threads(2)
        report = superkernel.optimize(_model(), max_context=16, torch_threads=None)
        assert torch.get_num_threads() == 2 and "set_num_threads" not in str(report), report
    finally:
        torch.set_num_threads(before)
