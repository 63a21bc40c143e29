/* The order of a run's launches when scopes are fused. A scope's fused
 * nodes need not be contiguous in graph order (scope membership is per
 * node), so the launches are ordered as units: each fused scope is one unit
 * (its super kernel runs after all of its external producers and before all
 * of its external consumers), every other node is a unit of its own. The
 * units go in a topological order, the ready unit with the earliest node
 * first, so nodes outside scopes keep graph order where nothing forces
 * another one.
 *
 * A scope that cannot run as one unit (not convex, or scopes feeding each
 * other) is split: when no unit is ready, the one to split lies on a cycle
 * that nothing outside it feeds, and its part that can run now (every node
 * whose producers have all run or are in the part) becomes a launch of its
 * own. The caller decides, per scope, whether that is allowed. */
#ifndef SK_COMPILE_LAUNCH_ORDER_H
#define SK_COMPILE_LAUNCH_ORDER_H

#include "compile/node_deps.h"

typedef struct sk__launch {
  int scope;       /* the scope this part of is fused, or -1: one node on its own launch */
  size_t *nodes;   /* ascending; points into the order's storage */
  size_t n_nodes;
} sk__launch;

typedef struct sk__launch_order {
  sk__launch *launches;
  size_t n_launches;
  size_t *storage; /* every launch's nodes */
} sk__launch_order;

/* Asked before scope `scope` is split because its node `blocked` needs node
 * `blocker`, which cannot run before the scope's launch. Return an error
 * to refuse; set *unfuse to run the scope's nodes each on its own launch
 * instead of splitting it. */
typedef sk_status (*sk__split_fn)(void *ctx, int scope, size_t blocked, size_t blocker, bool *unfuse);

/* fused_scope[i]: the scope node i is fused in, or -1; view nodes get no
 * launch whatever it says. On error *order is empty. */
sk_status sk__launch_order_build(const sk_program *p, const sk__node_deps *d, const int *fused_scope, int n_scopes,
                                 sk__split_fn on_split, void *ctx, sk__launch_order *order);
void sk__launch_order_free(sk__launch_order *order);

#endif
