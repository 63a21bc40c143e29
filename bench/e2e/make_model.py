"""Writes a truncated MoE model of a real shape, random bf16 weights, with
save_pretrained (the end-to-end benchmark's checkpoint; bench/e2e/README.md).

    .venv/bin/python bench/e2e/make_model.py qwen3-30b-a3b DIR [--layers 8]
    .venv/bin/python bench/e2e/make_model.py deepseek-v2-lite DIR [--layers 8]

The configuration is the model's own (config.json of Qwen/Qwen3-30B-A3B and
deepseek-ai/DeepSeek-V2-Lite: hidden size, heads, experts, top-k, the real
vocabulary) with fewer layers. Weights: normal(0, 0.02) for matrices (the
configs' initializer_range), 1 for norms, 0 for biases and the router's
correction bias; seeded. A tokenizer is written too (a byte-level BPE of
the model's vocabulary size: the bytes, pairs of ASCII letters, then
placeholders), since llama.cpp's converter and loader need one; the benchmark feeds
token ids, so the text side plays no part in the numbers.
"""

import argparse
import json
import os
import sys

import torch
import transformers

SHAPES = {
    "qwen3-30b-a3b": dict(
        cls="Qwen3MoeConfig", vocab_size=151936, hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
        num_experts=128, num_experts_per_tok=8, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
        norm_topk_prob=True, rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=40960,
        tie_word_embeddings=False, mlp_only_layers=[], decoder_sparse_step=1, bos_token_id=151643,
        eos_token_id=151645),
    "deepseek-v2-lite": dict(
        cls="DeepseekV2Config", vocab_size=102400, hidden_size=2048, intermediate_size=10944,
        moe_intermediate_size=1408, n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6,
        first_k_dense_replace=1, num_attention_heads=16, num_key_value_heads=16, kv_lora_rank=512, q_lora_rank=None,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, topk_method="greedy", routed_scaling_factor=1.0,
        norm_topk_prob=False, n_group=1, topk_group=1, rms_norm_eps=1e-6, rope_theta=10000.0,
        max_position_embeddings=4096, tie_word_embeddings=False, bos_token_id=100000, eos_token_id=100001),
}


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "layernorm" in name:
                p.fill_(1.0)
            elif p.dim() >= 2:
                for chunk in p.view(p.shape[0], -1):  # row by row: no fp32 copy of a whole expert tensor
                    chunk.copy_(torch.randn(chunk.shape, generator=g) * 0.02)
            else:
                p.zero_()
        for name, b in model.named_buffers():
            if "e_score_correction_bias" in name:
                b.zero_()


def write_tokenizer(directory, vocab_size, bos, eos):
    """A byte-level BPE tokenizer of vocab_size tokens, no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    byte_tokens = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(byte_tokens)}
    merges = []  # llama.cpp's loader wants some: pairs of letters
    letters = [t for t in byte_tokens if t.isalpha() and t.isascii()]
    for a in letters:
        for b in letters:
            if len(vocab) < vocab_size:
                merges.append((a, b))
                vocab[a + b] = len(vocab)
    while len(vocab) < vocab_size:
        vocab[f"<tok{len(vocab)}>"] = len(vocab)
    inv = {i: t for t, i in vocab.items()}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=inv[bos], eos_token=inv[eos])
    fast.save_pretrained(directory)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--tokenizer-only":  # an existing checkpoint's tokenizer again
        cfg = transformers.AutoConfig.from_pretrained(sys.argv[2])
        return write_tokenizer(sys.argv[2], cfg.vocab_size, cfg.bos_token_id, cfg.eos_token_id)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("directory")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    spec = dict(SHAPES[a.shape])
    cfg = getattr(transformers, spec.pop("cls"))(num_hidden_layers=a.layers, **spec)
    cfg.dtype = torch.bfloat16
    torch.set_default_dtype(torch.bfloat16)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    torch.set_default_dtype(torch.float32)
    init_weights(model, a.seed)
    os.makedirs(a.directory, exist_ok=True)
    model.save_pretrained(a.directory)
    write_tokenizer(a.directory, cfg.vocab_size, cfg.bos_token_id, cfg.eos_token_id)
    with open(os.path.join(a.directory, "superkernel_e2e.json"), "w") as f:
        json.dump({"shape": a.shape, "layers": a.layers, "seed": a.seed}, f)
    n = sum(p.numel() for p in model.parameters())
    print(f"{a.shape}: {a.layers} layers, {n / 1e9:.2f} B parameters, written to {a.directory}")


if __name__ == "__main__":
    main()
