/* The graph: values (graph inputs and op outputs) and nodes in the order they
 * were added, which is a topological order (a node can only use values that
 * exist). Scopes and streams arrive with the SuperKernel issue: every node
 * already carries a scope index and a stream. */
#ifndef SK_GRAPH_GRAPH_H
#define SK_GRAPH_GRAPH_H

#include <stddef.h>

#include "core/tensor.h"
#include "ops/op.h"

typedef struct sk__value {
  sk__tensor desc;      /* dtype and shape; data is unused in a graph */
  int producer;         /* node index, or -1 for a graph input */
  int producer_output;  /* output index within the producer */
  int input_index;      /* index among graph inputs, or -1 */
} sk__value;

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
} sk__node;

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
};

/* Grows *array (of elem bytes) to hold at least need elements. */
sk_status sk__grow(void **array, size_t *cap, size_t need, size_t elem);
char *sk__strdup(const char *s);
/* Frees what a node owns (not the node itself). */
void sk__node_free(sk__node *node);

#endif
