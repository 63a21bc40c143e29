/* Tiny random decoder models for the whole-model tests: a Qwen3-MoE and a
 * Llama config.json (2 layers, hidden 64, vocab 96) and their weights as
 * transformers' state_dict names them, bf16 from a fixed seed, in memory
 * with a lookup for sk_model_create. test_model.c runs them through the
 * library; tiny_checkpoint.c writes them as checkpoint directories for
 * `sk run model` / `sk bench model`. */
#ifndef SK_TESTS_TINY_MODEL_H
#define SK_TESTS_TINY_MODEL_H

#include <stdint.h>

#include "superkernel_model.h"

#define TINY_MAX_WEIGHTS 256

enum { TINY_V = 96 };

typedef struct tiny_weight {
  char name[96];
  sk_model_tensor t;
  uint16_t *data;
} tiny_weight;

typedef struct tiny_store {
  tiny_weight w[TINY_MAX_WEIGHTS];
  int n;
  int per_expert;           /* hide the fused experts: the checkpoint layout */
  const char *hide;         /* a name the lookup does not find */
  const char *wrong_shape;  /* a name whose shape is off by one row */
} tiny_store;

extern const char *const TINY_QWEN3_MOE, *const TINY_LLAMA;

/* The weights of TINY_QWEN3_MOE (moe) or TINY_LLAMA: the MoE layer's
 * experts both fused (mlp.experts.gate_up_proj, mlp.experts.down_proj)
 * and one tensor per expert, holding the same numbers. */
void tiny_make_store(tiny_store *s, int moe);
void tiny_free_store(tiny_store *s);
/* sk_model_weight_fn over a tiny_store (user). */
sk_status tiny_lookup(void *user, const char *name, sk_model_tensor *out);
/* Whether a name is one of the fused expert tensors (no checkpoint holds them). */
int tiny_is_fused_expert(const char *name);

#endif
