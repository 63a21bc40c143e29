/* Dependency edges between a program's nodes (node_deps.h). */
#include "compile/node_deps.h"

#include <stdlib.h>

#include "core/error.h"

static sk_status oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory"); }

/* The node that wrote the data of value v (through views), or -1 for a
 * graph input. A view's data is its input's; an op that writes state in
 * place (op.h, writes_input) is the writer of its output, though that
 * output's storage is a graph input's. */
static int writer_of(const sk_program *p, const sk_graph *g, sk_value v) {
  (void)p;
  int n = g->values[v].producer;
  while (n >= 0 && g->nodes[n].def->is_view) {
    v = g->nodes[n].slot_values[0][0];
    n = g->values[v].producer;
  }
  return n;
}

/* Calls add(node) for each distinct node that node i needs; seen is scratch
 * (per node, the last i + 1 that saw it). Returns the count. */
static size_t visit_deps(const sk_program *p, const sk_graph *g, size_t i, size_t *seen, size_t *out) {
  const sk__exec_node *n = &p->nodes[i];
  size_t count = 0;
  if (n->def->is_view) return 0;
  for (size_t k = 0; k < n->n_in_tensors + n->n_waits; k++) {
    int dep;
    if (k < n->n_in_tensors) {
      dep = writer_of(p, g, n->in_values[k]);
    } else {
      dep = n->waits[k - n->n_in_tensors];
      if (p->nodes[dep].def->is_view) dep = writer_of(p, g, p->nodes[dep].out_values[0]);
    }
    if (dep < 0 || seen[dep] == i + 1) continue;
    seen[dep] = i + 1;
    if (out) out[count] = (size_t)dep;
    count++;
  }
  return count;
}

sk_status sk__node_deps_build(const sk_program *p, const sk_graph *g, sk__node_deps *d) {
  size_t n = p->n_nodes;
  *d = (sk__node_deps){.n_nodes = n};
  d->dep_begin = calloc(n + 1, sizeof *d->dep_begin);
  d->use_begin = calloc(n + 2, sizeof *d->use_begin);
  size_t *seen = calloc(n ? n : 1, sizeof *seen);
  if (!d->dep_begin || !d->use_begin || !seen) {
    free(seen);
    sk__node_deps_free(d);
    return oom();
  }
  for (size_t i = 0; i < n; i++) d->dep_begin[i + 1] = d->dep_begin[i] + visit_deps(p, g, i, seen, NULL);
  size_t edges = d->dep_begin[n];
  d->dep = malloc((edges ? edges : 1) * sizeof *d->dep);
  d->use = malloc((edges ? edges : 1) * sizeof *d->use);
  if (!d->dep || !d->use) {
    free(seen);
    sk__node_deps_free(d);
    return oom();
  }
  for (size_t i = 0; i < n; i++) seen[i] = 0;
  for (size_t i = 0; i < n; i++) visit_deps(p, g, i, seen, d->dep + d->dep_begin[i]);
  free(seen);
  /* The reverse lists: count per producer, prefix sums, then place (consumers
   * come out ascending because i ascends). use_begin[x + 2] counts first so
   * that the placing pass can use use_begin[x + 1] as its cursor. */
  for (size_t e = 0; e < edges; e++) d->use_begin[d->dep[e] + 2]++;
  for (size_t x = 2; x <= n + 1; x++) d->use_begin[x] += d->use_begin[x - 1];
  for (size_t i = 0; i < n; i++)
    for (size_t e = d->dep_begin[i]; e < d->dep_begin[i + 1]; e++) d->use[d->use_begin[d->dep[e] + 1]++] = i;
  return SK_STATUS_OK;
}

void sk__node_deps_free(sk__node_deps *d) {
  free(d->dep_begin);
  free(d->dep);
  free(d->use_begin);
  free(d->use);
  *d = (sk__node_deps){0};
}

sk_status sk__node_deps_find_detour(const sk__node_deps *d, const size_t *members, size_t n, bool *found,
                                    size_t *outside, size_t *fed) {
  *found = false;
  if (n < 2) return SK_STATUS_OK;
  /* One sweep in node order (edges point forward): an outside node is
   * "downstream" when it needs a member or a downstream node; a member that
   * needs a downstream node closes a detour. */
  enum { NONE, MEMBER, DOWNSTREAM };
  size_t lo = members[0], hi = members[n - 1];
  unsigned char *mark = calloc(hi - lo + 1, 1);
  if (!mark) return oom();
  for (size_t k = 0; k < n; k++) mark[members[k] - lo] = MEMBER;
  for (size_t i = lo + 1; i <= hi && !*found; i++) {
    for (size_t e = d->dep_begin[i]; e < d->dep_begin[i + 1]; e++) {
      size_t dep = d->dep[e];
      if (dep < lo || mark[dep - lo] == NONE) continue;
      if (mark[i - lo] == MEMBER && mark[dep - lo] == DOWNSTREAM) {
        *found = true;
        *outside = dep;
        *fed = i;
        break;
      }
      if (mark[i - lo] == NONE) mark[i - lo] = DOWNSTREAM;
    }
  }
  free(mark);
  return SK_STATUS_OK;
}
