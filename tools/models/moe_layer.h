/*
 * moe_layer.h — the `moe-layer` model family (moe_layer.c): a MoE block of
 * a real model's shape, named moe-layer:PRESET[:tN][:tmax=N][:bf16|fp16|int8][:eN]
 * (tmax=N: one program for every token count up to N, run at tN).
 */
#ifndef SK_TOOLS_MOE_LAYER_H
#define SK_TOOLS_MOE_LAYER_H

#include "models.h"

typedef struct skm_moe_layer {
  const char *preset, *about;
  int64_t t, hidden, experts, top_k, inter, shared;
  int sigmoid, groups, k_group, renorm; /* sigmoid 0: softmax gating; else sigmoid over groups (1: none) */
  double scaling;
  sk_dtype dtype;         /* x, y, the shared experts */
  sk_dtype expert_dtype;  /* the routed experts' weights: dtype, or int8 (w8a8) */
  int skew;               /* skewed routing (":skew"): a few hot experts take most rows */
  int64_t tmax;           /* ":tmax=N": a run-time token count up to N (t: a run's count); 0: static t */
} skm_moe_layer;

/* "tiny, qwen3-30b-a3b, ..." */
const char *skm_moe_presets(void);
/* While layer is set (a checkpoint's, checkpoint.h; NULL: unset), the
 * names "moe-layer" and "moe-layer:MODIFIERS" (tN, a dtype, eN; no PRESET)
 * parse as that layer with the modifiers applied. */
void skm_moe_use_checkpoint(const skm_moe_layer *layer);
/* Parses a moe-layer name into *out; 0 when it is not one (or malformed). */
int skm_moe_parse(const char *name, skm_moe_layer *out);
struct skm_builder;
/* Adds the layer to b's graph (moe_layer.c has the graph); skm_build calls it. */
void skm_moe_graph(struct skm_builder *b, const skm_moe_layer *m, const char *options);

/* Adjusts the drawn values (skm_values) for m: with skew, the gate rows of
 * the first max(top-k, E / 8) experts are scaled by SKM_MOE_SKEW, so their
 * logits spread 4x wider and they win most top-k picks: routing as a model
 * with popular experts sees it, fewer experts hit by more rows each. */
#define SKM_MOE_SKEW 4.0f
void skm_moe_adjust_values(const skm_moe_layer *m, skm_io *values);

/* Bytes one run of the layer reads at least, given its routing (its
 * expert_ends output, cumulative rows per expert): the weights of every
 * expert hit, the gate, the shared experts, x and y. What a decode step's
 * bandwidth floor divides. */
double skm_moe_bytes(const skm_moe_layer *m, const int64_t *expert_ends);

#endif
