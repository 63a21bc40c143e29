/*
 * model_graph.h — the graphs of a decoder model and the builder they
 * share: calls that stop at the first error (kept with its message), and
 * weights looked up by name, checked and borrowed as constants.
 *
 * The body graph (decoder_graph.c): ids int32 [T] and positions int32 [T]
 * (T up to max_tokens, a run-time count), the KV caches the layers declare
 * (graph inputs that kv_cache_write writes in place: "layers.L.k_cache" and
 * "layers.L.v_cache" [max_context, kv_heads, head_dim], or MLA's
 * "layers.L.latent_cache" [max_context, 1, kv_lora_rank + rope]) ->
 * "hidden" [T, H], the final norm's output. One scope per layer: its
 * attention (attention_graph.c) and its MLP or MoE block (ffn_graph.c).
 * The head graph: "hidden" [T, H] -> "logits" fp32 [T, vocab].
 */
#ifndef SK_MODEL_MODEL_GRAPH_H
#define SK_MODEL_MODEL_GRAPH_H

#include <stddef.h>

#include "model/decoder.h"
#include "model/weight_store.h"

#define SK__MB_NAME_MAX 256
#define SK__MB_NONE SK_VALUE_NONE

typedef struct sk__model_cache {
  char name[48];  /* the body's input */
  size_t bytes;   /* one sequence's */
  size_t input;   /* its index among the body's inputs (set once compiled) */
} sk__model_cache;

typedef struct sk__model_builder {
  sk_graph *g;
  const sk__decoder *d;
  sk_model_weight_fn weight;
  void *weight_user;
  int64_t max_tokens, max_context;
  const char *options;      /* each layer scope's */
  sk_status st;             /* the first error (its message is sk_last_error's) */
  size_t weight_bytes;      /* of the weights taken (borrowed or converted) */
  sk__model_cache *caches;  /* room for 2 per layer; the body fills n_caches */
  int n_caches;
  bool w8a8;                /* quantize = "w8a8" (w8a8_graph.c) */
  sk__weight_store *store;  /* the model's: where quantized weights go */
  float *scratch;           /* w8a8: rows widened for quantizing (scratch_k deep) */
  int64_t scratch_k;
  /* w8a8: the last input dynamic_quant quantized and its outputs (rows,
   * row scales): q, k and v (gate and up) share their input's. */
  sk_value quantized_of, quantized[2];
} sk__model_builder;

/* Builds the body or the head into b->g (a new graph); b->st says how it went. */
void sk__build_body(sk__model_builder *b);
void sk__build_head(sk__model_builder *b);

/* The float dtype of the model's weights: the embedding table's. */
sk_status sk__model_weight_dtype(sk_model_weight_fn weight, void *user, sk_dtype *out);

/* ---- the builder's calls (graph_build.c); each returns at once after an error ---- */
bool sk__mb_ok(const sk__model_builder *b);
void sk__mb_failed(sk__model_builder *b, sk_status st);
/* Weight `name` as a borrowed constant of dtype (SK_DTYPE_INVALID: any
 * float) and shape; SK_STATUS_NOT_FOUND (no error kept) when the caller
 * has none. */
sk_status sk__mb_try_weight(sk__model_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                            sk_value *out);
/* The caller's tensor `name` checked against dtype (SK_DTYPE_INVALID: any
 * float), rank and shape, not added to the graph: SK_STATUS_NOT_FOUND (no
 * error kept) when the caller has none. sk__mb_lookup: one the model must
 * have (false after any error, a missing one included). */
sk_status sk__mb_try_lookup(sk__model_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                            sk_model_tensor *t);
bool sk__mb_lookup(sk__model_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                   sk_model_tensor *t);
/* A weight the model must have (printf-style name). */
sk_value sk__mb_weight(sk__model_builder *b, sk_dtype dtype, int rank, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A weight converted to an fp32 constant the graph owns (a router that
 * computes in fp32 from a 16-bit checkpoint: DeepSeek's). */
sk_value sk__mb_weight_fp32(sk__model_builder *b, int rank, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sk__mb_node(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                 const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs);
/* A node's first output. */
sk_value sk__mb_one(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                    const sk_attr *attrs, size_t n_attrs);
sk_value sk__mb_linear(sk__model_builder *b, const char *name, sk_value x, sk_value w, sk_value bias);
/* A linear layer of the model, x @ W^T (+ bias), W its weight [rows, cols]
 * (printf-style name): `linear` on the borrowed weight, or with w8a8 its
 * int8 copy (w8a8_graph.c). */
sk_value sk__mb_proj(sk__model_builder *b, const char *name, sk_value x, int64_t rows, int64_t cols, sk_value bias,
                     const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* x as [-1, d1, d2] (d2 0: [-1, d1]). */
sk_value sk__mb_reshape(sk__model_builder *b, const char *name, sk_value x, int64_t d1, int64_t d2);
/* x RMS-normed by gamma; with delta, (x + delta) normed and *sum the new x. */
sk_value sk__mb_norm(sk__model_builder *b, const char *name, sk_value x, sk_value delta, sk_value gamma,
                     sk_value *sum);
/* A cache input of the body [max_context, heads, dim], recorded in b->caches. */
sk_value sk__mb_cache(sk__model_builder *b, const char *name, int64_t heads, int64_t dim);
/* x's last dim split in two parts (sizes a, b). */
void sk__mb_split(sk__model_builder *b, const char *name, sk_value x, int64_t a, int64_t c, sk_value *first,
                  sk_value *second);
/* rotary_embedding of q and k with the model's RoPE over rotary_dim (0: all). */
void sk__mb_rope(sk__model_builder *b, sk_value *q, sk_value *k, sk_value positions, int64_t rotary_dim);

/* w8a8's weights (w8a8_graph.c): w [n, k] (fp32 / fp16 / bf16; element
 * (i, c) at i * n_stride + c * k_stride) per output channel i into q's
 * columns (q[c * q_ld + i]) and scale[i]: s = max |w[i, :]| / 127 (1 for
 * an all-zero channel), q = clip(rint(w / s), -127, 127), half to even;
 * rows: SK__W8A8_ROWS * k floats of scratch. */
#define SK__W8A8_ROWS 8
void sk__w8a8_quantize_channels(const void *w, sk_dtype dt, int64_t n, int64_t k, int64_t n_stride, int64_t k_stride,
                                int8_t *q, int64_t q_ld, float *scale, float *rows);

/* ---- the blocks ---- */
/* Grouped-query attention of layer l (attention_graph.c), its o_proj output. */
sk_value sk__mb_attention(sk__model_builder *b, int64_t l, sk_value h, sk_value positions);
/* DeepSeek's latent attention of layer l, its o_proj output. */
sk_value sk__mb_mla(sk__model_builder *b, int64_t l, sk_value h, sk_value positions);
/* The SwiGLU MLP whose weights are "<prefix>{gate,up,down}_proj.weight"
 * (prefix: "model.layers.L.mlp.", say; ffn_graph.c). */
sk_value sk__mb_mlp(sk__model_builder *b, const char *prefix, int64_t inter, sk_value h);
/* The names of a MoE block's weights: "<prefix>gate.weight" (the router),
 * "<prefix>experts.gate_up_proj" / "down_proj" (fused) and
 * "<prefix>experts.J.<proj[0..2]>.weight" (gate, up, down), the shared
 * experts "<prefix><shared_prefix>.{gate,up,down}_proj.weight". */
typedef struct sk__moe_names {
  char prefix[SK__MB_NAME_MAX / 2];
  const char *proj[3];
} sk__moe_names;
/* Layer l's: "model.layers.L.mlp." with {gate,up,down}_proj where the
 * caller has mlp's router (transformers' state_dict), else the family's
 * checkpoint names (Mixtral's block_sparse_moe with w1, w3, w2). */
void sk__mb_moe_names(sk__model_builder *b, int64_t l, sk__moe_names *out);
/* w8a8's routed experts: the dispatch of h by expert_idx into routing[4]
 * (moe_init_routing's outputs) and the experts' rows in the model's dtype. */
sk_value sk__mb_experts_w8a8(sk__model_builder *b, const sk__moe_names *n, sk_value h, sk_value expert_idx,
                             sk_value routing[4]);
/* The MoE block (b->d->moe) on h, its weights named by n: the block's
 * output, plus resid when resid is not NONE (the combine adds it). The
 * one builder of a MoE block: a model's layers (decoder_graph.c) and a
 * block on its own (moe_block.c: superkernel.optimize's per-block path). */
sk_value sk__mb_moe(sk__model_builder *b, const sk__moe_names *n, sk_value h, sk_value resid);

#endif
