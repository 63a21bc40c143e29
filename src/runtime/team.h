/* Internal view of the core team (the public API is in superkernel.h, section
 * "Core team"): barriers usable inside a launch and the calling thread's core.
 *
 * Threading model. A team of N cores is N-1 persistent worker threads plus
 * whichever thread calls sk_team_launch, which acts as core 0 for that launch.
 * Block b of a launch runs on core b % N; each core runs its blocks in
 * increasing order. Launches on one team are serialized by a mutex; a launch
 * from inside a block (of any team) is refused with SK_STATUS_INVALID_STATE.
 *
 * Destroying a team while another thread is launching on it is the caller's
 * bug: sk_team_destroy waits for a launch already in progress to finish, but a
 * launch that starts afterwards uses freed memory. sk_team_destroy called from
 * inside a block of the same team logs an error and leaves the team alive
 * (the alternative is a deadlock).
 *
 * After fork() the child has only the forking thread: a team made before the
 * fork has no workers there. Launches and runs on it in the child fail at
 * once with SK_STATUS_INVALID_STATE (sk__team_check_process); destroying it
 * there is safe (nothing is joined). Teams made in the child work.
 */
#ifndef SK_RUNTIME_TEAM_H
#define SK_RUNTIME_TEAM_H

#include "runtime/barrier.h"
#include "superkernel.h"

/* Largest team: also the limit for cfg->num_cores and $SK_NUM_THREADS. */
#define SK_TEAM_MAX_CORES 1024

/* The barrier over all cores of the team, for use inside a launch: returns
 * when every core has called it (once more than its previous call), and every
 * write before any core's call is visible after every core's return.
 *
 * All num_cores cores must take part the same number of times, so a launch
 * that uses it should give every core at least one block (n_blocks a multiple
 * of num_cores, or exactly num_cores) and call it the same number of times on
 * each core; otherwise it deadlocks. core is the caller's core index (the
 * `core` argument of the block function); it is reserved for tree barriers
 * and not checked. */
void sk__team_barrier(sk_team *team, int core);

/* sk_team_launch with the blocks claimed rather than dealt: each core takes
 * the next block no core has taken until none is left, so a core that
 * runs slower takes fewer (blocks whose costs are known only at run time,
 * sk__tiling.claim). Not for blocks that meet at sk__team_barrier: which
 * core runs which block is not fixed. */
sk_status sk__team_launch_claimed(sk_team *team, sk_block_fn fn, void *arg, int64_t n_blocks);

/* Core index of the calling thread while it runs a block of a launch
 * (0..num_cores-1); -1 outside any launch. For assertions and per-core
 * scratch lookup. */
int sk__team_current_core(void);
/* Runs, bindings and profile calls of programs from inside a block of a
 * running launch would wait for locks that launch holds (its own program's)
 * or nest a launch: they are refused with SK_STATUS_INVALID_STATE naming
 * fn. SK_STATUS_OK outside blocks. */
sk_status sk__refuse_in_block(const char *fn);

/* SK_STATUS_OK when team is NULL or was made in this process; else
 * SK_STATUS_INVALID_STATE naming fn, the process the team was made in and
 * what to do (a child after fork(): make a new team). Every run and launch
 * checks this first, before taking any lock. */
sk_status sk__team_check_process(const sk_team *team, const char *fn);

/* Test-only fault injection: the next sk_team_create (in any thread) that
 * gets to worker thread `worker` (1..num_cores-1) fails to create it, as if
 * pthread_create had returned EAGAIN. 0 disarms. */
void sk__team_test_fail_thread_create(int worker);

#endif
