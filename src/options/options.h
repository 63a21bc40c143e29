/* Super-kernel options: the parsed form of a scope's "key=value:key=value"
 * string (docs/options.md has the syntax and the table), for the planner and
 * the JIT. Parsing is table-driven (options.c): one row per option with its
 * key, kind, accepted-values text, default and parser, in the spec's order.
 */
#ifndef SK_OPTIONS_OPTIONS_H
#define SK_OPTIONS_OPTIONS_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "superkernel.h"

typedef enum { SK_PRELOAD_PER_FUNC, SK_PRELOAD_MAX, SK_PRELOAD_NONE } sk__preload_code;
typedef enum { SK_STRICT_UNSET, SK_STRICT_ABORT, SK_STRICT_BYPASS } sk__strict_scope_check;

/* Option indices: table order, and the bit of each in explicit_mask. */
typedef enum {
  SK_OPT_FUNC_ALIGN,
  SK_OPT_PRELOAD_CODE,
  SK_OPT_EARLY_START,
  SK_OPT_STREAM_FUSION,
  SK_OPT_FEED_SYNC_ALL,
  SK_OPT_PROFILING,
  SK_OPT_SPLIT_MODE,
  SK_OPT_DEBUG_DCCI_ALL,
  SK_OPT_DEBUG_SYNC_ALL,
  SK_OPT_DEBUG_AIC_NUM,
  SK_OPT_DEBUG_AIV_NUM,
  SK_OPT_COMPILE_OPTIONS,
  SK_OPT_STRICT_SCOPE_CHECK,
  SK_OPT_DCCI_BEFORE_KERNEL_START,
  SK_OPT_DCCI_AFTER_KERNEL_END,
  SK_OPT_DCCI_DISABLE_ON_KERNEL,
  SK_OPT_COUNT
} sk__option_id;

/* A dcci list: the patterns as written and their compiled forms (POSIX
 * extended regexes, matched against the whole op type name). count 0 = none. */
typedef struct sk__op_pattern_list {
  size_t count;
  char **patterns;
  regex_t *compiled;
} sk__op_pattern_list;

/* The largest func-align: a page. */
#define SK__FUNC_ALIGN_MAX 4096

typedef struct sk__options {
  int func_align;              /* 0 or a power of two in 2..SK__FUNC_ALIGN_MAX; default 512 */
  sk__preload_code preload_code;
  int early_start;             /* 0, 1, 2; default 1 */
  int stream_fusion, feed_sync_all, profiling, debug_dcci_all, debug_sync_all; /* 0/1 */
  int split_mode;              /* 1..64; default 4 */
  int debug_aic_num, debug_aiv_num; /* >= 0; 0 = not set (the upper bound, the team size, is checked by the planner) */
  int n_compile_options; char **compile_options; /* split on ',' (each non-empty, starts with '-') */
  sk__strict_scope_check strict_scope_check;
  sk__op_pattern_list dcci_before_kernel_start, dcci_after_kernel_end, dcci_disable_on_kernel;
  unsigned explicit_mask;      /* bit i set when option i (sk__option_id) was given */
} sk__options;

/* All defaults, nothing owned, explicit_mask 0. */
void sk__options_init_defaults(sk__options *o);

/* Parses s over the defaults (s NULL or "" = all defaults). *o is output
 * only: whatever it held before is not freed. On error *o holds the defaults
 * (nothing owned) and sk_last_error() names the key and the accepted values.
 * A pair without '=' is skipped with an SK_LOG_WARN message. */
sk_status sk__options_parse(const char *s, sk__options *o);

/* Layers a scope's string over a global default string: options given in the
 * scope win, the rest come from the global string, then the defaults. Either
 * may be NULL. An option may appear in both (that is not "given twice").
 * explicit_mask is the union of both strings' masks. Errors in the global
 * string are prefixed "global options: ". */
sk_status sk__options_parse_layered(const char *global, const char *scope, sk__options *o);

/* Frees what *o owns and leaves it at the defaults; safe to call twice. */
void sk__options_free(sk__options *o);

/* Deep copy (patterns are recompiled). dst is output only; on failure
 * (SK_STATUS_OUT_OF_MEMORY) it holds the defaults. */
sk_status sk__options_copy(sk__options *dst, const sk__options *src);

/* Effective options, defaults included, table order, "key=value:...";
 * options with no value (compile-options, strict-scope-check and the dcci
 * lists when unset) are left out, so the output parses back to equal
 * options. Writes at most size bytes (NUL-terminated when size > 0; buf may
 * be NULL when size is 0) and returns the full length, like snprintf. */
size_t sk__options_render(const sk__options *o, char *buf, size_t size);

/* Whether op_type matches one of the list's patterns over its whole name
 * ("grouped_.*" matches "grouped_matmul", "matmul" does not match
 * "quant_matmul"). An empty list or a NULL op_type matches nothing. */
bool sk__options_match(const sk__op_pattern_list *list, const char *op_type);

/* Whether two option sets have the same effective values (explicit_mask is
 * ignored: stating a default is the same as leaving it out). For "identical
 * scopes compile once". */
bool sk__options_equal(const sk__options *a, const sk__options *b);

/* The key of option id ("func-align"), or NULL when out of range. */
const char *sk__options_key(sk__option_id id);

/* ---- shared by options.c and options_lists.c only ---------------------- */

/* The list kinds' value parsers: split value on ',', trim each item, reject
 * empty items; on error they call sk__fail naming key and accepted. On
 * success the previous contents of the target are replaced (freed). */
sk_status sk__options_parse_flags(const char *key, const char *accepted, const char *value,
                                  sk__options *o);
sk_status sk__options_parse_patterns(const char *key, const char *accepted, const char *value,
                                     sk__op_pattern_list *list);
void sk__options_free_flags(sk__options *o);
void sk__options_free_patterns(sk__op_pattern_list *list);
sk_status sk__options_copy_flags(sk__options *dst, const sk__options *src);
sk_status sk__options_copy_patterns(sk__op_pattern_list *dst, const sk__op_pattern_list *src);
bool sk__options_equal_strings(char *const *a, size_t na, char *const *b, size_t nb);

#endif
