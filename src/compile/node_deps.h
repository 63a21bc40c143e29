/* What each node of a compiled program must wait for: the producers of its
 * inputs and the nodes it waits for by event (node->waits). Views never
 * launch (their output aliases their input), so edges go through them to
 * the node that wrote the data; a view itself has no edges. Streams add no
 * edge of their own: every value is written once into its own storage, so
 * only data and events order two nodes.
 *
 * Scopes use it twice (fuse.c): to check that a scope can run as one launch
 * (it is convex: no path leaves the scope and comes back), and to order the
 * launches (launch_order.c). */
#ifndef SK_COMPILE_NODE_DEPS_H
#define SK_COMPILE_NODE_DEPS_H

#include <stdbool.h>

#include "program/program.h"

typedef struct sk__node_deps {
  size_t n_nodes;
  size_t *dep_begin; /* n_nodes + 1: node i needs dep[dep_begin[i] .. dep_begin[i + 1]) */
  size_t *dep;       /* each list distinct and made of earlier nodes */
  size_t *use_begin; /* n_nodes + 1: the same edges seen from the other end */
  size_t *use;
} sk__node_deps;

/* Needs p->root (the storage plan) and g's value producers. */
sk_status sk__node_deps_build(const sk_program *p, const sk_graph *g, sk__node_deps *d);
void sk__node_deps_free(sk__node_deps *d);

/* Whether members (n distinct non-view nodes, ascending) can run as one
 * launch. If not, *found is set with a witness: *outside, a node outside the
 * set that depends on a member and feeds member *fed. */
sk_status sk__node_deps_find_detour(const sk__node_deps *d, const size_t *members, size_t n, bool *found,
                                    size_t *outside, size_t *fed);

#endif
