/* Launch order (launch_order.h): Kahn's algorithm over units, earliest node
 * first, and a split when every unit left waits for another. */
#include "compile/launch_order.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct unit {
  int scope;      /* -1: one node on its own */
  size_t *nodes;  /* the nodes not launched yet, ascending (a slice of members) */
  size_t n;
  size_t pending; /* edges into them from other units' nodes not launched yet */
} unit;

typedef struct orderer {
  const sk_program *p;
  const sk__node_deps *d;
  int *unit_of;      /* per node; -1 for views */
  bool *launched;    /* per node */
  bool *ready;       /* per node, scratch of split_point */
  unit *units;       /* scopes first (unit s is scope s), then single nodes */
  size_t n_units;
  size_t *members;   /* storage of every unit's nodes */
  size_t *heap;      /* units ready to launch, the earliest first node on top */
  size_t n_heap;
  size_t n_left;     /* nodes still to launch */
  sk__launch_order *out;
  size_t n_stored;
} orderer;

static sk_status oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory ordering launches"); }

static bool earlier(const orderer *o, size_t a, size_t b) { return o->units[a].nodes[0] < o->units[b].nodes[0]; }

static void heap_push(orderer *o, size_t u) {
  size_t i = o->n_heap++;
  while (i > 0 && earlier(o, u, o->heap[(i - 1) / 2])) {
    o->heap[i] = o->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  o->heap[i] = u;
}

static size_t heap_pop(orderer *o) {
  size_t top = o->heap[0], last = o->heap[--o->n_heap], i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= o->n_heap) break;
    if (child + 1 < o->n_heap && earlier(o, o->heap[child + 1], o->heap[child])) child++;
    if (!earlier(o, o->heap[child], last)) break;
    o->heap[i] = o->heap[child];
    i = child;
  }
  if (o->n_heap) o->heap[i] = last;
  return top;
}

/* Launches nodes[0..n) (ascending, all of unit u's or a ready part of them)
 * as one launch; units waiting for nothing else become ready. */
static void launch(orderer *o, size_t u, const size_t *nodes, size_t n) {
  sk__launch *l = &o->out->launches[o->out->n_launches++];
  l->scope = o->units[u].scope;
  l->nodes = o->out->storage + o->n_stored;
  l->n_nodes = n;
  memcpy(l->nodes, nodes, n * sizeof *nodes);
  o->n_stored += n;
  o->n_left -= n;
  for (size_t k = 0; k < n; k++) o->launched[nodes[k]] = true;
  for (size_t k = 0; k < n; k++)
    for (size_t e = o->d->use_begin[nodes[k]]; e < o->d->use_begin[nodes[k] + 1]; e++) {
      size_t c = (size_t)o->unit_of[o->d->use[e]];
      if (c != u && --o->units[c].pending == 0) heap_push(o, c);
    }
}

/* Kosaraju's first pass over the units left, following edges to their
 * consumers: the unit finished last lies in a strongly connected component
 * that no other unit left feeds. */
static sk_status last_finished(orderer *o, size_t *last) {
  size_t n = o->n_units;
  bool *visited = calloc(n, sizeof *visited);
  size_t *stack = malloc(n * sizeof *stack), *at_node = calloc(n, sizeof *at_node), *at_use = calloc(n, sizeof *at_use);
  sk_status st = visited && stack && at_node && at_use ? SK_STATUS_OK : oom();
  for (size_t s = 0; st == SK_STATUS_OK && s < n; s++) {
    if (visited[s] || o->units[s].n == 0) continue;
    size_t depth = 0;
    stack[depth++] = s;
    visited[s] = true;
    while (depth) {
      size_t u = stack[depth - 1];
      const unit *un = &o->units[u];
      bool descended = false;
      while (!descended && at_node[u] < un->n) {
        size_t node = un->nodes[at_node[u]], e = o->d->use_begin[node] + at_use[u];
        if (e >= o->d->use_begin[node + 1]) {
          at_node[u]++;
          at_use[u] = 0;
          continue;
        }
        at_use[u]++;
        size_t c = (size_t)o->unit_of[o->d->use[e]];
        if (c == u || visited[c]) continue;
        visited[c] = true;
        stack[depth++] = c;
        descended = true;
      }
      if (!descended) *last = stack[--depth];
    }
  }
  free(visited);
  free(stack);
  free(at_node);
  free(at_use);
  return st;
}

/* Among the units that feed `root` (directly or not), root included: the
 * one holding the earliest node. */
static sk_status earliest_upstream(orderer *o, size_t root, size_t *found) {
  bool *seen = calloc(o->n_units, sizeof *seen);
  size_t *queue = malloc(o->n_units * sizeof *queue);
  if (!seen || !queue) {
    free(seen);
    free(queue);
    return oom();
  }
  size_t head = 0, tail = 0;
  queue[tail++] = root;
  seen[root] = true;
  *found = root;
  while (head < tail) {
    size_t u = queue[head++];
    if (o->units[u].nodes[0] < o->units[*found].nodes[0]) *found = u;
    for (size_t k = 0; k < o->units[u].n; k++) {
      size_t node = o->units[u].nodes[k];
      for (size_t e = o->d->dep_begin[node]; e < o->d->dep_begin[node + 1]; e++) {
        size_t dep = o->d->dep[e];
        if (o->launched[dep] || seen[o->unit_of[dep]]) continue;
        seen[o->unit_of[dep]] = true;
        queue[tail++] = (size_t)o->unit_of[dep];
      }
    }
  }
  free(seen);
  free(queue);
  return SK_STATUS_OK;
}

/* Scope unit v runs its nodes each on its own launch. */
static void unfuse(orderer *o, size_t v) {
  unit *un = &o->units[v];
  size_t first = o->n_units;
  for (size_t k = 0; k < un->n; k++) {
    size_t node = un->nodes[k], pending = 0;
    for (size_t e = o->d->dep_begin[node]; e < o->d->dep_begin[node + 1]; e++) pending += !o->launched[o->d->dep[e]];
    o->units[o->n_units] = (unit){.scope = -1, .nodes = &un->nodes[k], .n = 1, .pending = pending};
    o->unit_of[node] = (int)o->n_units++;
  }
  un->n = 0;
  for (size_t u = first; u < o->n_units; u++)
    if (o->units[u].pending == 0) heap_push(o, u);
}

/* Every unit left waits for another: split (or unfuse) a scope on a cycle
 * that nothing else feeds, at the earliest node of that cycle's units. That
 * node's producers have all run (an earlier one left would lie on the cycle
 * too), so the part launched now is never empty. */
static sk_status unstick(orderer *o, sk__split_fn on_split, void *ctx) {
  size_t root = 0, v = 0;
  SK_RETURN_IF_ERROR(last_finished(o, &root));
  SK_RETURN_IF_ERROR(earliest_upstream(o, root, &v));
  unit *un = &o->units[v];
  size_t blocked = SIZE_MAX, blocker = 0, n_ready = 0;
  for (size_t k = 0; k < un->n; k++) {
    size_t node = un->nodes[k];
    bool ok = true;
    for (size_t e = o->d->dep_begin[node]; e < o->d->dep_begin[node + 1]; e++) {
      size_t dep = o->d->dep[e];
      if (o->launched[dep] || ((size_t)o->unit_of[dep] == v && o->ready[dep])) continue;
      ok = false;
      if ((size_t)o->unit_of[dep] != v && blocked == SIZE_MAX) blocked = node, blocker = dep;
    }
    o->ready[node] = ok;
    n_ready += ok;
  }
  if (un->scope < 0 || blocked == SIZE_MAX || n_ready == 0)
    return sk__fail(SK_STATUS_INTERNAL, "sk_compile: no launch order found (node %s)", o->p->nodes[un->nodes[0]].name);
  bool run_unfused = false;
  sk_status st = on_split(ctx, un->scope, blocked, blocker, &run_unfused);
  size_t *part = st == SK_STATUS_OK && !run_unfused ? malloc(n_ready * sizeof *part) : NULL;
  if (st == SK_STATUS_OK && !run_unfused && !part) st = oom();
  size_t n_part = 0, n_rest = 0;
  for (size_t k = 0; k < un->n; k++) {
    size_t node = un->nodes[k];
    if (part && o->ready[node]) part[n_part++] = node;
    else un->nodes[n_rest++] = node;
    o->ready[node] = false;
  }
  if (part) {
    un->n = n_rest;
    launch(o, v, part, n_part);
    free(part);
  } else if (st == SK_STATUS_OK) {
    unfuse(o, v);
  }
  return st;
}

/* Units: one per scope over its fused nodes, one per other non-view node. */
static void make_units(orderer *o, const int *fused_scope, int n_scopes) {
  const sk_program *p = o->p;
  size_t n = p->n_nodes;
  for (int s = 0; s < n_scopes; s++) o->units[o->n_units++] = (unit){.scope = s};
  for (size_t i = 0; i < n; i++) {
    o->unit_of[i] = -1;
    if (p->nodes[i].def->is_view) continue;
    o->n_left++;
    if (fused_scope[i] >= 0 && fused_scope[i] < n_scopes) o->units[fused_scope[i]].n++;
  }
  size_t next = 0; /* scopes' slices first, then one slot per single node */
  for (int s = 0; s < n_scopes; s++) {
    o->units[s].nodes = o->members + next;
    next += o->units[s].n;
    o->units[s].n = 0;
  }
  for (size_t i = 0; i < n; i++) {
    if (p->nodes[i].def->is_view) continue;
    int s = fused_scope[i];
    if (s >= 0 && s < n_scopes) {
      o->units[s].nodes[o->units[s].n++] = i;
      o->unit_of[i] = s;
    } else {
      o->members[next] = i;
      o->units[o->n_units] = (unit){.scope = -1, .nodes = o->members + next++, .n = 1};
      o->unit_of[i] = (int)o->n_units++;
    }
  }
  for (size_t i = 0; i < n; i++)
    for (size_t e = o->d->dep_begin[i]; e < o->d->dep_begin[i + 1]; e++)
      if (o->unit_of[o->d->dep[e]] != o->unit_of[i]) o->units[o->unit_of[i]].pending++;
  for (size_t u = 0; u < o->n_units; u++)
    if (o->units[u].n && o->units[u].pending == 0) heap_push(o, u);
}

sk_status sk__launch_order_build(const sk_program *p, const sk__node_deps *d, const int *fused_scope, int n_scopes,
                                 sk__split_fn on_split, void *ctx, sk__launch_order *order) {
  *order = (sk__launch_order){0};
  size_t n = p->n_nodes ? p->n_nodes : 1, max_units = n + (size_t)(n_scopes > 0 ? n_scopes : 0);
  orderer o = {.p = p, .d = d, .out = order};
  o.unit_of = malloc(n * sizeof *o.unit_of);
  o.launched = calloc(n, sizeof *o.launched);
  o.ready = calloc(n, sizeof *o.ready);
  o.units = calloc(max_units, sizeof *o.units);
  o.members = malloc(n * sizeof *o.members);
  o.heap = malloc(max_units * sizeof *o.heap);
  order->launches = calloc(n, sizeof *order->launches);
  order->storage = malloc(n * sizeof *order->storage);
  sk_status st = o.unit_of && o.launched && o.ready && o.units && o.members && o.heap && order->launches &&
                 order->storage ? SK_STATUS_OK : oom();
  if (st == SK_STATUS_OK) make_units(&o, fused_scope, n_scopes);
  while (st == SK_STATUS_OK && o.n_left > 0) {
    if (o.n_heap == 0) {
      st = unstick(&o, on_split, ctx);
      continue;
    }
    size_t u = heap_pop(&o);
    launch(&o, u, o.units[u].nodes, o.units[u].n);
    o.units[u].n = 0;
  }
  free(o.unit_of);
  free(o.launched);
  free(o.ready);
  free(o.units);
  free(o.members);
  free(o.heap);
  if (st != SK_STATUS_OK) sk__launch_order_free(order);
  return st;
}

void sk__launch_order_free(sk__launch_order *order) {
  free(order->launches);
  free(order->storage);
  *order = (sk__launch_order){0};
}
