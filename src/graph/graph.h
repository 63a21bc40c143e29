/* The graph: values (graph inputs and op outputs) and nodes in the order they
 * were added, which is a topological order (a node can only use values that
 * exist). Every node carries its scope index and its stream: scope
 * membership is per node, so a scope's nodes need not be contiguous (a front
 * end may interleave scopes, and may reopen one). */
#ifndef SK_GRAPH_GRAPH_H
#define SK_GRAPH_GRAPH_H

#include <stddef.h>

#include "core/alloc.h"
#include "core/tensor.h"
#include "ops/op.h"

typedef struct sk__value {
  sk__tensor desc;      /* dtype and shape; data is unused in a graph */
  int producer;         /* node index, or -1 for a graph input */
  int producer_output;  /* output index within the producer */
  int input_index;      /* index among graph inputs, or -1 */
  int constant_index;   /* index among graph constants, or -1 */
} sk__value;

/* A constant's data: a private copy (owned) or the caller's (borrowed). */
typedef struct sk__constant {
  char *name;
  sk_value value;
  const void *data;
  bool owned;
} sk__constant;

typedef struct sk__node {
  const sk__op_def *def;
  char *name;                    /* "grouped_matmul_0" unless given */
  size_t slot_count[SK__MAX_SLOTS];
  sk_value *slot_values[SK__MAX_SLOTS];
  sk_value *outputs;
  size_t n_outputs;
  void *params;                  /* def->params_size bytes */
  int scope;                     /* -1: not in a super-kernel scope */
  int stream;                    /* 0 or 1 */
  int *waits;                    /* nodes this one waits for (event edges) */
  size_t n_waits;
  /* Runs its op's blocks for what they do, with no tensors: a kernel of
   * runtime-only fusion (sk__graph_add_launch), its data in its params. */
  bool launch_only;
  /* In a graph with a run-time token count: a copy of the descriptor the
   * node was built from, so that graph/tokens.c can build it again for
   * another count; NULL otherwise. */
  sk_op_desc *desc;
} sk__node;

typedef struct sk__scope {
  char *name;
  char *options;                 /* as declared; "" when none */
  size_t opened_at;              /* n_nodes when last begun (or reopened) */
} sk__scope;

typedef struct sk__event {
  int node;                      /* the node whose completion it marks */
} sk__event;

typedef struct sk__named_value {
  char *name;
  sk_value value;
} sk__named_value;

struct sk_graph {
  sk__value *values;
  size_t n_values, cap_values;
  sk__node *nodes;
  size_t n_nodes, cap_nodes;
  sk__named_value *inputs;
  size_t n_inputs, cap_inputs;
  sk__named_value *outputs;
  size_t n_outputs, cap_outputs;
  sk__constant *constants;
  size_t n_constants, cap_constants;
  sk__scope *scopes;
  size_t n_scopes, cap_scopes;
  int open_scope;                /* index of the open scope, -1 when none */
  int stream;                    /* stream of the nodes added next */
  sk__event *events;
  size_t n_events, cap_events;
  int *pending_waits[2];         /* per stream: nodes the next node waits for */
  size_t n_pending[2], cap_pending[2];
  /* The run-time token count's maximum (sk_graph_set_max_tokens), 0 when
   * shapes are static. A dynamic value's desc has shape[0] = k * max and
   * desc.dynamic set. */
  int64_t max_tokens;
};

/* Runtime-only fusion's graph (custom/runtime_fusion.c): a node of op def
 * with no tensors that runs its blocks for their effects, its params a copy
 * of `params` (def->params_size bytes), in the open scope, named `name`,
 * after node `after` (-1: none; the library sees no data flow between such
 * nodes, so their order is an edge). */
sk_status sk__graph_add_launch(sk_graph *g, const sk__op_def *def, const void *params, const char *name, int after);

/* The node that writes value v in place (an op with writes_input whose
 * slot 0 is v), or -1: no other node may read v then (add_op.c). */
int sk__graph_in_place_writer(const sk_graph *g, sk_value v);

/* Frees what a node owns (not the node itself). */
void sk__node_free(sk__node *node);

/* ---- the run-time token count (graph/tokens.c) ---- */

/* Builds desc on the given input tensors (slot after slot, as
 * sk_op_infer's metas): shapes and dtypes only (add_op.c). On success ctx
 * holds the params and outputs, *scratch the tensors behind its slots. */
struct sk__build_ctx;
sk_status sk__build_on_tensors(const sk_op_desc *desc, const sk__tensor *inputs, size_t n,
                               struct sk__build_ctx *ctx, sk__tensor **scratch);
/* The node just built at the graph's maximum (ctx) again at another token
 * count: which of its outputs are dynamic (dynamic[i]), or an error naming
 * the op when its shapes cannot follow the count. */
sk_status sk__tokens_probe(const sk_graph *g, const sk_op_desc *desc, const struct sk__build_ctx *ctx, bool *dynamic);
/* The same for sk_op_infer: desc's inputs given (slot after slot in desc
 * order) at a nominal maximum `max`, dynamic ones marked. */
sk_status sk__tokens_probe_inputs(const sk_op_desc *desc, const sk__tensor *inputs, int64_t max,
                                  const struct sk__build_ctx *at_max, bool *dynamic);
/* A deep copy of desc (one allocation to free with free()); NULL when out of memory. */
sk_op_desc *sk__desc_clone(const sk_op_desc *desc, const char *name);
/* g with its token count fixed at tokens (1..max): a graph of static shapes
 * whose dynamic values keep desc.dynamic, every node built again for that
 * count; constants borrowed from g (which must outlive it). */
sk_status sk__graph_at_tokens(const sk_graph *g, int64_t tokens, sk_graph **out);

#endif
