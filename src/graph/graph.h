/* The graph: values (graph inputs and op outputs) and nodes in the order they
 * were added, which is a topological order (a node can only use values that
 * exist). Every node carries its scope index and its stream: scope
 * membership is per node, so a scope's nodes need not be contiguous (a front
 * end may interleave scopes, and may reopen one). */
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
};

/* Grows *array (of elem bytes) to hold at least need elements. */
sk_status sk__grow(void **array, size_t *cap, size_t need, size_t elem);
char *sk__strdup(const char *s);
/* Frees what a node owns (not the node itself). */
void sk__node_free(sk__node *node);

#endif
