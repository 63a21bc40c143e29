"""superkernel.Model (src/model through python/superkernel/model.py): tiny
random transformers models of each family the builder takes, their logits
against transformers' own forward (fp32: close; bf16: within bf16's
tolerance), a token's logits bitwise the same prefilled in one pass, in
chunks or decoded token by token, greedy decoding equal to transformers'
generate, and errors that name the culprit. quantize="w8a8" (every linear
layer int8): logits near transformers' within w8a8's tolerance, chunking
still invisible, an LM head wider than one int8 GEMM."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

import superkernel  # noqa: E402

COMMON = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, max_position_embeddings=64, rms_norm_eps=1e-6)


def _qwen3_moe():
    cfg = transformers.Qwen3MoeConfig(**COMMON, head_dim=16, moe_intermediate_size=32, num_experts=4,
                                      num_experts_per_tok=2, norm_topk_prob=True, mlp_only_layers=[1])
    return transformers.Qwen3MoeForCausalLM(cfg)


def _llama():
    cfg = transformers.LlamaConfig(**COMMON, attention_bias=True, tie_word_embeddings=True, rope_theta=50000.0)
    return transformers.LlamaForCausalLM(cfg)


def _qwen3():
    return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**COMMON, head_dim=32))


def _qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**COMMON))


def _mixtral():
    return transformers.MixtralForCausalLM(transformers.MixtralConfig(**COMMON, num_local_experts=4,
                                                                      num_experts_per_tok=2))


def _olmoe():
    cfg = transformers.OlmoeConfig(**COMMON, num_experts=4, num_experts_per_tok=2, pad_token_id=0, eos_token_id=1,
                                   bos_token_id=2)
    return transformers.OlmoeForCausalLM(cfg)


def _qwen2_moe():
    cfg = transformers.Qwen2MoeConfig(**COMMON, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                      shared_expert_intermediate_size=48, norm_topk_prob=True)
    return transformers.Qwen2MoeForCausalLM(cfg)


_MLA = dict(n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1,
            first_k_dense_replace=1, kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=16)


def _deepseek_v2():
    cfg = transformers.DeepseekV2Config(**{**COMMON, "num_key_value_heads": 4}, **_MLA, q_lora_rank=None,
                                        routed_scaling_factor=1.5, topk_method="greedy")
    return transformers.DeepseekV2ForCausalLM(cfg)


def _deepseek_v3():
    cfg = transformers.DeepseekV3Config(**{**COMMON, "num_key_value_heads": 4}, **_MLA, q_lora_rank=48, n_group=2,
                                        topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True,
                                        rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                      "original_max_position_embeddings": 16, "beta_fast": 32,
                                                      "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})
    hf = transformers.DeepseekV3ForCausalLM(cfg)
    with torch.no_grad():
        for layer in hf.model.layers[1:]:
            layer.mlp.gate.e_score_correction_bias.uniform_(-0.1, 0.1)
    return hf


FAMILIES = {"qwen3_moe": _qwen3_moe, "llama": _llama, "qwen3": _qwen3, "qwen2": _qwen2, "mixtral": _mixtral,
            "olmoe": _olmoe, "qwen2_moe": _qwen2_moe, "deepseek_v2": _deepseek_v2, "deepseek_v3": _deepseek_v3}


def _model(family, dtype):
    torch.manual_seed(0)
    hf = FAMILIES[family]().eval()
    with torch.no_grad():  # larger weights than the init's: logits that differ enough to rank
        for name, p in hf.named_parameters():
            if "norm" not in name:
                p.mul_(4.0)
    return hf.to(dtype)


def _prompt(n=12, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, COMMON["vocab_size"], (n,), generator=g)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_logits_match_transformers(family, dtype):
    hf = _model(family, dtype)
    ids = _prompt()
    with torch.no_grad():
        want = hf(ids[None]).logits[0].float()
    model = superkernel.Model(hf.config, hf.state_dict(), max_tokens=8, max_context=32)
    assert model.family == family and model.vocab == COMMON["vocab_size"]
    got = model.sequence().forward(ids, logits="all")
    scale = want.abs().max().item()
    err = (got - want).abs().amax(-1)  # per token
    if dtype == torch.float32:  # rounding only
        assert err.max() <= 2e-4 * scale, (family, err, scale)
        assert torch.equal(got.argmax(-1), want.argmax(-1))
    else:
        # activations rounded to bf16 at every op, in both; a MoE router
        # near a tie may then pick another expert for a token (its error,
        # and its successors', jump): most tokens stay within tolerance
        assert (err <= 0.06 * scale).float().mean() >= 0.75 and err.median() <= 0.03 * scale, (family, err, scale)
        assert (got.argmax(-1) == want.argmax(-1)).float().mean() >= 0.75


@pytest.mark.parametrize("family", ["qwen3_moe", "llama", "deepseek_v3", "qwen2_moe"])
def test_chunking_is_invisible(family):
    hf = _model(family, torch.bfloat16)
    model = superkernel.Model(hf.config, hf.state_dict(), max_tokens=16, max_context=32)
    ids = _prompt(15, seed=2)
    whole = model.sequence().forward(ids, logits="all")
    for sizes in ([1] * 15, [4, 7, 4], [15]):
        seq, parts, at = model.sequence(), [], 0
        for c in sizes:
            parts.append(seq.forward(ids[at:at + c], logits="all"))
            at += c
        assert torch.equal(torch.cat(parts).view(torch.int32), whole.view(torch.int32)), sizes
        assert len(seq) == 15


def _near(got, want, median, most):
    """w8a8's tolerance: the median token's error within median x the
    largest logit, 75% of them within most x, 75% of the argmaxes equal
    (a router near a tie may pick another expert: that token jumps)."""
    scale = want.abs().max().item()
    err = (got - want).abs().amax(-1)
    assert err.median() <= median * scale and (err <= most * scale).float().mean() >= 0.75, (err / scale)
    assert (got.argmax(-1) == want.argmax(-1)).float().mean() >= 0.75
    assert err.max() > 0  # it did quantize


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_w8a8_logits_near_transformers(family):
    hf = _model(family, torch.bfloat16)
    ids = _prompt()
    with torch.no_grad():
        want = hf(ids[None]).logits[0].float()
    model = superkernel.Model(hf.config, hf.state_dict(), max_tokens=8, max_context=32, quantize="w8a8")
    assert model.about.endswith(", w8a8")
    whole = model.sequence().forward(ids, logits="all")
    _near(whole, want, 0.05, 0.1)
    seq = model.sequence()
    parts = [seq.forward(ids[:5], logits="all"), seq.forward(ids[5:6], logits="all"), seq.forward(ids[6:], logits="all")]
    assert torch.equal(torch.cat(parts).view(torch.int32), whole.view(torch.int32))


def test_w8a8_head_wider_than_one_int8_gemm():
    """A vocabulary past quant_matmul's 65535 columns: the head runs in parts."""
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**{**COMMON, "vocab_size": 70000, "num_hidden_layers": 1})
    hf = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        hf.lm_head.weight.mul_(4.0)
    ids = torch.tensor([5, 69999, 40000, 66000, 123])
    with torch.no_grad():
        want = hf(ids[None]).logits[0]
    got = superkernel.Model(cfg, hf.state_dict(), max_context=8, quantize="w8a8").sequence().forward(ids, logits="all")
    _near(got, want, 0.05, 0.1)
    with pytest.raises(ValueError, match="quantize='int4'"):
        superkernel.Model(cfg, hf.state_dict(), quantize="int4")


def test_greedy_decode_matches_generate():
    hf = _model("qwen3_moe", torch.float32)
    ids = _prompt(6, seed=3)
    with torch.no_grad():
        want = hf.generate(ids[None], max_new_tokens=8, do_sample=False)[0, 6:].tolist()
    seq = superkernel.Model(hf.config, hf.state_dict(), max_context=32).sequence()
    logits, got = seq.forward(ids), []
    for _ in range(8):
        got.append(int(logits[0].argmax()))
        logits = seq.forward([got[-1]])
    assert got == want


def test_errors_name_the_culprit():
    hf = _model("llama", torch.float32)
    sd = hf.state_dict()
    del sd["model.layers.1.mlp.up_proj.weight"]
    with pytest.raises(LookupError, match="model.layers.1.mlp.up_proj.weight"):
        superkernel.Model(hf.config, sd)
    sd = hf.state_dict()
    sd["model.norm.weight"] = sd["model.norm.weight"].to(torch.float64)
    with pytest.raises(ValueError, match="model.norm.weight: dtype torch.float64"):
        superkernel.Model(hf.config, sd)
    cfg = hf.config.to_dict()
    cfg["model_type"] = "gpt2"
    with pytest.raises(superkernel.UnsupportedError, match="gpt2"):
        superkernel.Model(cfg, hf.state_dict())
    seq = superkernel.Model(hf.config, hf.state_dict(), max_context=8).sequence()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        seq.forward([1, 2, 1000])
    with pytest.raises(ValueError, match="max_context 8"):
        seq.forward(list(range(9)))
    assert len(seq) == 0
    with pytest.raises(TypeError, match="integers"):
        seq.forward(torch.tensor([1.0]))


@pytest.mark.parametrize("family", ["qwen3_moe", "llama", "deepseek_v3", "mixtral"])
def test_from_checkpoint_is_the_same_model(family, tmp_path):
    """Model.from_checkpoint: the directory save_pretrained writes, read by
    the library itself, gives the bits of Model(config, state_dict)."""
    hf = _model(family, torch.bfloat16)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    ids = _prompt(9, seed=3)
    want = superkernel.Model(hf.config, hf.state_dict(), max_tokens=8, max_context=16).sequence().forward(
        ids, logits="all")
    model = superkernel.Model.from_checkpoint(tmp_path, max_tokens=8, max_context=16)
    assert model.family == family and model.vocab == COMMON["vocab_size"]
    moe = hf.config.to_dict()
    experts = moe.get("num_experts") or moe.get("num_local_experts") or moe.get("n_routed_experts") or 0
    assert (model.experts, model.experts_per_token) == ((experts, 2) if experts else (0, 0))
    got = model.sequence().forward(ids, logits="all")
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    model.close()
    model.close()
    if experts:  # w8a8 quantizes the experts from the checkpoint's own layout
        want = superkernel.Model(hf.config, hf.state_dict(), max_context=16, quantize="w8a8").sequence().forward(ids)
        got = superkernel.Model.from_checkpoint(tmp_path, max_context=16, quantize="w8a8").sequence().forward(ids)
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_from_checkpoint_errors_name_the_file(tmp_path):
    with pytest.raises(LookupError, match="nowhere"):
        superkernel.Model.from_checkpoint(tmp_path / "nowhere")
    hf = _model("llama", torch.bfloat16)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    (tmp_path / "model.safetensors").write_bytes((tmp_path / "model.safetensors").read_bytes()[:100])
    with pytest.raises(ValueError, match="model.safetensors"):
        superkernel.Model.from_checkpoint(tmp_path)


def test_closing_the_model_closes_its_sequences():
    hf = _model("llama", torch.float32)
    model = superkernel.Model(hf.config, hf.state_dict(), max_context=8)
    seq = model.sequence()
    seq.forward([1, 2])
    model.close()
    with pytest.raises(ValueError, match="closed"):
        seq.forward([3])
    seq.close()


def test_profile_times_every_op(tmp_path):
    hf = _model("qwen3_moe", torch.float32)
    model = superkernel.Model(hf.config, hf.state_dict(), max_context=16, executor="eager", profile=True)
    model.sequence().forward([1, 2, 3])
    model.write_profile(tmp_path)
    body = (tmp_path / "body" / "op_statistic.csv").read_text()
    for op in ("embedding", "attention", "kv_cache_write", "grouped_matmul", "moe_finalize_routing", "rms_norm"):
        assert op in body, (op, body[:400])
    assert "linear" in (tmp_path / "head" / "op_statistic.csv").read_text()
