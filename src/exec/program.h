/* A compiled program: the graph's nodes with their tilings, and a storage
 * plan that maps every value to a caller buffer or an internal arena.
 *
 * Storage: a view's output (reshape, squeeze, slice) aliases its input, so
 * values form alias classes with one root; each value sits at a byte offset
 * from its root (nonzero only below a slice). A class rooted at a graph
 * input lives in the caller's input buffer; a class holding a graph output
 * that covers the whole root (offset 0, same size) lives in that output's
 * buffer; any other class gets a slice of the arena. Outputs that cannot be
 * placed directly (a view of an input, a part of a larger value, or a value
 * marked twice) are copied after the run. */
#ifndef SK_EXEC_PROGRAM_H
#define SK_EXEC_PROGRAM_H

#include <pthread.h>

#include "core/run_error.h"
#include "graph/graph.h"
#include "runtime/watchdog.h"

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
  sk__node_io io;          /* tensors' data bound at each run */
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
  struct sk__barrier *eager_barrier; /* ops with barriers: over the launch's blocks */
  void *packed;            /* the op's pack of its constants (io.packed), aligned */
  size_t packed_bytes;
  char *watch_label;       /* "op 'name' (type)": names it in watchdog messages */
} sk__exec_node;

struct sk__plan;
struct sk__jit_step;

/* What a run does, in order: one op's own launch, or one super kernel. */
typedef struct sk__step {
  size_t node;             /* an eager step's node */
  struct sk__plan *plan;   /* a super kernel's plan, NULL for an eager step */
  /* A super kernel the JIT compiled (src/jit/): its loaded entry and state;
   * NULL when the plan is interpreted. */
  void *jit_entry;
  struct sk__jit_step *jit;
} sk__step;

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
  size_t arena_bytes;
  void *arena;
  sk__program_constant *constants; /* the graph's constants, by index */
  size_t n_constants;
  size_t constant_bytes;   /* their data */
  size_t packed_bytes;     /* what ops packed from them at compile */
  size_t workspace_bytes;  /* per core, max over nodes */
  void **workspaces;       /* one per core of the largest team seen */
  int n_workspaces;
  sk__step *steps;
  size_t n_steps;
  int tiled_cores;         /* team size the tiling was made for */
  sk_executor executor;    /* never SK_EXECUTOR_DEFAULT */
  int profile_launches;    /* cfg.profile: time every launch */
  bool profile_subkernels; /* some super kernel has profiling=1 */
  struct sk__profile *profile; /* created at the first profiled run */
  pthread_mutex_t run_lock; /* one run at a time: the arena is shared */
  /* sk_program_bind: the bound buffer of each input ([0]) and output ([1]),
   * NULL while unbound; their count; whether the nodes' tensors already
   * point into exactly these buffers (a bound run then rebinds nothing). */
  void **bound[2];
  size_t n_bound[2];
  bool nodes_hold_bound;
  sk__watchdog watchdog;   /* watches every wait inside this program's launches */
  sk__run_error run_error; /* what a block found wrong in a run's data */
};

/* Runs the program with input i in in[i] and output j in out[j] (checked
 * by the caller); bound: in and out are p->bound (the nodes are not
 * rebound when the last run used them too). Takes the run lock. */
sk_status sk__program_run_buffers(sk_program *p, sk_team *team, void *const *in, void *const *out, bool bound);

/* Whether the node has an output element to compute: one without gets no
 * blocks, no workspace and no reference run. */
bool sk__node_has_output(const sk__exec_node *n);

/* An op with a team barrier, launched on its own, waits under the
 * program's watchdog; its messages name it "op 'name' (type)". */
sk_status sk__watch_eager_barrier(sk_program *p, sk__exec_node *n);
/* After such an op's own launch: SK_STATUS_TIMEOUT (its barrier reset)
 * when the watchdog abandoned it, else SK_STATUS_OK. */
sk_status sk__settle_eager_barrier(sk_program *p, sk__exec_node *n);

#endif
