/* The arena's layout (compile.h): values whose lives do not overlap share
 * bytes.
 *
 * A value's life is counted in steps, not nodes: the steps of a run are
 * launches that run one after another (each ends before the next starts),
 * while the nodes inside one super kernel overlap in time (early start, a
 * sub-kernel's blocks on other cores). So an arena class lives from the
 * first step that touches it to the last step that reads or writes any of
 * its values (views included, through their root), and two classes share
 * bytes only when one's last step comes before the other's first. A class
 * holding a graph output that is copied out after the run lives to the end.
 *
 * Without this every intermediate had bytes of its own: a 512-token prefill
 * of an 8-layer MoE model had a 900 MB arena, faulted in page by page on a
 * sequence's first run (a quarter of its time), and the arena grew with
 * the layer count. Placement is greedy by size (the largest class first, at
 * the lowest offset clear of every placed class whose life overlaps), as
 * TensorFlow Lite's and XNNPACK's memory planners do; deterministic, since
 * ties go by value index. Where the data lives never changes the bits. */
#include <stdlib.h>

#include "compile/compile.h"
#include "core/alloc.h"
#include "core/error.h"
#include "program/plan.h"

typedef struct arena_class {
  sk_value root;
  size_t bytes; /* aligned */
  size_t first, last; /* steps */
  size_t offset;
} arena_class;

static int by_size_desc(const void *a, const void *b) {
  const arena_class *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->root < y->root ? -1 : x->root > y->root;
}

static int by_offset(const void *a, const void *b) {
  const arena_class *x = *(const arena_class *const *)a, *y = *(const arena_class *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* v's class (an arena one) is live over steps [lo, hi]. */
static void touch(const sk_program *p, long *first, long *last, sk_value v, long lo, long hi) {
  sk_value r = p->root[v];
  if (p->storage[r].kind != SK_STORE_ARENA) return;
  if (first[r] < 0 || lo < first[r]) first[r] = lo;
  if (hi > last[r]) last[r] = hi;
}

/* Each node's step (-1: a view, which runs in its consumers' steps). */
static void node_steps(const sk_program *p, long *step_of) {
  for (size_t i = 0; i < p->n_nodes; i++) step_of[i] = -1;
  for (size_t s = 0; s < p->n_steps; s++) {
    const sk__step *st = &p->steps[s];
    if (!st->plan) {
      step_of[st->node] = (long)s;
      continue;
    }
    for (size_t k = 0; k < st->plan->n_subs; k++) step_of[st->plan->subs[k].node] = (long)s;
  }
}

/* Lowest offset for c clear of the placed classes (placed[0 .. n_placed))
 * live beside it. */
static size_t lowest_fit(const arena_class *c, arena_class *placed, size_t n_placed, arena_class **live) {
  size_t n_live = 0;
  for (size_t i = 0; i < n_placed; i++)
    if (placed[i].first <= c->last && c->first <= placed[i].last) live[n_live++] = &placed[i];
  qsort(live, n_live, sizeof *live, by_offset);
  size_t offset = 0;
  for (size_t i = 0; i < n_live; i++) {
    if (live[i]->offset >= offset + c->bytes) break; /* the gap below it holds c */
    size_t end = live[i]->offset + live[i]->bytes;
    if (end > offset) offset = end;
  }
  return offset;
}

sk_status sk__plan_arena(sk_program *p) {
  const size_t n = p->n_values ? p->n_values : 1;
  long *first = malloc(n * sizeof *first), *last = malloc(n * sizeof *last);
  long *step_of = malloc((p->n_nodes ? p->n_nodes : 1) * sizeof *step_of);
  arena_class *classes = malloc(n * sizeof *classes), **live = malloc(n * sizeof *live);
  sk_status st = first && last && step_of && classes && live
                     ? SK_STATUS_OK
                     : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  if (st == SK_STATUS_OK) {
    const long end = (long)p->n_steps; /* after every step: copied out */
    for (size_t v = 0; v < p->n_values; v++) first[v] = last[v] = -1;
    node_steps(p, step_of);
    for (size_t i = 0; i < p->n_nodes; i++) {
      const sk__exec_node *nd = &p->nodes[i];
      if (step_of[i] < 0 && nd->def->is_view) continue;
      /* A node outside every step (none should be): its values live throughout. */
      long lo = step_of[i] < 0 ? 0 : step_of[i], hi = step_of[i] < 0 ? end : step_of[i];
      for (size_t j = 0; j < nd->n_in_tensors; j++) touch(p, first, last, nd->in_values[j], lo, hi);
      for (size_t j = 0; j < nd->io.n_out; j++) touch(p, first, last, nd->out_values[j], lo, hi);
    }
    for (size_t j = 0; j < p->n_outputs; j++) touch(p, first, last, p->outputs[j].value, end, end);
    size_t n_classes = 0;
    for (size_t v = 0; v < p->n_values; v++) {
      if (p->root[v] != v || p->storage[v].kind != SK_STORE_ARENA) continue;
      /* Touched by no step (a value nothing computes or reads): bytes of its own all the same. */
      size_t f = first[v] < 0 ? 0 : (size_t)first[v], l = last[v] < 0 ? (size_t)end : (size_t)last[v];
      classes[n_classes++] = (arena_class){.root = (sk_value)v, .bytes = p->storage[v].index, .first = f, .last = l};
    }
    qsort(classes, n_classes, sizeof *classes, by_size_desc);
    size_t arena = 0;
    for (size_t i = 0; i < n_classes; i++) { /* classes[0 .. i) are placed */
      classes[i].offset = lowest_fit(&classes[i], classes, i, live);
      if (classes[i].offset + classes[i].bytes > arena) arena = classes[i].offset + classes[i].bytes;
      p->storage[classes[i].root].index = classes[i].offset;
    }
    p->arena_bytes = arena;
  }
  free(first);
  free(last);
  free(step_of);
  free(classes);
  free(live);
  return st;
}
