"""Tiny random transformers models of the MoE families the tests run
(every layer MoE, a vocabulary of 96): shared by test_hf_experts.py and
test_optimize.py."""

import torch
import transformers

VOCAB = 96
_COMMON = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def tiny(family, dtype=torch.float32):
    """A two-layer random model of the family, in eval mode."""
    torch.manual_seed(3)
    if family == "qwen3":
        cfg = transformers.Qwen3MoeConfig(intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                                          num_experts_per_tok=2, head_dim=16, mlp_only_layers=[], **_COMMON)
        model = transformers.Qwen3MoeForCausalLM(cfg)
    elif family == "mixtral":
        cfg = transformers.MixtralConfig(intermediate_size=48, num_local_experts=6, num_experts_per_tok=2, **_COMMON)
        model = transformers.MixtralForCausalLM(cfg)
    elif family == "olmoe":
        cfg = transformers.OlmoeConfig(intermediate_size=32, num_experts=8, num_experts_per_tok=3,
                                       norm_topk_prob=False, **_COMMON)
        model = transformers.OlmoeForCausalLM(cfg)
    elif family == "deepseek_v2":
        cfg = transformers.DeepseekV2Config(intermediate_size=96, moe_intermediate_size=32, n_routed_experts=8,
                                            num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=0,
                                            topk_method="greedy", routed_scaling_factor=1.5, q_lora_rank=None,
                                            kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                                            **_COMMON)
        model = transformers.DeepseekV2ForCausalLM(cfg)
    elif family == "deepseek_v3":
        cfg = transformers.DeepseekV3Config(intermediate_size=96, moe_intermediate_size=32, n_routed_experts=8,
                                            num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1,
                                            first_k_dense_replace=0, q_lora_rank=None, kv_lora_rank=16,
                                            qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, **_COMMON)
        model = transformers.DeepseekV3ForCausalLM(cfg)
    elif family == "qwen2":  # a sigmoid-gated shared expert
        cfg = transformers.Qwen2MoeConfig(intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                                          num_experts_per_tok=2, shared_expert_intermediate_size=32, **_COMMON)
        model = transformers.Qwen2MoeForCausalLM(cfg)
    elif family == "gpt_oss":  # a clamped SwiGLU of its own
        cfg = transformers.GptOssConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                        num_local_experts=4, num_experts_per_tok=2,
                                        layer_types=["full_attention"] * 2)
        model = transformers.GptOssForCausalLM(cfg)
    else:
        raise ValueError(family)
    return model.to(dtype).eval()
