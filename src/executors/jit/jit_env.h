/* The JIT ABI: what a generated super kernel receives from the library.
 *
 * The generated C file must compile on its own (only <stdint.h>), so it
 * carries its own copy of these declarations. Both copies come from the
 * lists below: this header expands them into C declarations, codegen.c
 * prints them as text (sk__jit_env_text). A field added here therefore
 * appears in the generated source too, which changes the source and so the
 * cache key: a stale object compiled against an older layout is never
 * loaded. SK_JIT_LAYOUT_VERSION is for changes the text does not show (a
 * callback's meaning); bump it then. It is printed into the source and
 * exported as sk_jit_layout, checked at load.
 */
#ifndef SK_JIT_JIT_ENV_H
#define SK_JIT_JIT_ENV_H

#include <stdint.h>

#define SK_JIT_LAYOUT_VERSION 2

/* A plan flag as the generated code sees it: sk__wait_word's layout (the
 * value first, the sleeper count next, 64 bytes; jit.c asserts it). */
#define SK_JIT_FLAG_BODY \
  { uint32_t value; uint32_t sleepers; unsigned char pad_[56]; }

/* A claimed sub-kernel's counters: sk__claim's layout (executors/launch.h):
 * the next block to hand out, then the blocks finished, 64 bytes each. */
#define SK_JIT_CLAIM_BODY \
  { int64_t next; unsigned char pad0_[56]; int64_t finished; unsigned char pad1_[56]; }

/* Callback types: T(return type, name, parameter list). */
#define SK_JIT_FN_TYPES(T)                                                                   \
  T(void, sk_jit_run_fn, (const struct sk__node_io *io, int64_t block, void *workspace))     \
  T(void, sk_jit_flag_fn, (const struct sk_jit_env *env, int32_t flag))                      \
  T(int32_t, sk_jit_wait_fn, (const struct sk_jit_env *env, int32_t flag))                   \
  T(int32_t, sk_jit_index_fn, (const struct sk_jit_env *env, int32_t index))                 \
  T(int32_t, sk_jit_check_fn, (const struct sk_jit_env *env))                                \
  T(void, sk_jit_preload_fn, (const struct sk_jit_env *env, int32_t sub, int32_t core))      \
  T(void, sk_jit_flush_fn, (const struct sk_jit_env *env, int32_t sub, int64_t block, int32_t outputs)) \
  T(void, sk_jit_prof_fn, (const struct sk_jit_env *env, int32_t core, int32_t kind, int32_t sub, \
                           int64_t block, uint64_t t0, uint64_t t1))

/* The env's fields: F(type, name, what it is). */
#define SK_JIT_ENV_FIELDS(F)                                                                         \
  F(uint32_t, epoch, "this launch's number: a flag is signalled in this launch when it equals it")  \
  F(int32_t, n_cores, "the team size the plan was made for")                                         \
  F(sk_jit_flag *, flags, "the plan's flags")                                                        \
  F(sk_jit_claim *, claims, "per sub-kernel: a claimed one's counters, zeroed before each launch")   \
  F(const struct sk__node_io *const *, io, "per sub-kernel: its node's io (opaque here)")           \
  F(const sk_jit_run_fn *, run_block, "per sub-kernel: its op's run_block")                          \
  F(void *const *, workspace, "per core: scratch for run_block, or NULL for none")                   \
  F(sk_jit_wait_fn, wait, "wait until flag == epoch: spin, yield, futex sleep; nonzero: abandon")     \
  F(sk_jit_flag_fn, wake, "sk__wait_wake(flag): futex wake of its sleepers")                         \
  F(sk_jit_index_fn, barrier, "sk__barrier_wait on the plan's barrier `index`; nonzero: abandon")     \
  F(sk_jit_index_fn, sub_barrier, "sk__barrier_wait on sub-kernel `index`'s barrier; nonzero: abandon") \
  F(sk_jit_check_fn, aborted, "nonzero once the watchdog abandoned this launch")                      \
  F(sk_jit_preload_fn, preload, "prefetch a sub-kernel's read-only operands for a core's blocks")   \
  F(sk_jit_flush_fn, flush, "clflush a block's inputs (outputs = 0) or outputs (1)")                 \
  F(sk_jit_prof_fn, prof, "a profiling record; kind 0 run, 1 wait, 2 barrier; block -1 if none")     \
  F(void *, lib, "the library's state behind the callbacks")

#define SK__JIT_STR_(x) #x
#define SK__JIT_STR(x) SK__JIT_STR_(x)

/* run_block's io is the library's struct sk__node_io: by its tag, the same
 * type here and (incomplete) in the generated file, so the op's own
 * run_block is stored and called without a cast. */
struct sk__node_io;
typedef struct sk_jit_flag SK_JIT_FLAG_BODY sk_jit_flag;
typedef struct sk_jit_claim SK_JIT_CLAIM_BODY sk_jit_claim;
typedef struct sk_jit_env sk_jit_env;

#define SK__JIT_TYPEDEF(ret, name, params) typedef ret(*name) params;
SK_JIT_FN_TYPES(SK__JIT_TYPEDEF)
#undef SK__JIT_TYPEDEF

struct sk_jit_env {
#define SK__JIT_FIELD(type, name, doc) type name;
  SK_JIT_ENV_FIELDS(SK__JIT_FIELD)
#undef SK__JIT_FIELD
};

/* The generated object's exports. */
typedef void (*sk_jit_entry_fn)(const sk_jit_env *env, int core);
#define SK_JIT_ENTRY_SYMBOL "sk_jit_entry"
#define SK_JIT_KEY_SYMBOL "sk_jit_key"
#define SK_JIT_LAYOUT_SYMBOL "sk_jit_layout"

#endif
