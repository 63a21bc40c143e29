/* Plan -> C source. The file is what the interpreter (interpreter.c) would do,
 * written out: one function per core whose body is that core's task list
 * in order, every constant (block, flag, barrier index) spelled out, so the
 * compiler sees straight-line calls and the results are bitwise those of
 * the interpreter. Deterministic (no addresses, times or counters) and
 * readable: comments name each sub-kernel and task as `sk plan` does.
 *
 * The file depends on <stdint.h> only: the env struct it receives is
 * printed from the lists of jit_env.h, the same lists the library compiles. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"
#include "executors/jit/jit_internal.h"


/* A user-given name inside a comment: no "*" + "/" (it would end the
 * comment), no control characters (a newline would too, in effect). */
static const char *safe(const char *s, char *buf, size_t n) {
  size_t j = 0;
  for (size_t i = 0; s && s[i] && j + 1 < n; i++) {
    char c = s[i];
    if ((unsigned char)c < 32 || c == 127) c = '?';
    if (c == '/' && j > 0 && buf[j - 1] == '*') c = '|';
    buf[j++] = c;
  }
  buf[j] = '\0';
  return buf;
}

/* The declarations of jit_env.h as text. */
static void env_text(sk__text *t) {
  sk__text_put(t, "/* The env: jit_env.h's lists, layout version %d. */\n", SK_JIT_LAYOUT_VERSION);
  sk__text_put(t, "struct sk__node_io; /* the library's; opaque here */\n");
  sk__text_put(t, "typedef struct sk_jit_flag %s sk_jit_flag;\n", SK__JIT_STR(SK_JIT_FLAG_BODY));
  sk__text_put(t, "typedef struct sk_jit_claim %s sk_jit_claim;\n", SK__JIT_STR(SK_JIT_CLAIM_BODY));
  sk__text_put(t, "typedef struct sk_jit_env sk_jit_env;\n");
#define SK__JIT_PRINT_TYPE(ret, name, params) sk__text_put(t, "typedef %s (*%s)%s;\n", #ret, #name, #params);
  SK_JIT_FN_TYPES(SK__JIT_PRINT_TYPE)
#undef SK__JIT_PRINT_TYPE
  sk__text_put(t, "struct sk_jit_env {\n");
#define SK__JIT_PRINT_FIELD(type, name, doc) \
  sk__text_put(t, "  %s%s%s; /* %s */\n", #type, #type[sizeof #type - 2] == '*' ? "" : " ", #name, doc);
  SK_JIT_ENV_FIELDS(SK__JIT_PRINT_FIELD)
#undef SK__JIT_PRINT_FIELD
  sk__text_put(t, "};\n\n");
}

static const char *kind_name(sk__kernel_kind kind) {
  return kind == SK_KERNEL_CUBE ? "CUBE" : kind == SK_KERNEL_VECTOR ? "VECTOR" : "MIX";
}

/* The code copies (split-mode) a core uses: copy core % copies. */
static int n_copies(const sk__plan *plan) {
  return plan->options.early_start == 2 ? 1 : plan->options.split_mode;
}

static void prelude(sk__text *t, const sk__plan *plan, const sk_program *p) {
  int copies = n_copies(plan) < plan->n_cores ? n_copies(plan) : plan->n_cores;
  sk__text_put(t, "/* superkernel JIT: one super kernel\n");
  sk__text_put(t, " * %s, block dim %lld, %d cores (cube %d, vector %d)%s, %zu sub-kernels, %d flags, %d barriers\n",
      sk__sk_type_name(plan->type), (long long)plan->block_dim, plan->n_cores, plan->aic_cores, plan->aiv_cores,
      plan->stream_fused ? ", stream-fused" : "", plan->n_subs, plan->n_flags, plan->n_barriers);
  /* The options as they shape the code, not as written: options that
   * change nothing here (split-mode under early-start=2, dcci patterns
   * matching no op) then leave the source, and so the key, unchanged. */
  sk__text_put(t, " * func-align %d, %d code cop%s, profiling %s\n", plan->options.func_align, copies, copies == 1 ? "y" : "ies",
      plan->options.profiling ? "on" : "off");
  sk__text_put(t, " * Generated from the planner's task lists (`sk plan` prints the same).\n");
  sk__text_put(t, " * Sub-kernels are named by op type, never by node or scope name: identical\n");
  sk__text_put(t, " * scopes then have identical sources, so they share one cached object.\n");
  sk__text_put(t, " * compiled with -fvisibility=hidden: only sk_jit_entry, sk_jit_key and\n");
  sk__text_put(t, " * sk_jit_layout are exported. */\n");
  sk__text_put(t, "#include <stdint.h>\n\n");
  env_text(t);
  sk__text_put(t, "__attribute__((visibility(\"default\"))) const unsigned sk_jit_layout = %d;\n\n", SK_JIT_LAYOUT_VERSION);
  if (plan->options.profiling)
    sk__text_put(t, "#if defined(__x86_64__) || defined(__i386__)\n#define SK_TSC() __builtin_ia32_rdtsc()\n"
                    "#else\n#define SK_TSC() ((uint64_t)0)\n#endif\n\n");
  sk__text_put(t, "/* The interpreter's sk__wait_fetch_add (seq_cst) then sk__wait_wake, whose\n"
         " * futex call is made only when someone sleeps on the flag. */\n"
         "static inline __attribute__((always_inline)) void sk_signal(const sk_jit_env *env, int32_t f) {\n"
         "  __atomic_fetch_add(&env->flags[f].value, 1u, __ATOMIC_SEQ_CST);\n"
         "  if (__atomic_load_n(&env->flags[f].sleepers, __ATOMIC_SEQ_CST) != 0) env->wake(env, f);\n"
         "}\n\n");
  sk__text_put(t, "/* A flag is signalled in this launch when it equals the epoch. If it is\n"
         " * not yet, the library's wait prefetches a pending preload, then spins,\n"
         " * yields and sleeps. */\n"
         "static inline __attribute__((always_inline)) int32_t sk_wait(const sk_jit_env *env, int32_t f) {\n"
         "  if (__atomic_load_n(&env->flags[f].value, __ATOMIC_ACQUIRE) == env->epoch) return 0;\n"
         "  return env->wait(env, f); /* nonzero: the watchdog abandoned the launch */\n"
         "}\n\n");
  (void)p;
}

/* The attributes of the entry and the wrappers: theirs plus func-align's
 * (none at all with func-align=0). */
static void attributes(sk__text *t, const sk__plan *plan, const char *base) {
  if (plan->options.func_align > 0) sk__text_put(t, "__attribute__((%s, aligned(%d))) ", base, plan->options.func_align);
  else sk__text_put(t, "__attribute__((%s)) ", base);
}

/* The sub-kernel's tensors, slot by slot: dtypes and shapes are part of the
 * source, so scopes that differ in them (an extra bias, other shapes)
 * compile on their own, while identical scopes share one object. */
static void tensor_list(sk__text *t, const sk__tensor *ts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    sk__text_put(t, " %s[", sk_dtype_name(ts[i].dtype));
    for (int d = 0; d < ts[i].rank; d++) sk__text_put(t, d ? ",%lld" : "%lld", (long long)ts[i].shape[d]);
    sk__text_put(t, "]");
  }
}

static void signature(sk__text *t, const sk__exec_node *ex) {
  sk__text_put(t, " *   in:");
  for (int slot = 0; slot < SK__MAX_SLOTS; slot++) {
    if (!ex->io.in[slot].count) continue;
    sk__text_put(t, " %s:", ex->def->inputs[slot].name);
    tensor_list(t, ex->io.in[slot].tensors, ex->io.in[slot].count);
  }
  sk__text_put(t, "\n *   out:");
  tensor_list(t, ex->io.out, ex->io.n_out);
  sk__text_put(t, "\n");
}

/* One wrapper per sub-kernel and code copy that some core calls. Each copy
 * carries its own asm comment so the compiler cannot fold identical copies
 * into one (gcc's -fipa-icf, on at -O2). */
static void wrappers(sk__text *t, const sk__plan *plan, const sk_program *p, bool *used) {
  int copies = n_copies(plan);
  for (size_t s = 0; s < plan->n_subs; s++) {
    const sk__subkernel *sub = &plan->subs[s];
    const sk__exec_node *ex = &p->nodes[sub->node];
    char type[128];
    sk__text_put(t, "/* sub-kernel %zu: %s (%s), %lld blocks on cores %d-%d\n", s, safe(ex->def->type, type, sizeof type),
        kind_name(sub->kind), (long long)sub->n_blocks, sub->core_first, sub->core_first + sub->n_cores - 1);
    signature(t, ex);
    sk__text_put(t, " */\n");
    for (int c = 0; c < copies; c++) {
      if (!used[s * (size_t)copies + (size_t)c]) continue;
      sk__text_put(t, "static ");
      attributes(t, plan, "noinline");
      sk__text_put(t, "void sub%zu_copy%d(const sk_jit_env *env, int64_t block, void *ws) {\n", s, c);
      sk__text_put(t, "  __asm__ __volatile__(\"/* sub%zu copy %d */\");\n", s, c);
      sk__text_put(t, "  env->run_block[%zu](env->io[%zu], block, ws);\n}\n", s, s);
    }
    sk__text_put(t, "\n");
  }
}

static void prof_begin(sk__text *t, const sk__plan *plan) {
  if (plan->options.profiling) sk__text_put(t, "  { uint64_t t0 = SK_TSC();\n");
}

static void prof_end(sk__text *t, const sk__plan *plan, int core, int kind, int sub, long long block) {
  if (plan->options.profiling)
    sk__text_put(t, "    env->prof(env, %d, %d, %d, %lld, t0, SK_TSC()); }\n", core, kind, sub, block);
}

static bool any_claim_flag(const sk__subkernel *s) {
  for (int64_t b = 0; b < s->n_blocks; b++)
    if (s->claim_flags[b] >= 0) return true;
  return false;
}

/* A table "static const int32_t claimI_name[n] = {...}" of value(k). */
#define CLAIM_TABLE(t, i, name, n, value)                                                          \
  do {                                                                                             \
    sk__text_put(t, "static const int32_t claim%d_%s[%lld] = {", (int)(i), name, (long long)(n));   \
    for (int64_t k = 0; k < (n); k++)                                                              \
      sk__text_put(t, "%s%d", k == 0 ? "\n  " : k % 16 ? ", " : ",\n  ", (int)(value));             \
    sk__text_put(t, "\n};\n");                                                                     \
  } while (0)

/* A claimed sub-kernel's per-block waits and flags as tables (the plan's
 * claim_waits and claim_flags; what an interpreter reads from the plan):
 * block b waits for claimI_deps[claimI_at[b] .. claimI_at[b + 1]), then
 * signals claimI_flag[b] (-1: none). Tables that would hold nothing are
 * left out, and so is the code that reads them. */
static void claim_tables(sk__text *t, const sk__plan *plan) {
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__subkernel *s = &plan->subs[i];
    if (!s->claimed) continue;
    int64_t n = s->n_blocks, d0 = s->claim_waits[0], d1 = s->claim_waits[n];
    sk__text_put(t, "/* sub-kernel %zu, claimed: its blocks' own waits and flags */\n", i);
    if (d0 < d1) {
      CLAIM_TABLE(t, i, "at", n + 1, s->claim_waits[k] - d0);
      CLAIM_TABLE(t, i, "deps", d1 - d0, plan->deps[d0 + k]);
    }
    if (any_claim_flag(s)) CLAIM_TABLE(t, i, "flag", n, s->claim_flags[k]);
    sk__text_put(t, "\n");
  }
}

static void core_function(sk__text *t, const sk__plan *plan, const sk_program *p, int core) {
  size_t begin = plan->core_begin[core], end = plan->core_begin[core + 1];
  int copy = core % n_copies(plan);
  char type[128], sub[160];
  sk__text_put(t, "/* core %d: %zu tasks */\nstatic void core%d(const sk_jit_env *env, void *ws) {\n", core, end - begin,
      core);
  bool uses_ws = false;
  for (size_t k = begin; k < end; k++) uses_ws |= plan->tasks[k].kind == SK_TASK_RUN || plan->tasks[k].kind == SK_TASK_CLAIM;
  if (!uses_ws) sk__text_put(t, "  (void)ws;\n");
  for (size_t k = begin; k < end; k++) {
    const sk__task *task = &plan->tasks[k];
    snprintf(sub, sizeof sub, "sub %d (%s)", (int)task->sub,
             safe(p->nodes[plan->subs[task->sub].node].def->type, type, sizeof type));
    long long block = (long long)task->block;
    switch (task->kind) {
      case SK_TASK_RUN:
        prof_begin(t, plan);
        sk__text_put(t, "  sub%d_copy%d(env, %lld, ws); /* run %s block %lld */\n", (int)task->sub, copy, block, type, block);
        prof_end(t, plan, core, 0, (int)task->sub, block);
        if (task->flag >= 0) sk__text_put(t, "  sk_signal(env, %d);\n", task->flag);
        if (plan->subs[task->sub].barriers_per_block) sk__text_put(t, "  if (env->aborted(env)) return;\n");
        break;
      case SK_TASK_WAIT:
        sk__text_put(t, "  /* wait for %lld flag%s before %s */\n", (long long)task->count, task->count > 1 ? "s" : "", sub);
        prof_begin(t, plan);
        for (int64_t d = 0; d < task->count; d++) sk__text_put(t, "  if (sk_wait(env, %d)) return;\n", plan->deps[task->block + d]);
        prof_end(t, plan, core, 1, (int)task->sub, -1);
        break;
      case SK_TASK_BARRIER: {
        const sk__barrier_set *set = &plan->barrier_sets[task->flag];
        prof_begin(t, plan);
        sk__text_put(t, "  if (env->barrier(env, %d)) return; /* barrier over cores %d-%d after %s */\n", task->flag, set->core_first,
            set->core_first + set->n_cores - 1, sub);
        prof_end(t, plan, core, 2, (int)task->sub, -1);
        break;
      }
      case SK_TASK_PRELOAD: sk__text_put(t, "  env->preload(env, %d, %d); /* preload %s */\n", (int)task->sub, core, sub); break;
      case SK_TASK_FLUSH:
        sk__text_put(t, "  env->flush(env, %d, %lld, %d); /* flush %s of %s block %lld */\n", (int)task->sub, block, task->arg,
            task->arg ? "outputs" : "inputs", sub, block);
        break;
      case SK_TASK_CLAIM: {
        /* The interpreter's run_claimed: the next block nobody has taken,
         * after its own waits (claim_tables); the core that finishes the
         * last one signals the whole flag. */
        int i = (int)task->sub;
        const sk__subkernel *cs = &plan->subs[i];
        long long n = (long long)cs->n_blocks;
        bool waits = cs->claim_waits[0] < cs->claim_waits[n], flags = any_claim_flag(cs);
        sk__text_put(t, "  /* claim blocks of %s until none is left */\n", sub);
        sk__text_put(t, "  for (int64_t b; (b = __atomic_fetch_add(&env->claims[%d].next, 1, __ATOMIC_RELAXED)) < %lld;) {\n", i, n);
        if (plan->options.profiling) sk__text_put(t, "    uint64_t t0 = SK_TSC();\n");
        if (waits) {
          sk__text_put(t, "    for (int32_t d = claim%d_at[b]; d < claim%d_at[b + 1]; d++)\n", i, i);
          sk__text_put(t, "      if (sk_wait(env, claim%d_deps[d])) return;\n", i);
          if (plan->options.profiling)
            sk__text_put(t, "    if (claim%d_at[b] < claim%d_at[b + 1]) { uint64_t t1 = SK_TSC(); env->prof(env, %d, 1, %d, -1, t0, t1); t0 = t1; }\n",
                i, i, core, i);
        }
        sk__text_put(t, "    sub%d_copy%d(env, b, ws);\n", i, copy);
        if (plan->options.profiling) sk__text_put(t, "    env->prof(env, %d, 0, %d, b, t0, SK_TSC());\n", core, i);
        if (flags) sk__text_put(t, "    if (claim%d_flag[b] >= 0) sk_signal(env, claim%d_flag[b]);\n", i, i);
        if (task->flag >= 0) /* a consumer waits: count the block (without one nothing needs the count) */
          sk__text_put(t, "    if (__atomic_add_fetch(&env->claims[%d].finished, 1, __ATOMIC_ACQ_REL) == %lld) sk_signal(env, %d);\n",
              i, n, task->flag);
        sk__text_put(t, "  }\n");
        break;
      }
      case SK_TASK_COMPLEMENT:
        prof_begin(t, plan);
        sk__text_put(t, "  for (int i = 0; i < %lld; i++) if (env->sub_barrier(env, %d)) return; /* complement %s's barrier */\n",
            (long long)task->count, (int)task->sub, sub);
        prof_end(t, plan, core, 2, (int)task->sub, -1);
        break;
    }
  }
  sk__text_put(t, "}\n\n");
}

/* The object's size is bounded: every function starts on a func-align
 * boundary, so a scope of many sub-kernels with many code copies at a
 * large alignment would write that much padding (10^5 sub-kernels, 2
 * cores, func-align 4096: 800 MB). Such a scope is interpreted instead. */
#define SK_JIT_MAX_PADDING ((size_t)64 << 20)

sk_status sk__jit_codegen(const sk__plan *plan, const sk_program *p, char **body_out) {
  *body_out = NULL;
  int copies = n_copies(plan);
  bool *used = calloc(plan->n_subs * (size_t)copies + 1, sizeof *used);
  if (!used) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  size_t functions = 1 + (size_t)plan->n_cores; /* the entry and the cores' */
  for (int c = 0; c < plan->n_cores; c++)
    for (size_t k = plan->core_begin[c]; k < plan->core_begin[c + 1]; k++) {
      bool *u = &used[plan->tasks[k].sub * (size_t)copies + (size_t)(c % copies)];
      bool runs = plan->tasks[k].kind == SK_TASK_RUN || plan->tasks[k].kind == SK_TASK_CLAIM;
      if (runs && !*u) *u = true, functions++;
    }
  if (functions * (size_t)plan->options.func_align > SK_JIT_MAX_PADDING) {
    free(used);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "jit: %zu functions aligned to func-align %d would make an object of over %zu MiB (the limit is "
                    "%zu MiB): lower func-align or split-mode, or split the scope",
                    functions, plan->options.func_align,
                    functions * (size_t)plan->options.func_align >> 20, SK_JIT_MAX_PADDING >> 20);
  }
  sk__text t = {0};
  prelude(&t, plan, p);
  wrappers(&t, plan, p, used);
  free(used);
  claim_tables(&t, plan);
  for (int c = 0; c < plan->n_cores; c++)
    if (plan->core_begin[c + 1] > plan->core_begin[c]) core_function(&t, plan, p, c);
  sk__text_put(&t, "void sk_jit_entry(const sk_jit_env *env, int core);\n");
  attributes(&t, plan, "visibility(\"default\")");
  sk__text_put(&t, "void sk_jit_entry(const sk_jit_env *env, int core) {\n");
  sk__text_put(&t, "  void *ws = env->workspace ? env->workspace[core] : (void *)0;\n  switch (core) {\n");
  for (int c = 0; c < plan->n_cores; c++)
    if (plan->core_begin[c + 1] > plan->core_begin[c]) sk__text_put(&t, "    case %d: core%d(env, ws); break;\n", c, c);
  sk__text_put(&t, "    default: (void)ws; break; /* a core without tasks */\n  }\n}\n");
  if (t.failed) {
    free(t.buf);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory generating the source of '%s'", plan->name);
  }
  *body_out = t.buf;
  return SK_STATUS_OK;
}

char *sk__jit_with_key(const char *body, const char *key) {
  sk__text t = {0};
  sk__text_put(&t, "%s\n/* The cache key: SHA-256 of the source above, the compiler's argument vector and\n"
          " * its identity; checked when the object is loaded. */\n"
          "__attribute__((visibility(\"default\"))) const char sk_jit_key[] = \"%s\";\n",
      body, key);
  if (t.failed) {
    free(t.buf);
    return NULL;
  }
  return t.buf;
}
