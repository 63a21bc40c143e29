/*
 * model_graph.h — the graphs of a decoder model (decoder_graph.c) and the
 * builder they share: calls that stop at the first error (kept with its
 * message) and weights looked up by name, checked and borrowed as
 * constants.
 *
 * The body graph: ids int32 [T] and positions int32 [T] (T up to
 * max_tokens, a run-time count), per layer L the caches "layers.L.k_cache"
 * and "layers.L.v_cache" [max_context, kv_heads, head_dim] (inputs that
 * kv_cache_write writes in place) -> "hidden" [T, H], the final norm's
 * output. One scope per layer. The head graph: "hidden" [T, H] -> "logits"
 * fp32 [T, vocab].
 */
#ifndef SK_MODEL_MODEL_GRAPH_H
#define SK_MODEL_MODEL_GRAPH_H

#include <stddef.h>

#include "model/decoder.h"

typedef struct sk__model_builder {
  sk_graph *g;
  const sk__decoder *d;
  sk_model_weight_fn weight;
  void *weight_user;
  int64_t max_tokens, max_context;
  const char *options;      /* each layer scope's */
  sk_status st;             /* the first error (its message is sk_last_error's) */
  size_t weight_bytes;      /* of the weights taken */
} sk__model_builder;

/* Builds the body or the head into b->g (a new graph); b->st says how it went. */
void sk__build_body(sk__model_builder *b);
void sk__build_head(sk__model_builder *b);

/* The float dtype of the model's weights: the embedding table's. */
sk_status sk__model_weight_dtype(sk_model_weight_fn weight, void *user, sk_dtype *out);

#endif
