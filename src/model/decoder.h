/*
 * decoder.h — a decoder-only model as the builder sees it: what a family
 * file reads from config.json (family.h), and what decoder_graph.c builds
 * from it. One description for every family: the attention block, a
 * dense MLP or a MoE block per layer, the norms, the embedding and the LM
 * head; a family only says which pieces its layers have and where its
 * weights are.
 */
#ifndef SK_MODEL_DECODER_H
#define SK_MODEL_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "superkernel_model.h"

#define SK__MODEL_MAX_LAYERS 1024

typedef struct sk__rope {
  double theta;
  int scaling_type;        /* rotary_embedding's: 0 none, 1 linear, 2 yarn */
  double factor;
  int64_t original_max_positions;
  double beta_fast, beta_slow, mscale, mscale_all_dim;
  int64_t rotary_dim;      /* 0: the head dim */
  int interleaved;         /* 0 neox (rotate_half), 1 GPT-J pairs */
} sk__rope;

typedef enum sk__router {
  SK__ROUTER_SOFTMAX,      /* softmax over the experts, top-k (renorm: divided by their sum) */
  SK__ROUTER_SIGMOID_GROUPED /* DeepSeek-V3: sigmoid, + correction bias for the choice, top groups */
} sk__router;

typedef struct sk__moe {
  int64_t experts, top_k, inter;   /* routed experts: count, per token, intermediate size */
  bool renorm;                     /* norm_topk_prob: the k weights divided by their sum */
  sk__router router;
  bool router_fp32;                /* the router's logits from fp32 x and weight (DeepSeek), else the model's dtype */
  bool weights_rounded;            /* the k weights rounded to the model's dtype (Qwen, OLMoE), else kept fp32 */
  int64_t groups, topk_group;      /* n_group, topk_group (SOFTMAX: DeepSeek-V2's group-limited greedy, each
                                      group scored by its best expert, when groups > 1) */
  double scaling;                  /* routed_scaling_factor (1: none) */
  int64_t shared_inter;            /* 0: no shared expert */
  const char *shared_prefix;       /* "shared_experts" (DeepSeek) or "shared_expert" (Qwen2-MoE) */
  bool shared_gate;                /* Qwen2-MoE: the shared output times sigmoid(x @ shared_expert_gate^T) */
  /* Where the family's checkpoint files keep a MoE block under other names
   * than transformers' state_dict (mlp.gate.weight, mlp.experts.*): Mixtral's
   * "block_sparse_moe" with experts.J.{w1,w3,w2} for gate, up, down. NULL:
   * the state_dict's names (mlp, experts.J.{gate,up,down}_proj). */
  const char *checkpoint_block;
  const char *checkpoint_proj[3];
  /* transformers' experts with is_transposed (an MoE block on its own,
   * moe_block.c): gate_up_proj [E, H, 2I], down_proj [E, I, H]. */
  bool experts_transposed;
} sk__moe;

/* DeepSeek's multi-head latent attention (mla_attention's absorbed form). */
typedef struct sk__mla {
  int64_t q_lora_rank;             /* 0: q_proj; else q_a_proj, q_a_layernorm, q_b_proj */
  int64_t kv_lora_rank, nope, rope, v_head_dim;
  double scale;                    /* the scores' factor (YaRN's mscale^2 folded in) */
} sk__mla;

typedef struct sk__decoder {
  const char *family;              /* config.json's model_type (the family's own string) */
  sk_dtype dtype;                  /* the weights' float dtype: activations and caches too */
  int64_t vocab, hidden, layers;
  int64_t heads, kv_heads, head_dim;
  int64_t max_positions;           /* max_position_embeddings */
  double eps;                      /* rms_norm_eps */
  sk__rope rope;
  bool qk_norm;                    /* q / k RMS-normed per head before RoPE (Qwen3) */
  bool qk_norm_full;               /* q / k RMS-normed over the whole projection (OLMoE) */
  bool qkv_bias;                   /* q / k / v projections with a bias (Qwen2, Llama's attention_bias) */
  bool o_bias;                     /* o_proj with a bias (Llama's attention_bias) */
  bool tie_embeddings;             /* the LM head is the embedding table */
  int64_t sliding_window;          /* 0: none */
  int64_t mlp_inter;               /* the dense layers' intermediate size */
  sk__moe moe;                     /* experts 0: every layer dense */
  bool mla;                        /* attention is DeepSeek's MLA (mla below), else grouped-query */
  sk__mla mla_dims;
  bool moe_layer[SK__MODEL_MAX_LAYERS]; /* per layer: MoE (true) or the dense MLP */
  /* Set by the caller before a family reads the config: only the MoE
   * layers are wanted (sk_model_moe_block_description), so what the
   * attention's ops would refuse is not checked. */
  bool moe_only;
} sk__decoder;

#endif
