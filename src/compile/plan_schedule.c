/* Planner steps 2-4 (see plan.c): barrier points, dependency-aware waits,
 * flags and the per-core task lists. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "compile/planner.h"

void sk__block_footprint(const sk__exec_node *ex, const sk__node_io *io, int64_t block, sk__span *reads,
                         sk__span *writes) {
  for (size_t i = 0; i < ex->n_in_tensors; i++)
    reads[i] = (sk__span){0, (int64_t)sk__tensor_bytes(&ex->in_tensors[i])};
  for (size_t o = 0; o < ex->io.n_out; o++) writes[o] = (sk__span){0, (int64_t)sk__tensor_bytes(&ex->io.out[o])};
  if (ex->def->footprint) ex->def->footprint(io, block, reads, writes);
}

typedef struct task_list {
  sk__task *tasks;
  size_t n, cap;
} task_list;

typedef struct scheduler {
  sk__plan *plan;
  const sk_program *p;
  int *barrier_after;   /* per sub: barrier index placed after it, or -1 */
  sk__span **writes;    /* per sub: n_blocks * n_out spans */
  task_list *cores;     /* per core */
  int32_t *deps;
  size_t n_deps, cap_deps;
  bool *flag_used;      /* per (sub, block), indexed by block_base; a
                         * claimed sub has one entry more, its whole flag */
  int64_t *block_base;  /* per sub: first index into flag_used */
  int64_t *pending;     /* scratch: the current block's producer entries */
  size_t n_pending, cap_pending;
  bool *waited;         /* per core x entry: the core already waited for it */
  int64_t n_entries;
} scheduler;

static sk_status oom(const scheduler *s) {
  return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory planning", s->plan->name);
}

static sk_status push_task(scheduler *s, int core, sk__task t) {
  task_list *l = &s->cores[core];
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    sk__task *grown = realloc(l->tasks, cap * sizeof *grown);
    if (!grown) return oom(s);
    l->tasks = grown;
    l->cap = cap;
  }
  l->tasks[l->n++] = t;
  return SK_STATUS_OK;
}

static bool in_set(int core, int first, int n) { return core >= first && core < first + n; }

/* Step 2: a barrier after sub i when the next sub-kernels must not start
 * before it is done: early-start=0 (kind by the super kernel's type),
 * stream chains (the chain's cores), debug-sync-all (every core). */
static sk_status place_barriers(scheduler *s) {
  sk__plan *plan = s->plan;
  const sk__options *o = &plan->options;
  bool sync = o->debug_sync_all || o->early_start == 0 || plan->stream_fused;
  plan->barrier_sets = calloc(plan->n_subs ? plan->n_subs : 1, sizeof *plan->barrier_sets);
  if (!plan->barrier_sets) return oom(s);
  for (size_t i = 0; i < plan->n_subs; i++) {
    s->barrier_after[i] = -1;
    if (!sync) continue;
    const sk__subkernel *sub = &plan->subs[i];
    bool later = false; /* a later sub-kernel this barrier orders */
    for (size_t j = i + 1; j < plan->n_subs && !later; j++)
      later = o->debug_sync_all || !plan->stream_fused || plan->subs[j].chain == sub->chain;
    if (!later) continue;
    sk__barrier_set set = {0, plan->n_cores, (int)i};
    if (o->debug_sync_all) set = (sk__barrier_set){0, plan->n_cores, (int)i};
    else if (plan->stream_fused) set = (sk__barrier_set){sub->core_first, sub->n_cores, (int)i};
    else if (plan->type == SK_SK_MIX_AIC_1_0) set = (sk__barrier_set){0, plan->aic_cores, (int)i};
    else if (plan->type == SK_SK_MIX_AIV_1_0) set = (sk__barrier_set){0, plan->aiv_cores, (int)i};
    if (set.n_cores <= 1) continue; /* one core is already in order with itself */
    s->barrier_after[i] = plan->n_barriers;
    plan->barrier_sets[plan->n_barriers++] = set;
  }
  return SK_STATUS_OK;
}

/* The entry of claimed sub-kernel i's whole flag (all its blocks done). */
static int64_t whole_entry(const scheduler *s, size_t i) { return s->block_base[i] + s->plan->subs[i].n_blocks; }

/* Whether block (pi, pc) is certainly done before block (ci, cc) starts:
 * the same core runs them in order, or a barrier after a sub-kernel between
 * them holds both cores. A claimed producer's block may have run on any of
 * its cores (pc is not used), and a claimed consumer's (cc < 0) may run on
 * any of its: only a barrier over all of them orders them. */
static bool ordered(const scheduler *s, size_t pi, int pc, size_t ci, int cc) {
  const sk__subkernel *producer = &s->plan->subs[pi], *consumer = &s->plan->subs[ci];
  if (!producer->claimed && cc >= 0 && pc == cc) return true;
  int first = producer->claimed ? producer->core_first : pc, last = producer->claimed ? first + producer->n_cores - 1 : pc;
  int cfirst = cc >= 0 ? cc : consumer->core_first, clast = cc >= 0 ? cc : cfirst + consumer->n_cores - 1;
  for (size_t k = pi; k < ci; k++) {
    int b = s->barrier_after[k];
    if (b < 0) continue;
    const sk__barrier_set *set = &s->plan->barrier_sets[b];
    if (in_set(cfirst, set->core_first, set->n_cores) && in_set(clast, set->core_first, set->n_cores) &&
        in_set(first, set->core_first, set->n_cores) && in_set(last, set->core_first, set->n_cores))
      return true;
  }
  return false;
}

/* Whether core already waits for entry: pending, or waited for before
 * (flags only grow: once is enough; core < 0, a claimed block, has no
 * history). */
static bool is_pending(const scheduler *s, int core, int64_t entry) {
  if (core >= 0 && s->waited[core * s->n_entries + entry]) return true;
  for (size_t i = 0; i < s->n_pending; i++)
    if (s->pending[i] == entry) return true;
  return false;
}

static sk_status add_pending(scheduler *s, int core, int64_t entry) {
  if (is_pending(s, core, entry)) return SK_STATUS_OK;
  if (s->n_pending == s->cap_pending) {
    size_t cap = s->cap_pending ? s->cap_pending * 2 : 16;
    int64_t *grown = realloc(s->pending, cap * sizeof *grown);
    if (!grown) return oom(s);
    s->pending = grown;
    s->cap_pending = cap;
  }
  s->pending[s->n_pending++] = entry;
  return SK_STATUS_OK;
}

/* A claimed producer pi (output o) of a block reading span r on core cc:
 * the blocks it overlaps one by one, or the whole flag when that is all of
 * them or more than SK_CLAIM_DEPS_MAX. */
static sk_status claimed_producer(scheduler *s, size_t pi, size_t o, sk__span r, int cc) {
  const sk__subkernel *producer = &s->plan->subs[pi];
  size_t n_out = s->p->nodes[producer->node].io.n_out, mark = s->n_pending;
  int64_t hits = 0;
  for (int64_t pb = 0; pb < producer->n_blocks && hits <= SK_CLAIM_DEPS_MAX; pb++) {
    const sk__span *w = &s->writes[pi][pb * (int64_t)n_out + (int64_t)o];
    if (w->begin < r.end && r.begin < w->end && ++hits <= SK_CLAIM_DEPS_MAX)
      SK_RETURN_IF_ERROR(add_pending(s, cc, s->block_base[pi] + pb));
  }
  if (hits <= SK_CLAIM_DEPS_MAX && (hits < producer->n_blocks || hits == 1)) return SK_STATUS_OK;
  s->n_pending = mark; /* drops only what this call added */
  return add_pending(s, cc, whole_entry(s, pi));
}

/* Step 3 for one block run on core cc (< 0: a claimed block, any of its
 * sub-kernel's cores): the producer blocks it must wait for, added to
 * pending (entries of flag_used). */
static sk_status block_dependencies(scheduler *s, size_t ci, int64_t cb, int cc, sk__span *reads, sk__span *writes) {
  const sk__plan *plan = s->plan;
  const sk_program *p = s->p;
  const sk__exec_node *ex = &p->nodes[plan->subs[ci].node];
  sk__block_footprint(ex, &plan->subs[ci].io, cb, reads, writes);
  for (size_t i = 0; i < ex->n_in_tensors; i++) {
    if (reads[i].begin >= reads[i].end) continue;
    sk_value root = p->root[ex->in_values[i]];
    /* Spans are within the read value; a slice starts inside its root, where
     * producers' spans are measured (their outputs are roots). */
    int64_t shift = p->view_offset ? p->view_offset[ex->in_values[i]] : 0;
    reads[i].begin += shift;
    reads[i].end += shift;
    for (size_t pi = ci; pi-- > 0;) { /* the producer: at most one (values are written once) */
      const sk__exec_node *px = &p->nodes[plan->subs[pi].node];
      size_t o = 0;
      while (o < px->io.n_out && p->root[px->out_values[o]] != root) o++;
      if (o == px->io.n_out) continue;
      if (plan->subs[pi].claimed) {
        if (!is_pending(s, cc, whole_entry(s, pi)) && !ordered(s, pi, -1, ci, cc))
          SK_RETURN_IF_ERROR(claimed_producer(s, pi, o, reads[i], cc));
        break;
      }
      for (int64_t pb = 0; pb < plan->subs[pi].n_blocks; pb++) {
        const sk__span *w = &s->writes[pi][pb * (int64_t)px->io.n_out + (int64_t)o];
        bool overlap = w->begin < reads[i].end && reads[i].begin < w->end;
        if (overlap && !ordered(s, pi, sk__sub_core(&plan->subs[pi], pb), ci, cc))
          SK_RETURN_IF_ERROR(add_pending(s, cc, s->block_base[pi] + pb));
      }
      break;
    }
  }
  /* Event edges: every block of the recorded node (for a view, of the node
   * that produced the data it views). */
  for (size_t w = 0; w < ex->n_waits; w++)
    for (size_t pi = 0; pi < ci; pi++) {
      size_t node = (size_t)ex->waits[w];
      if (p->nodes[node].def->is_view) {
        sk_value root = p->root[p->nodes[node].in_values[0]];
        const sk__exec_node *px = &p->nodes[plan->subs[pi].node];
        bool produces = false;
        for (size_t o = 0; o < px->io.n_out && !produces; o++) produces = p->root[px->out_values[o]] == root;
        if (produces) node = plan->subs[pi].node;
      }
      if (plan->subs[pi].node != node) continue;
      if (plan->subs[pi].claimed) {
        if (!ordered(s, pi, -1, ci, cc)) SK_RETURN_IF_ERROR(add_pending(s, cc, whole_entry(s, pi)));
        continue;
      }
      for (int64_t pb = 0; pb < plan->subs[pi].n_blocks; pb++)
        if (!ordered(s, pi, sk__sub_core(&plan->subs[pi], pb), ci, cc))
          SK_RETURN_IF_ERROR(add_pending(s, cc, s->block_base[pi] + pb));
    }
  return SK_STATUS_OK;
}

static sk_status footprints(scheduler *s) {
  const sk__plan *plan = s->plan;
  int64_t total = 0;
  for (size_t i = 0; i < plan->n_subs; i++) {
    s->block_base[i] = total;
    total += plan->subs[i].n_blocks + (plan->subs[i].claimed ? 1 : 0);
    const sk__exec_node *ex = &s->p->nodes[plan->subs[i].node];
    s->writes[i] = malloc(((size_t)plan->subs[i].n_blocks * ex->io.n_out + 1) * sizeof(sk__span));
    sk__span *reads = malloc((ex->n_in_tensors + 1) * sizeof(sk__span));
    if (!s->writes[i] || !reads) {
      free(reads);
      return oom(s);
    }
    for (int64_t b = 0; b < plan->subs[i].n_blocks; b++)
      sk__block_footprint(ex, &plan->subs[i].io, b, reads, &s->writes[i][b * (int64_t)ex->io.n_out]);
    free(reads);
  }
  s->n_entries = total;
  s->flag_used = calloc((size_t)(total ? total : 1), sizeof(bool));
  s->waited = calloc((size_t)(total ? total : 1) * (size_t)plan->n_cores, sizeof(bool));
  return s->flag_used && s->waited ? SK_STATUS_OK : oom(s);
}

/* Whether core c runs (or, claimed, may run) any block of sub-kernel s. */
static bool core_has_blocks(const sk__subkernel *s, int c) {
  return in_set(c, s->core_first, s->n_cores) && (s->claimed || (int64_t)(c - s->core_first) < s->n_blocks);
}

/* The next sub-kernel after i (in i's chain) with blocks on core c, or -1. */
static int next_sub_on_core(const sk__plan *plan, size_t i, int c) {
  for (size_t j = i + 1; j < plan->n_subs; j++)
    if (plan->subs[j].chain == plan->subs[i].chain && core_has_blocks(&plan->subs[j], c)) return (int)j;
  return -1;
}

/* dcci: flush before (inputs) / after (outputs) a sub-kernel's blocks. */
static void flush_rules(const sk__plan *plan, const sk__exec_node *ex, bool *before, bool *after) {
  const sk__options *o = &plan->options;
  const char *type = ex->def->type;
  bool disabled = sk__options_match(&o->dcci_disable_on_kernel, type);
  *before = !disabled && sk__options_match(&o->dcci_before_kernel_start, type);
  *after = !disabled && (o->debug_dcci_all || sk__options_match(&o->dcci_after_kernel_end, type));
}

/* Which sub-kernels are claimed: their op asks (tiling.claim), several
 * cores and blocks share them, and nothing needs a block's core known in
 * advance: no team barrier inside the blocks, no dcci flush around them. */
static void choose_claimed(sk__plan *plan, const sk_program *p) {
  for (size_t i = 0; i < plan->n_subs; i++) {
    sk__subkernel *sub = &plan->subs[i];
    bool before, after;
    flush_rules(plan, &p->nodes[sub->node], &before, &after);
    sub->claimed = sub->tiling.claim && sub->n_cores > 1 && sub->n_blocks > 1 && sub->barriers_per_block == 0 &&
                   !before && !after;
  }
}

/* The pending entries appended to deps and marked used (and, on core c
 * >= 0, waited for). */
static sk_status append_pending(scheduler *s, int c) {
  if (s->n_deps + s->n_pending > s->cap_deps) {
    size_t cap = (s->n_deps + s->n_pending) * 2;
    int32_t *grown = realloc(s->deps, cap * sizeof *grown);
    if (!grown) return oom(s);
    s->deps = grown, s->cap_deps = cap;
  }
  for (size_t k = 0; k < s->n_pending; k++) {
    s->flag_used[s->pending[k]] = true;
    if (c >= 0) s->waited[c * s->n_entries + s->pending[k]] = true;
    s->deps[s->n_deps++] = (int32_t)s->pending[k];
  }
  return SK_STATUS_OK;
}

/* A WAIT on core c for the pending entries (none: no task). */
static sk_status push_wait(scheduler *s, int c, size_t sub) {
  if (!s->n_pending) return SK_STATUS_OK;
  sk__task wait = {.kind = SK_TASK_WAIT, .sub = (uint16_t)sub, .block = (int64_t)s->n_deps, .count = (int64_t)s->n_pending};
  SK_RETURN_IF_ERROR(append_pending(s, c));
  return push_task(s, c, wait);
}

/* A claimed sub-kernel: each block's own waits (claim_waits, entries until
 * assign_flags), its flag entry (claim_flags), and on each of its cores
 * one CLAIM carrying the entry of the whole flag. */
static sk_status emit_claim(scheduler *s, size_t i, sk__span *reads, sk__span *writes) {
  sk__subkernel *sub = &s->plan->subs[i];
  sub->claim_waits = malloc(((size_t)sub->n_blocks + 1) * sizeof *sub->claim_waits);
  sub->claim_flags = malloc((size_t)sub->n_blocks * sizeof *sub->claim_flags);
  if (!sub->claim_waits || !sub->claim_flags) return oom(s);
  for (int64_t b = 0; b < sub->n_blocks; b++) {
    sub->claim_waits[b] = (int64_t)s->n_deps;
    sub->claim_flags[b] = (int32_t)(s->block_base[i] + b);
    s->n_pending = 0;
    SK_RETURN_IF_ERROR(block_dependencies(s, i, b, -1, reads, writes));
    SK_RETURN_IF_ERROR(append_pending(s, -1));
  }
  sub->claim_waits[sub->n_blocks] = (int64_t)s->n_deps;
  for (int c = sub->core_first; c < sub->core_first + sub->n_cores; c++)
    SK_RETURN_IF_ERROR(
        push_task(s, c, (sk__task){.kind = SK_TASK_CLAIM, .sub = (uint16_t)i, .flag = (int32_t)whole_entry(s, i)}));
  return SK_STATUS_OK;
}

/* Step 3 and 4: waits and the task lists. RUN tasks first carry their
 * flag_used entry, WAIT lists carry entries too; both become flag ids once
 * every block's dependencies are known. */
static sk_status emit_tasks(scheduler *s) {
  sk__plan *plan = s->plan;
  size_t max_in = 1, max_out = 1;
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__exec_node *ex = &s->p->nodes[plan->subs[i].node];
    if (ex->n_in_tensors > max_in) max_in = ex->n_in_tensors;
    if (ex->io.n_out > max_out) max_out = ex->io.n_out;
  }
  sk__span *reads = malloc(max_in * sizeof *reads), *writes = malloc(max_out * sizeof *writes);
  if (!reads || !writes) {
    free(reads);
    free(writes);
    return oom(s);
  }
  sk_status st = SK_STATUS_OK;
  if (plan->options.preload_code == SK_PRELOAD_MAX)
    for (int c = 0; c < plan->n_cores && st == SK_STATUS_OK; c++)
      for (size_t i = 0; i < plan->n_subs && st == SK_STATUS_OK; i++)
        if (core_has_blocks(&plan->subs[i], c))
          st = push_task(s, c, (sk__task){.kind = SK_TASK_PRELOAD, .sub = (uint16_t)i});
  for (size_t i = 0; i < plan->n_subs && st == SK_STATUS_OK; i++) {
    const sk__subkernel *sub = &plan->subs[i];
    bool flush_before, flush_after;
    flush_rules(plan, &s->p->nodes[sub->node], &flush_before, &flush_after);
    if (plan->options.preload_code == SK_PRELOAD_PER_FUNC)
      for (int c = sub->core_first; c < sub->core_first + sub->n_cores && st == SK_STATUS_OK; c++) {
        int next = core_has_blocks(sub, c) ? next_sub_on_core(plan, i, c) : -1;
        if (next >= 0) st = push_task(s, c, (sk__task){.kind = SK_TASK_PRELOAD, .sub = (uint16_t)next});
      }
    if (sub->claimed && st == SK_STATUS_OK) st = emit_claim(s, i, reads, writes);
    for (int64_t b = 0; !sub->claimed && b < sub->n_blocks && st == SK_STATUS_OK; b++) {
      int c = sk__sub_core(sub, b);
      s->n_pending = 0;
      st = block_dependencies(s, i, b, c, reads, writes);
      if (st == SK_STATUS_OK) st = push_wait(s, c, i);
      if (st == SK_STATUS_OK && flush_before)
        st = push_task(s, c, (sk__task){.kind = SK_TASK_FLUSH, .arg = 0, .sub = (uint16_t)i, .block = b});
      if (st == SK_STATUS_OK)
        st = push_task(s, c, (sk__task){.kind = SK_TASK_RUN, .sub = (uint16_t)i, .block = b,
                                        .flag = (int32_t)(s->block_base[i] + b)});
      if (st == SK_STATUS_OK && flush_after)
        st = push_task(s, c, (sk__task){.kind = SK_TASK_FLUSH, .arg = 1, .sub = (uint16_t)i, .block = b});
    }
    /* feed-sync-all: the sub-kernel's idle cores join its barrier. */
    for (int c = sub->core_first + (int)sub->n_blocks; sub->barriers_per_block && c < sub->core_first + sub->n_cores &&
                                                        st == SK_STATUS_OK;
         c++)
      st = push_task(s, c, (sk__task){.kind = SK_TASK_COMPLEMENT, .sub = (uint16_t)i, .count = sub->barriers_per_block});
    int bar = s->barrier_after[i];
    if (bar >= 0) {
      const sk__barrier_set *set = &plan->barrier_sets[bar];
      for (int c = set->core_first; c < set->core_first + set->n_cores && st == SK_STATUS_OK; c++)
        st = push_task(s, c, (sk__task){.kind = SK_TASK_BARRIER, .sub = (uint16_t)i, .flag = bar});
    }
  }
  free(reads);
  free(writes);
  return st;
}

/* Entries of flag_used become flag ids; tasks and deps are rewritten. */
static sk_status assign_flags(scheduler *s) {
  sk__plan *plan = s->plan;
  int64_t total = s->n_entries;
  int32_t *id = malloc((size_t)(total ? total : 1) * sizeof *id);
  if (!id) return oom(s);
  int32_t n = 0;
  for (int64_t e = 0; e < total; e++) id[e] = s->flag_used[e] ? n++ : -1;
  for (int c = 0; c < plan->n_cores; c++)
    for (size_t t = 0; t < s->cores[c].n; t++)
      if (s->cores[c].tasks[t].kind == SK_TASK_RUN || s->cores[c].tasks[t].kind == SK_TASK_CLAIM)
        s->cores[c].tasks[t].flag = id[s->cores[c].tasks[t].flag];
  for (size_t d = 0; d < s->n_deps; d++) s->deps[d] = id[s->deps[d]];
  for (size_t i = 0; i < plan->n_subs; i++)
    for (int64_t b = 0; plan->subs[i].claim_flags && b < plan->subs[i].n_blocks; b++)
      plan->subs[i].claim_flags[b] = id[plan->subs[i].claim_flags[b]];
  free(id);
  plan->n_flags = n;
  return SK_STATUS_OK;
}

/* Concatenates the per-core lists into the plan. */
static sk_status collect(scheduler *s) {
  sk__plan *plan = s->plan;
  plan->core_begin = malloc(((size_t)plan->n_cores + 1) * sizeof *plan->core_begin);
  size_t total = 0;
  for (int c = 0; c < plan->n_cores; c++) total += s->cores[c].n;
  plan->tasks = malloc((total ? total : 1) * sizeof *plan->tasks);
  if (!plan->core_begin || !plan->tasks) return oom(s);
  plan->n_tasks = 0;
  for (int c = 0; c < plan->n_cores; c++) {
    plan->core_begin[c] = plan->n_tasks;
    if (s->cores[c].n) memcpy(plan->tasks + plan->n_tasks, s->cores[c].tasks, s->cores[c].n * sizeof *plan->tasks);
    plan->n_tasks += s->cores[c].n;
  }
  plan->core_begin[plan->n_cores] = plan->n_tasks;
  plan->deps = s->deps;
  plan->n_deps = s->n_deps;
  s->deps = NULL;
  return SK_STATUS_OK;
}

sk_status sk__plan_schedule(sk__plan *plan, const sk_program *p) {
  scheduler s = {.plan = plan, .p = p};
  size_t n = plan->n_subs ? plan->n_subs : 1;
  s.barrier_after = malloc(n * sizeof *s.barrier_after);
  s.writes = calloc(n, sizeof *s.writes);
  s.block_base = calloc(n, sizeof *s.block_base);
  s.cores = calloc((size_t)plan->n_cores, sizeof *s.cores);
  sk_status st = s.barrier_after && s.writes && s.block_base && s.cores ? SK_STATUS_OK : oom(&s);
  if (st == SK_STATUS_OK) choose_claimed(plan, p);
  if (st == SK_STATUS_OK) st = place_barriers(&s);
  if (st == SK_STATUS_OK) st = footprints(&s);
  if (st == SK_STATUS_OK) st = emit_tasks(&s);
  if (st == SK_STATUS_OK) st = assign_flags(&s);
  if (st == SK_STATUS_OK) st = collect(&s);
  for (size_t i = 0; i < n && s.writes; i++) free(s.writes[i]);
  for (int c = 0; c < plan->n_cores && s.cores; c++) free(s.cores[c].tasks);
  free(s.writes);
  free(s.barrier_after);
  free(s.block_base);
  free(s.cores);
  free(s.flag_used);
  free(s.waited);
  free(s.pending);
  free(s.deps);
  return st;
}
