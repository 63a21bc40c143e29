/* The planner's output: one super kernel's per-core task lists.
 *
 * A super kernel is launched once; core c walks tasks[core_begin[c] ..
 * core_begin[c+1]) in order:
 *   RUN      run block `block` of sub-kernel `sub`, then signal its flag
 *            (flag >= 0) so blocks on other cores waiting for it may go on;
 *   WAIT     wait until the flags deps[block .. block+count) are signalled
 *            in this launch (early start: only the producer blocks whose
 *            output bytes this core's next block reads);
 *   BARRIER  barrier `flag` over its core set (SyncAll, cube-core or
 *            vector-core sync, or a stream chain's cores);
 *   PRELOAD  prefetch sub-kernel `sub`'s read-only operands (weights and
 *            other inputs from outside the scope) for this core's blocks;
 *   FLUSH    write back and evict (clflush) the bytes block `block` of
 *            `sub` reads (arg 0) or writes (arg 1): the dcci options;
 *   COMPLEMENT  a core with no block of a barrier-using sub-kernel joins
 *            its barrier as often as each block calls it (feed-sync-all);
 *   CLAIM    run blocks of claimed sub-kernel `sub` that no core has taken
 *            yet, one at a time, until none is left: each waits for its
 *            own producers' flags first and signals its own flag after
 *            (the sub-kernel's claim_waits and claim_flags); the core that
 *            finishes the last block signals `flag` (>= 0), the flag of
 *            the whole sub-kernel.
 * A flag counts completed launches, so "signalled in this launch" is
 * "equals the launch epoch" and nothing is reset between launches.
 *
 * A claimed sub-kernel (its op's tiling asks: the blocks' costs are known
 * only at run time, an expert routing, or cores of one machine run at
 * different speeds) is not dealt out: each of its cores has one CLAIM
 * task, so a core the machine runs slower takes fewer blocks. Blocks are
 * claimed in order, and each waits only for the producer blocks whose
 * output bytes it reads, as a dealt block does (early start across
 * claimed sub-kernels: a row tile of a second matmul starts once the first
 * matmul's tile of those rows is done, on whichever core). A consumer that
 * reads more than SK_CLAIM_DEPS_MAX blocks of a claimed producer (an
 * expert's rows: any of them) waits for the producer's whole flag
 * instead. Which core ran a block never changes the block's result, so
 * outputs stay bitwise those of the dealt plan.
 *
 * A plan is immutable after sk_compile: what a launch changes (flags,
 * epoch, barriers, pending preloads) is a run context's, one
 * sk__launch_state per super kernel (executors/launch.h).
 */
#ifndef SK_PROGRAM_PLAN_H
#define SK_PROGRAM_PLAN_H

#include <stdint.h>

#include "program/program.h"
#include "runtime/barrier.h"
#include "options/options.h"

/* The seed's super-kernel types. */
typedef enum sk__sk_type {
  SK_SK_MIX_AIV_1_0, /* vector sub-kernels only */
  SK_SK_MIX_AIC_1_0, /* cube only */
  SK_SK_MIX_AIC_1_1, /* both; vector blocks <= cube blocks */
  SK_SK_MIX_AIC_1_2, /* both; more vector blocks than cube blocks */
} sk__sk_type;

const char *sk__sk_type_name(sk__sk_type type);
/* Profiles' "Core Type": MIX_AIC or AIV / AIC. */
const char *sk__sk_core_type(sk__sk_type type);

typedef enum sk__task_kind {
  SK_TASK_RUN,
  SK_TASK_WAIT,
  SK_TASK_BARRIER,
  SK_TASK_PRELOAD,
  SK_TASK_FLUSH,
  SK_TASK_COMPLEMENT,
  SK_TASK_CLAIM,
} sk__task_kind;

typedef struct sk__task {
  uint8_t kind;
  uint8_t arg;   /* FLUSH: 0 inputs, 1 outputs */
  uint16_t sub;
  int32_t flag;  /* RUN, CLAIM: flag to signal or -1; BARRIER: barrier index */
  int64_t block; /* RUN / FLUSH: block; WAIT: first entry in deps */
  int64_t count; /* WAIT: number of flags */
} sk__task;

typedef struct sk__subkernel {
  size_t node;            /* index into the program's nodes */
  sk__kernel_kind kind;
  int64_t n_blocks;
  int core_first, n_cores; /* its cores: [core_first, core_first + n_cores) */
  int chain;              /* stream chain under stream fusion, else 0 */
  int barriers_per_block; /* team barriers each block calls (the op's) */
  bool claimed;           /* its cores claim its blocks (CLAIM), not dealt: block b runs anywhere */
  /* Claimed: block b first waits for the flags deps[claim_waits[b] ..
   * claim_waits[b + 1]) and after running signals claim_flags[b] (-1: no
   * consumer waits for that block alone). Owned by the plan. */
  int64_t *claim_waits;
  int32_t *claim_flags;
  bool *external;         /* per input tensor: produced outside this super
                           * kernel (what PRELOAD may prefetch) */
  /* Its tiling in this plan: the node's own, or (retiled, owned by the
   * plan) one for its core count; io is the node's io with that tiling
   * (shapes only), what footprints are asked with. Run contexts give the
   * node's io the same tiling. The program's node is never changed. */
  sk__tiling tiling;
  bool retiled;
  sk__node_io io;
  /* Per block b, its footprint in byte spans: the node's n_in_tensors
   * reads, then its n_out writes, at spans[b * (n_in_tensors + n_out)].
   * Made by the planner when a task of the plan preloads or flushes this
   * sub-kernel (what those tasks read at run time), else NULL. Owned. */
  sk__span *spans;
} sk__subkernel;

/* The most blocks of a claimed producer a consumer block waits for one by
 * one; past that it waits for the producer's whole flag. */
#define SK_CLAIM_DEPS_MAX 16

typedef struct sk__barrier_set {
  int core_first, n_cores;
  int after_sub; /* the sub-kernel it follows: names it in watchdog messages */
} sk__barrier_set;

typedef struct sk__plan {
  char *name;              /* the scope's name (with a part suffix when split) */
  int32_t step;            /* its step in the program (for profiles) */
  sk__options options;     /* effective options */
  sk__sk_type type;
  int n_cores;             /* team size planned for */
  int64_t block_dim;       /* the seed's block count: the largest sub-kernel's */
  size_t workspace_bytes;  /* per core, the most its sub-kernels' own tilings need */
  int aic_cores, aiv_cores;
  int stream_fused;        /* 1 when two chains run on disjoint cores */
  sk__subkernel *subs;
  size_t n_subs;
  sk__task *tasks;
  size_t n_tasks;
  size_t *core_begin;      /* n_cores + 1 */
  int32_t *deps;
  size_t n_deps;
  sk__barrier_set *barrier_sets; /* per barrier: its cores */
  int n_barriers;
  bool any_sub_barrier;    /* some sub-kernel's op uses a team barrier */
  int32_t n_flags;
  const char *scope_label; /* "scope 'sk1'", for the watchdog's messages */
  const char **sub_labels; /* per sub: "scope 'sk1', sub-kernel 'gmm2' (grouped_matmul)" */
  char **labels;           /* owns every label string above and the barriers' */
  size_t n_labels;
  size_t preload_bytes;    /* cap per PRELOAD task */
} sk__plan;

/* Plans the sub-kernels nodes[0..n) of program p (in graph order, all
 * fusable, views skipped by the caller) for a team of n_cores. A sub-kernel
 * on fewer cores than the program was tiled for gets a tiling of its own,
 * kept in the plan (sk__subkernel.tiling); plan->workspace_bytes is the
 * per-core scratch those tilings need, for the caller to provide. */
sk_status sk__plan_build(const sk_program *p, const size_t *nodes, size_t n, const char *name,
                         const sk__options *options, int n_cores, sk__plan **plan_out);
void sk__plan_destroy(sk__plan *plan);

/* A label for watchdog messages, printf-style, owned by the plan; NULL
 * (with the error set) when out of memory. */
const char *sk__plan_label(sk__plan *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The plan in readable form, one line per task (plus a header), into a
 * malloc'd string. */
char *sk__plan_format(const sk__plan *plan, const sk_program *p);

#endif
