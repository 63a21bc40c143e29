/* The library side of the JIT: at compile time, each super-kernel step gets
 * its object (cache.c); each run context builds one env per step, pointing
 * at its own flags, io and barriers, and a run launches the object's entry
 * on every core with that env through sk__launch, which bumps the epoch
 * exactly as for the interpreter. The env's callbacks are the launch
 * services (executors/launch.h), so generated and interpreted code
 * synchronize identically. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "program/tokens.h"
#include "executors/executors.h"
#include "executors/jit/jit_internal.h"
#include "runtime/profile.h"
#include "runtime/team.h"
#include "executors/launch.h"

/* The generated code sees a flag as sk_jit_flag: the same bytes; and the
 * profile kinds it passes are the recorder's. */
_Static_assert(SK_PROF_RUN == 0 && SK_PROF_WAIT == 1 && SK_PROF_BARRIER == 2, "env->prof kinds");
_Static_assert(sizeof(sk_jit_flag) == sizeof(sk__wait_word), "sk_jit_flag must be sk__wait_word's size");
_Static_assert(offsetof(sk_jit_flag, value) == offsetof(sk__wait_word, value), "flag value offset");
_Static_assert(offsetof(sk_jit_flag, sleepers) == offsetof(sk__wait_word, sleepers), "flag sleepers offset");
_Static_assert(sizeof(sk_jit_claim) == sizeof(sk__claim), "sk_jit_claim must be sk__claim's size");
_Static_assert(offsetof(sk_jit_claim, next) == offsetof(sk__claim, next), "claim next offset");
_Static_assert(offsetof(sk_jit_claim, finished) == offsetof(sk__claim, finished), "claim finished offset");

/* A step's compiled code, shared by every run context of its program. */
typedef struct sk__jit_step {
  sk__jit_object *object;
  sk_jit_entry_fn entry;
  sk_jit_run_fn *run_block; /* per sub-kernel: its op's */
} sk__jit_step;

/* The step in one run context; env.lib is the context's launch state. */
typedef struct sk__jit_launch {
  sk_jit_env env;
  sk_jit_entry_fn entry;
  sk__launch_state *st;
} sk__jit_launch;

static sk__launch_state *state_of(const sk_jit_env *env) { return env->lib; }

/* Waits return nonzero when the watchdog tripped: the generated core
 * function then returns at once, abandoning the rest of its task list.
 * The generated code names no sub-kernel, so a flag wait names the scope. */
static int32_t cb_wait(const sk_jit_env *env, int32_t flag) {
  sk__launch_state *st = state_of(env);
  return !sk__launch_wait_flag(st, flag, sk__team_current_core(), st->plan->scope_label);
}
static void cb_wake(const sk_jit_env *env, int32_t flag) { sk__wait_wake(&state_of(env)->flags[flag]); }
static int32_t cb_barrier(const sk_jit_env *env, int32_t i) {
  return !sk__launch_barrier(state_of(env), i, sk__team_current_core());
}
static int32_t cb_sub_barrier(const sk_jit_env *env, int32_t i) { return !sk__launch_sub_barrier(state_of(env), i); }
static int32_t cb_aborted(const sk_jit_env *env) { return sk__watchdog_tripped(state_of(env)->wd); }

/* profiling=1: the generated code times each RUN, WAIT and BARRIER and
 * hands the record to the program's profile, as the interpreter does. */
static void cb_prof(const sk_jit_env *env, int32_t core, int32_t kind, int32_t sub, int64_t block, uint64_t t0,
                    uint64_t t1) {
  const sk__launch_state *st = state_of(env);
  if (st->profile) sk__profile_add(st->profile, core, (sk__prof_kind)kind, st->plan->step, (uint16_t)sub, block, t0, t1);
}

/* PRELOAD and FLUSH: the interpreter's own routines. */
static void cb_preload(const sk_jit_env *env, int32_t sub, int32_t core) {
  sk__launch_preload(state_of(env), (size_t)sub, core);
}

static void cb_flush(const sk_jit_env *env, int32_t sub, int64_t block, int32_t outputs) {
  sk__launch_flush(state_of(env), (size_t)sub, block, outputs);
}

/* A comment naming the scope and its sub-kernels' nodes: shown by `sk
 * source` above the compiled text, which leaves names out (codegen.c). */
static char *legend(const sk__plan *plan, const sk_program *p) {
  size_t cap = 256 + strlen(plan->name);
  for (size_t i = 0; i < plan->n_subs; i++) cap += 32 + strlen(p->nodes[plan->subs[i].node].name);
  char *s = malloc(cap);
  if (!s) return NULL;
  size_t len = (size_t)snprintf(s, cap, "/* scope '%s': ", plan->name);
  for (size_t i = 0; i < plan->n_subs; i++)
    len += (size_t)snprintf(s + len, cap - len, "%ssub %zu = %s", i ? ", " : "", i, p->nodes[plan->subs[i].node].name);
  snprintf(s + len, cap - len, " */\n");
  for (char *c = s + 3; c[3]; c++) /* names are the user's: keep the comment a comment */
    if ((unsigned char)*c < 32 || (c[0] == '*' && c[1] == '/')) *c = '?';
  return s;
}

sk_status sk__jit_source(const sk__plan *plan, const sk_program *p, char **source_out) {
  *source_out = NULL;
  char *body = NULL;
  SK_RETURN_IF_ERROR(sk__jit_codegen(plan, p, &body));
  /* The key names the compiler; without one the source is still shown. */
  sk__jit_compiler cc;
  char key[65] = "(no compiler found)";
  sk_status st = sk__jit_compiler_find(&cc);
  if (st == SK_STATUS_OK) st = sk__jit_key(body, &cc, &plan->options, key);
  else sk__clear_error();
  char *text = st == SK_STATUS_OUT_OF_MEMORY ? NULL : sk__jit_with_key(body, key);
  char *names = legend(plan, p);
  free(body);
  if (text && names) *source_out = malloc(strlen(names) + strlen(text) + 1);
  if (*source_out) {
    strcpy(*source_out, names);
    strcat(*source_out, text);
  }
  free(text);
  free(names);
  return *source_out ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
}

static sk_status step_create(sk_program *p, sk__step *step) {
  sk__plan *plan = step->plan;
  char *body = NULL;
  SK_RETURN_IF_ERROR(sk__jit_codegen(plan, p, &body));
  sk__jit_step *js = calloc(1, sizeof *js);
  if (js) js->run_block = calloc(plan->n_subs + 1, sizeof *js->run_block);
  if (!js || !js->run_block) {
    free(body);
    if (js) free(js);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  }
  sk_status st = sk__jit_acquire(plan->name, body, &plan->options, &js->object, &js->entry);
  free(body);
  if (st != SK_STATUS_OK) {
    free(js->run_block), free(js);
    return st;
  }
  for (size_t i = 0; i < plan->n_subs; i++) js->run_block[i] = p->nodes[plan->subs[i].node].def->run_block;
  step->compiled = js;
  step->exec = &sk__executor_jit;
  return SK_STATUS_OK;
}

void sk__program_jit(sk_program *p) { sk__program_jit_progress(p, NULL, NULL); }

void sk__program_jit_progress(sk_program *p, void (*progress)(const char *scope, size_t index, size_t total, void *user),
                              void *user) {
  size_t total = 0, index = 0;
  for (size_t s = 0; s < p->n_steps; s++) total += p->steps[s].exec == &sk__executor_interpreter;
  for (size_t s = 0; s < p->n_steps; s++) {
    sk__step *step = &p->steps[s];
    if (step->exec != &sk__executor_interpreter) continue;
    if (progress) progress(step->plan->name, ++index, total, user);
    if (step_create(p, step) == SK_STATUS_OK) continue;
    char cause[1024];
    snprintf(cause, sizeof cause, "%s", sk_last_error());
    /* Strip our own prefix: the warning says "jit:" once. */
    const char *why = strncmp(cause, "jit: ", 5) == 0 ? cause + 5 : cause;
    sk__log(SK_LOG_WARN, "jit: scope '%s': falling back to the interpreter: %s", step->plan->name, why);
  }
  sk__clear_error(); /* sk_compile succeeded: no stale message */
}

void *sk__jit_entry_of(const sk__step *step) {
  const sk__jit_step *js = step->exec == &sk__executor_jit ? step->compiled : NULL;
  void *entry = NULL;
  if (js) memcpy(&entry, &js->entry, sizeof entry);
  return entry;
}

static void jit_destroy(sk__step *step) {
  sk__jit_step *js = step->compiled;
  if (js) {
    sk__jit_release(js->object);
    free(js->run_block);
    free(js);
  }
  step->compiled = NULL;
  sk__launch_destroy_plan(step);
}

/* A step's env in one run context, over its launch state there. */
static void jit_release(void *state) {
  sk__jit_launch *l = state;
  if (!l) return;
  sk__launch_state_destroy(l->st);
  free(l);
}

static sk_status jit_prepare(const sk_program *p, const sk__step *step, sk__node_io *io, sk__watchdog *wd,
                             void **state) {
  const sk__jit_step *js = step->compiled;
  sk__launch_state *st;
  SK_RETURN_IF_ERROR(sk__launch_state_create(step->plan, p, io, wd, &st));
  sk__jit_launch *l = calloc(1, sizeof *l);
  if (!l) {
    sk__launch_state_destroy(st);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: scope '%s': out of memory for its env", step->plan->name);
  }
  l->entry = js->entry;
  l->st = st;
  l->env = (sk_jit_env){
      .n_cores = step->plan->n_cores, .flags = (sk_jit_flag *)(void *)st->flags,
      .claims = (sk_jit_claim *)(void *)st->claims,
      .io = (const struct sk__node_io *const *)st->sub_io, .run_block = js->run_block, .wait = cb_wait,
      .wake = cb_wake, .barrier = cb_barrier, .aborted = cb_aborted, .sub_barrier = cb_sub_barrier,
      .preload = cb_preload, .flush = cb_flush, .prof = cb_prof, .lib = st};
  *state = l;
  return SK_STATUS_OK;
}

static void core_main(void *arg, int64_t block, int core) {
  (void)block; /* one block per core: block == core, as in the interpreter */
  const sk__jit_launch *l = arg;
  l->entry(&l->env, core);
}

static sk_status jit_run(const sk__step *step, void *state, const sk__step_env *env, sk_team *team) {
  (void)step;
  sk__jit_launch *l = state;
  sk__launch_set_env(l->st, env);
  /* Written before the launch, which orders it before every core's reads. */
  l->env.workspace = l->st->workspaces;
  return sk__launch(l->st, team, core_main, l, &l->env.epoch);
}

const sk__step_executor sk__executor_jit = {
    .kind = SK_EXECUTOR_JIT, .name = "JIT-compiled", .prepare = jit_prepare, .release = jit_release,
    .run = jit_run, .describe = sk__launch_describe, .destroy = jit_destroy};

/* ---- public ---- */

sk_status sk_program_jit_source(const sk_program *p, const char *scope, char **source_out) {
  sk__clear_error();
  if (!p || !source_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_jit_source: %s is NULL", !p ? "program" : "source_out");
  *source_out = NULL;
  p = sk__tokens_largest(p); /* a run-time token count: the largest bucket's */
  size_t n = scope ? strlen(scope) : 0;
  for (size_t s = 0; s < p->n_steps; s++) {
    const sk__plan *plan = p->steps[s].plan;
    /* A scope that strict-scope-check split has parts "name.0", "name.1". */
    if (plan && (!scope || strcmp(plan->name, scope) == 0 ||
                 (strncmp(plan->name, scope, n) == 0 && plan->name[n] == '.')))
      return sk__jit_source(plan, p, source_out);
  }
  if (!scope) return sk__fail(SK_STATUS_NOT_FOUND, "sk_program_jit_source: the program has no super kernel");
  return sk__fail(SK_STATUS_NOT_FOUND, "sk_program_jit_source: the program has no super kernel for scope '%s'", scope);
}
