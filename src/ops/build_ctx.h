/* The state of building one node (sk_graph_add_op, sk_op_infer): the op's
 * definition, the descriptor, its slots' tensors (shapes and dtypes, no
 * data), the params the op fills and the outputs it declares. */
#ifndef SK_OPS_BUILD_CTX_H
#define SK_OPS_BUILD_CTX_H

#include "ops/op.h"

struct sk__build_ctx {
  const sk__op_def *def;
  const char *label; /* node name or op type, for messages */
  const sk_op_desc *desc;
  int desc_slot[SK__MAX_SLOTS];        /* schema slot of desc->inputs[i] (first SK__MAX_SLOTS) */
  sk__slot slots[SK__MAX_SLOTS];
  void *params;
  sk__tensor *outs;
  size_t n_outs;
};

/* Checks the descriptor against the op's schema, for every op alike: input
 * slot names known and not repeated, required slots present, single slots
 * holding one tensor; attribute names known and not repeated, kinds right
 * (an int is accepted for a float), ints in range, required ones given.
 * Fills ctx->desc_slot. Errors name the op, the slot or attribute, what was
 * expected and what was given. */
sk_status sk__build_check_desc(sk__build_ctx *ctx);

/* Runs the op's build on ctx->slots (filled by the caller) and checks the
 * outputs it declared (within the 2^48-byte limit of any tensor). On
 * failure ctx->params is freed. */
sk_status sk__build_node(sk__build_ctx *ctx);

/* Frees what the build left (outputs; params unless taken). */
void sk__build_ctx_free(sk__build_ctx *ctx);

#endif
