/*
 * model_builder.h — the graph builder the model families share (models.c
 * defines it; moe_layer.c uses it): calls that stop at the first error and
 * remember it with a one-line message, and the weights-as-constants rule.
 */
#ifndef SK_TOOLS_MODEL_BUILDER_H
#define SK_TOOLS_MODEL_BUILDER_H

#include "models.h"

typedef struct skm_builder {
  sk_graph *g;
  const skm_io *weights; /* non-NULL: weights become constants with these values */
  int borrow;            /* ... borrowed, not copied (skm_config.borrow_weights) */
  sk_status st;
  char *msg;
  size_t msg_size;
} skm_builder;

/* Records st (an error) and what failed, with sk_last_error(); the first one wins. */
void skm_builder_fail(skm_builder *b, sk_status st, const char *what);
/* A graph input, or with b->weights a constant when the name is a weight. */
void skm_builder_input(skm_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                       sk_value *out);
void skm_builder_node(skm_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                      const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs);
/* Begins scope `name` (NULL: ends the current one). */
void skm_builder_scope(skm_builder *b, const char *name, const char *options);
void skm_builder_output(skm_builder *b, sk_value value, const char *name);

#endif
