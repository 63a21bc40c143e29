/*
 * attention_layer.h — the `attention` benchmark scenarios (attention_layer.c):
 * one attention op of a real model's heads on a bf16 KV cache, named
 *
 *   attention:PRESET:decode:ctxN   one query at the last row of an N-row cache
 *   attention:PRESET:prefill:tN    N queries, causal, filling an N-row cache
 *                                  from empty (positions 0 .. N - 1)
 *
 * PRESET: qwen3-30b-a3b (32 q heads / 4 kv heads, D = 128), tiny (4 / 2,
 * D = 64). The inputs are attn_q, attn_k_cache, attn_v_cache (uniform
 * values) and attn_positions (the rows above).
 *
 *   mla:PRESET:decode:ctxN, mla:PRESET:prefill:tN  the same for one
 *                                  mla_attention op (DeepSeek's latent
 *                                  attention, absorbed form)
 *
 * PRESET: deepseek-v2-lite (16 heads, kv_lora_rank 512, rope 64, nope 128,
 * v 128), tiny (4 heads, 64, 16, 32, 32). Its inputs are mla_q_nope,
 * mla_q_pe, mla_latent_cache [N, 1, R + P], attn_positions and the weight
 * mla_kv_b_weight, all bf16.
 */
#ifndef SK_TOOLS_ATTENTION_LAYER_H
#define SK_TOOLS_ATTENTION_LAYER_H

#include "models.h"

typedef struct skm_attention {
  const char *preset, *about;
  int64_t hq, hkv, d;
  int64_t t, s; /* queries, cache rows */
  int decode;
  int mla;                      /* an mla: scenario; hq its heads */
  int64_t rank, rope, nope, vd; /* mla: kv_lora_rank, head dims */
} skm_attention;

/* Parses an attention scenario name into *out; 0 when it is not one. */
int skm_attn_parse(const char *name, skm_attention *out);
struct skm_builder;
void skm_attn_graph(struct skm_builder *b, const skm_attention *a, const char *options);
/* Sets attn_positions to the rows the name says. */
void skm_attn_adjust_values(const skm_attention *a, skm_io *values);
/* Bytes a run reads at least: the K and V rows it attends (decode: the
 * whole cache; mla: the latent rows and kv_b_proj's weight), the floor of a
 * decode step over the read bandwidth. */
double skm_attn_bytes(const skm_attention *a);

#endif
