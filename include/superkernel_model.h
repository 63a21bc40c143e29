/*
 * superkernel_model.h — whole decoder models run by the library: a Hugging
 * Face config.json and the model's weights in, a model that runs
 * sequences (prefill in one pass or in chunks, decode token by token) out.
 * docs/models.md says which families and config fields are supported.
 *
 *   sk_model_config cfg = {.config_json = text, .weight = lookup, .weight_user = dir,
 *                          .team = team, .max_context = 4096};
 *   sk_model *model;   sk_model_create(&cfg, &model);
 *   sk_model_seq *seq; sk_model_seq_create(model, &seq);
 *   sk_model_forward(seq, team, prompt, n, logits, 1);   // the prompt; the last token's logits
 *   sk_model_forward(seq, team, &next, 1, logits, 1);    // one decode step
 *
 * The model (immutable once made) holds the compiled programs, one for the
 * decoder's body (the embedding, every layer, the final norm: one super
 * kernel per layer) and one for the LM head, each of a run-time token
 * count up to max_tokens. A sequence holds its KV cache (max_context rows
 * per layer) and its length; several sequences of one model run in
 * parallel, each on its own team.
 *
 * Exact and invariant: a token's logits are bitwise the same whether its
 * sequence's prompt ran in one forward, in chunks of any size or token by
 * token, on any executor, team size and ISA path (docs/ops.md's
 * contracts, which every op of the programs keeps).
 */
#ifndef SUPERKERNEL_MODEL_H
#define SUPERKERNEL_MODEL_H

#include "superkernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sk_model sk_model;
typedef struct sk_model_seq sk_model_seq;

#define SK_MODEL_MAX_RANK 8

/* One weight as the caller holds it: dense, row-major. */
typedef struct sk_model_tensor {
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MODEL_MAX_RANK];
  const void *data;
} sk_model_tensor;

/* Looks up the weight `name` (the name transformers' state_dict gives it:
 * "model.layers.0.self_attn.q_proj.weight", and the experts fused as
 * "model.layers.0.mlp.experts.gate_up_proj" or one tensor per expert as a
 * checkpoint stores them). Fills *out and returns SK_STATUS_OK, or returns
 * SK_STATUS_NOT_FOUND when there is no such tensor (the builder may then
 * try the other layout). Any other status fails sk_model_create with the
 * callback's sk_last_error message. The data is borrowed: it must stay
 * valid and unchanged until the model is destroyed. */
typedef sk_status (*sk_model_weight_fn)(void *user, const char *name, sk_model_tensor *out);
/* Called by a weight callback before it returns a failure: its own words
 * for what went wrong, which sk_model_create reports as "weight NAME:
 * MESSAGE" (without it, only the status is known). */
SK_API void sk_model_weight_error(const char *message);

typedef struct sk_model_config {
  size_t struct_size;       /* sizeof(sk_model_config) or 0 */
  const char *config_json;  /* config.json's text, NUL-terminated */
  sk_model_weight_fn weight;
  void *weight_user;
  /* The most tokens one program run takes; a forward of more runs in
   * chunks of it (the same bits). 0: 512. */
  int64_t max_tokens;
  /* KV cache rows of each sequence: its longest length. 0: the config's
   * max_position_embeddings, at most 4096. */
  int64_t max_context;
  const sk_team *team;      /* the team runs use (its size plans the super kernels); NULL: one core */
  sk_executor executor;     /* SK_EXECUTOR_DEFAULT: $SK_EXECUTOR, else auto */
  const char *options;      /* super-kernel options of every layer's scope (docs/options.md); NULL: none */
  /* 1: the programs time every launch (sk_compile_config.profile), for
   * sk_model_write_profile; with SK_EXECUTOR_EAGER every op is timed on
   * its own. 0: no timing. */
  int profile;
  /* NULL or "": the weights as they are. "w8a8": every linear layer (the
   * attention's and MLPs' projections, the routed and shared experts, the
   * LM head; not the routers, and not the weights latent attention folds
   * in) quantized at create, per output channel to int8 (max |w| / 127),
   * and its input per row at run time (docs/models.md). The int8 copies
   * live in file-backed memory that is paged out once packed. */
  const char *quantize;
  /* The programs' numerics contract (sk_numerics, superkernel.h):
   * SK_NUMERICS_AMX sums their bf16 products as AMX-BF16 does (its rate on
   * CPUs that have it); SK_NUMERICS_UNSET: $SK_NUMERICS, else default. */
  sk_numerics numerics;
} sk_model_config;

/* Reads the config, looks up and checks every weight, builds and compiles
 * the programs. Errors name what is wrong: a config field (missing, of the
 * wrong type or unsupported, and its value), a weight (missing, or its
 * shape or dtype, with what was expected), an unsupported family (the
 * supported ones listed). */
SK_API sk_status sk_model_create(const sk_model_config *cfg, sk_model **model_out);
/* Destroy every sequence first. NULL is accepted. */
SK_API void sk_model_destroy(sk_model *model);

/* With cfg.profile: the body's and the head's profiles over the runs so
 * far, as dir/body/ and dir/head/ (sk_program_write_profile's
 * op_statistic.csv and trace.json each; the head has none before a
 * forward asks for logits). */
SK_API sk_status sk_model_write_profile(sk_model *model, const char *dir);

/* "llama, mistral, qwen2, qwen3, qwen3_moe, ...": config.json model_types the builder takes. */
SK_API const char *sk_model_families(void);

typedef struct sk_model_info {
  const char *family;      /* config.json's model_type */
  const char *about;       /* one line: layers, heads, experts, dtype */
  sk_dtype dtype;          /* activations, KV cache and logits' source */
  int64_t vocab, hidden, layers, max_tokens, max_context;
  /* The bytes of both programs' weights, each counted in each program
   * that holds it: a tied embedding table twice (the body's embedding, of
   * which a token reads one row, and the head). */
  size_t weight_bytes;
  size_t cache_bytes;      /* one sequence's KV cache */
  /* A MoE layer's routed experts and how many of them a token reads (0, 0:
   * a dense model). */
  int64_t experts, experts_per_token;
} sk_model_info;
SK_API sk_status sk_model_get_info(const sk_model *model, sk_model_info *info_out);

/* A sequence: its KV cache (allocated now) and length 0. */
SK_API sk_status sk_model_seq_create(sk_model *model, sk_model_seq **seq_out);
SK_API void sk_model_seq_destroy(sk_model_seq *seq);
SK_API int64_t sk_model_seq_length(const sk_model_seq *seq);
/* Forgets the tokens from `length` on (0: a new sequence); a length above
 * the current one is an error. */
SK_API sk_status sk_model_seq_truncate(sk_model_seq *seq, int64_t length);

/* Appends ids[0..n) to the sequence, running them through the model (in
 * chunks of max_tokens), on team (one of cfg.team's size; NULL: a
 * one-core model's caller thread). logits: NULL, or n_logits * vocab
 * floats (fp32) receiving the logits of the last n_logits of these tokens
 * (0 <= n_logits <= n). An id outside the vocabulary or a sequence past
 * max_context is an error naming it, with nothing appended. */
SK_API sk_status sk_model_forward(sk_model_seq *seq, sk_team *team, const int32_t *ids, int64_t n, float *logits,
                                  int64_t n_logits);

/* ---- One MoE block on its own ----
 *
 * The MoE block a model's layers are built with (router, dispatch, routed
 * experts, shared experts, combine: the same builder), as one program of a
 * run-time token count in one scope "moe": what superkernel.optimize's
 * per-block path runs. cfg->config_json describes the block, not a model
 * (docs/models.md, "A MoE block on its own"):
 *
 *   dtype                     "bfloat16", "float16" or "float32": x, y and the weights
 *   hidden_size, num_experts, num_experts_per_tok, moe_intermediate_size   (required)
 *   router                    "softmax" (default) or "sigmoid" (DeepSeek-V3's, with
 *                             gate.e_score_correction_bias; always renormalized)
 *   norm_topk_prob            the k weights divided by their sum (default false)
 *   router_logits_fp32        logits from fp32 x and weight (DeepSeek), else in dtype
 *   router_weights_rounded    the k weights rounded to dtype (Qwen, OLMoE), else fp32
 *   n_group, topk_group       group-limited choice (softmax: each group scored by its
 *                             best expert, DeepSeek-V2's; sigmoid: by its top-2 sum)
 *   routed_scaling_factor     the k weights' factor (default 1)
 *   shared_intermediate_size  the shared experts' MLP width (0: none), its weights
 *                             under shared_prefix (default "shared_experts"); with
 *                             shared_gate its output times sigmoid(x @ shared_expert_gate^T)
 *   experts_transposed        fused experts stored [E, H, 2I] and [E, I, H]
 *
 * Weights, looked up by cfg->weight: gate.weight [E, H], experts.gate_up_proj
 * [E, 2I, H] and experts.down_proj [E, H, I] (with optional
 * experts.gate_up_proj_bias [E, 2I] and experts.down_proj_bias [E, H]), or
 * experts.J.{gate,up,down}_proj.weight per expert; the shared experts'
 * <shared_prefix>.{gate,up,down}_proj.weight, shared_expert_gate.weight
 * [1, H]. cfg->max_tokens (a run's most tokens; more run in chunks, the
 * same bits), team, executor, options (the scope's), quantize ("w8a8":
 * the routed and shared experts int8, as in a model) and numerics as for
 * sk_model_create; max_context and profile are not used. */
typedef struct sk_moe_block sk_moe_block;
SK_API sk_status sk_moe_block_create(const sk_model_config *cfg, sk_moe_block **block_out);
/* NULL is accepted. */
SK_API void sk_moe_block_destroy(sk_moe_block *block);
/* y = the block of x, both dense [tokens, hidden_size] of the block's
 * dtype, on team (one of cfg.team's size; NULL: a one-core block's caller
 * thread). Runs of one block take turns. A token's row is the same bits
 * in any batch, chunking, team or ISA path. */
SK_API sk_status sk_moe_block_run(sk_moe_block *block, sk_team *team, const void *x, void *y, int64_t tokens);
/* One line: experts, top-k, router, shared experts, dtype, w8a8. */
SK_API const char *sk_moe_block_about(const sk_moe_block *block);
/* The MoE block of layer `layer` of a model (config.json's text; layer <
 * 0: its first MoE layer) as sk_moe_block_create's description, read by
 * the model's family as sk_model_create reads it: *json_out (release it
 * with sk_free) and *layer_out (may be NULL) the layer. "dtype" is there
 * when the config names one (torch_dtype or dtype), else the caller adds
 * it. The block's weights are the layer's "model.layers.L.mlp.<name>".
 * An unsupported family or field, a dense model, a layer past the model's
 * or a dense one fail naming it. */
SK_API sk_status sk_model_moe_block_description(const char *config_json, int64_t layer, char **json_out,
                                                int64_t *layer_out);

#ifdef __cplusplus
}
#endif

#endif
