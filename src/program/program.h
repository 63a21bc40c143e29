/* A compiled program: the graph's nodes with their tilings, and a storage
 * plan that maps every value to a caller buffer or an internal arena.
 *
 * Immutable after sk_compile (but for its profile, under profile_lock, and
 * its count of run contexts): what a run changes (the nodes' data
 * pointers, the arena, workspaces, the super kernels' flags and barriers,
 * the watchdog, errors found in a run's data) is a run context's
 * (program/run_context.h). The program owns a default context, behind
 * default_lock, for sk_program_run and the sk_program_bind family.
 *
 * Storage: a view's output (reshape, squeeze, slice) aliases its input, so
 * values form alias classes with one root; each value sits at a byte offset
 * from its root (nonzero only below a slice). A class rooted at a graph
 * input lives in the caller's input buffer; a class holding a graph output
 * that covers the whole root (offset 0, same size) lives in that output's
 * buffer; any other class gets a slice of the arena, which it shares with
 * classes whose steps do not overlap its own (compile/arena_plan.c). Outputs that cannot be
 * placed directly (a view of an input, a part of a larger value, or a value
 * marked twice) are copied after the run. */
#ifndef SK_PROGRAM_PROGRAM_H
#define SK_PROGRAM_PROGRAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/fork.h"
#include "graph/graph.h"
#include "program/step.h"

typedef enum sk__storage_kind { SK_STORE_INPUT, SK_STORE_OUTPUT, SK_STORE_ARENA, SK_STORE_CONSTANT } sk__storage_kind;

/* A graph constant as the program holds it: its own copy (owned) or the
 * caller's borrowed buffer. */
typedef struct sk__program_constant {
  const void *data;
  bool owned;
  size_t bytes;
} sk__program_constant;

typedef struct sk__storage {
  sk__storage_kind kind;
  size_t index; /* input / output / constant index, or arena byte offset */
} sk__storage;

typedef struct sk__exec_node {
  const sk__op_def *def;
  char *name;
  /* Shapes, params and tiling; data NULL and no barrier: each run context
   * has a copy with its own data pointers and barrier. */
  sk__node_io io;
  sk__tensor *in_tensors;  /* all slots' tensors, slot after slot */
  sk_value *in_values;     /* the value of each in_tensors entry */
  size_t n_in_tensors;
  sk_value *out_values;
  void *params;            /* a deep copy of the graph node's */
  sk__tiling tiling;
  int scope;               /* graph scope index, -1 outside scopes */
  int stream;
  int *waits;              /* event edges: nodes this one waits for */
  size_t n_waits;
  /* An op with a team barrier: its own launch needs one over its blocks
   * (each run context makes it), named by watch_label, "op 'name' (type)",
   * in watchdog messages. */
  bool eager_barrier;
  char *watch_label;
  void *packed;            /* the op's pack of its constants (io.packed), aligned */
  size_t packed_bytes;
  bool packed_shared;      /* packed is another token bucket's (not freed here) */
  bool launch_only;        /* runs its blocks for their effects, no tensors (sk__graph_add_launch) */
} sk__exec_node;

typedef struct sk__io_binding {
  char *name;
  sk_value value;
  sk__tensor desc;
} sk__io_binding;

struct sk_program {
  sk__exec_node *nodes;
  size_t n_nodes;
  sk__io_binding *inputs, *outputs;
  size_t n_inputs, n_outputs;
  size_t n_values;
  sk_value *root;          /* alias-class root of each value */
  int64_t *view_offset;    /* bytes from its root's start, per value */
  sk__storage *storage;    /* per root value */
  size_t arena_bytes;      /* each run context has an arena of this size */
  sk__program_constant *constants; /* the graph's constants, by index */
  size_t n_constants;
  size_t constant_bytes;   /* their data */
  size_t packed_bytes;     /* what ops packed from them at compile */
  size_t workspace_bytes;  /* per core, max over nodes */
  sk__step *steps;
  size_t n_steps;
  int tiled_cores;         /* team size the tiling was made for */
  sk_executor executor;    /* never SK_EXECUTOR_DEFAULT */
  int64_t watchdog_ms;     /* resolved: each run context's watchdog limit */
  int profile_launches;    /* cfg.profile: time every launch */
  bool profile_subkernels; /* some super kernel has profiling=1 */
  /* Created at the first profiled run. One per program: runs of different
   * contexts serialize on profile_lock while profiling is on. */
  struct sk__profile *profile;
  sk__fork_mutex profile_lock;
  /* sk_program_run, sk_program_bind...: the default context, one run or
   * binding at a time under default_lock. */
  struct sk_run_context *default_ctx;
  sk__fork_mutex default_lock;
  /* 1 for the program itself + 1 per sk_run_context_create'd context: the
   * last to go (sk_program_destroy or the last context's destroy) frees it,
   * so a program destroyed before its contexts is not freed under them. */
  atomic_int refs;
  /* A run-time token count (program/tokens.h). A bucket program: its shapes,
   * params and tiling are for planned_tokens tokens (0: static). The
   * program the caller holds: max_tokens > 0, no nodes or steps of its own,
   * and one bucket program per planned count (or, for the reference
   * executor, programs built for each exact count a run asks for). */
  int64_t planned_tokens;
  /* The ISA every node's kernels were chosen for (sk__node_io.isa). */
  sk__isa isa;
  /* The numerics contract, resolved (sk__node_io.numerics). */
  sk_numerics numerics;
  int64_t max_tokens;
  struct sk__token_buckets *tokens;
};

/* Whether the node has an output element to compute: one without gets no
 * blocks, no workspace and no reference run. */
bool sk__node_has_output(const sk__exec_node *n);

/* An op with a team barrier, launched on its own, waits under the run
 * context's watchdog; its messages name it by the node's watch_label,
 * made here ("op 'name' (type)"). */
sk_status sk__label_eager_barrier(sk__exec_node *n);

/* A zeroed program with its locks, one reference and the default
 * watchdog limit; NULL when out of memory. */
sk_program *sk__program_new(void);
/* The end of sk_compile (and sk_fused_kernel_create), once the steps are
 * final (JIT included): the program's default context. */
sk_status sk__program_finish(sk_program *p);
/* Drops one reference (the program's own, or a context's); the last frees
 * the program. */
void sk__program_release(sk_program *p);

#endif
