/* The two list-valued option kinds: compile-options (compiler flags) and the
 * dcci op-type pattern lists. Both are "non-empty, comma-separated"; items are
 * trimmed and an empty item is an error, since "a,,b" is almost always a typo
 * that would otherwise silently drop or add something. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "options/options.h"

static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static void free_strings(char **v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* Splits value on ',' into trimmed, owned items. An empty item is an error
 * naming the key, the whole value and the accepted values. */
static sk_status split_items(const char *key, const char *accepted, const char *value,
                             char ***items_out, size_t *n_out) {
  size_t n = 1;
  for (const char *p = value; *p; p++) n += *p == ',';
  char **items = calloc(n, sizeof *items);
  if (!items) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "option %s: out of memory", key);
  const char *p = value;
  for (size_t i = 0; i < n; i++) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char *b = p, *e = end;
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    if (b == e) {
      free_strings(items, n);
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "option %s: illegal value '%s': item %zu is empty (accepted: %s)", key,
                      value, i + 1, accepted);
    }
    items[i] = dup_range(b, (size_t)(e - b));
    if (!items[i]) {
      free_strings(items, n);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "option %s: out of memory", key);
    }
    p = *end ? end + 1 : end;
  }
  *items_out = items;
  *n_out = n;
  return SK_STATUS_OK;
}

/* ---- compile-options --------------------------------------------------- */

/* Flags are allowed by default; these are refused because they could
 * redirect the compiler's output or make it load or run other code (a
 * plugin, a specs file, another toolchain directory, a wrapper, a linker
 * script, extra inputs or libraries), or write files outside the
 * temporary object (dependency files, dumps, profiles, saved temporaries).
 * The JIT chooses the output (-o), the language, and that the result is a
 * shared object. `prefix` entries also match every flag that starts with
 * them; the others match exactly. Keep docs/options.md and SECURITY.md in
 * step with this table. */
static const struct {
  const char *flag;
  bool prefix;
} denied_flags[] = {
    {"-o", true},            /* -o, -o<file>: output */
    {"-M", true},            /* -M, -MM, -MD, -MMD, -MF, -MT, -MQ, -MG, -MP: dependency files */
    {"-fplugin", true},      /* -fplugin=, -fplugin-arg-* */
    {"-fpass-plugin", true}, /* clang */
    {"-iplugindir", true},
    {"-specs", true},
    {"-B", true},            /* toolchain directory: which cc1, as, ld run */
    {"-wrapper", true},
    {"-fuse-ld", true},      /* which linker runs */
    {"-save-temps", true},
    {"-dumpdir", true},
    {"-dumpbase", true},     /* and -dumpbase-ext */
    {"-fdump-", true},
    {"-aux-info", true},
    {"-fopt-info", true},    /* -fopt-info-...=<file> */
    {"-fdiagnostics-format", true}, /* ...=json-file, sarif-file */
    {"-fdiagnostics-add-output", true},
    {"-fdiagnostics-set-output", true},
    {"-fsave-optimization-record", true},
    {"-foptimization-record-file", true},
    {"-fprofile", true},     /* -fprofile-generate/-use/-dir/-arcs...: profile paths */
    {"-fauto-profile", true},
    {"-ftest-coverage", true},
    {"-x", true},            /* the language of the inputs */
    {"-include", true},
    {"-imacros", true},
    {"-L", true},
    {"-l", true},
    {"-T", true},            /* linker script */
    {"-z", true},            /* linker keyword */
    {"-X", true},            /* -Xlinker, -Xassembler, -Xpreprocessor, -Xclang */
    {"-Wl,", true},          /* (a list item is split at ',', so "-Wl" itself comes alone) */
    {"-Wl", false},
    {"-Wa,", true},
    {"-Wa", false},
    {"-Wp,", true},
    {"-Wp", false},
    {"-shared", true},
    {"-static", true},       /* and -static-libgcc, -static-pie... */
    {"-pie", false},
    {"-no-pie", false},
    {"-r", false},
    {"-nostdlib", true},
    {"-nostartfiles", false},
    {"-nodefaultlibs", false},
};

/* Whether flag is refused, and the entry that refuses it. */
static const char *denied_flag(const char *flag) {
  /* Long options alias the short ones (--output, --specs, --prefix,
   * --include, --language, --library-directory, --for-linker, --coverage,
   * --sysroot...): all are refused but --param. */
  if (strncmp(flag, "--", 2) == 0)
    return strcmp(flag, "--param") == 0 || strncmp(flag, "--param=", 8) == 0 ? NULL : "--";
  for (size_t i = 0; i < sizeof denied_flags / sizeof denied_flags[0]; i++) {
    size_t n = strlen(denied_flags[i].flag);
    if (denied_flags[i].prefix ? strncmp(flag, denied_flags[i].flag, n) == 0 : strcmp(flag, denied_flags[i].flag) == 0)
      return denied_flags[i].flag;
  }
  return NULL;
}

sk_status sk__options_parse_flags(const char *key, const char *accepted, const char *value,
                                  sk__options *o) {
  char **items;
  size_t n;
  SK_RETURN_IF_ERROR(split_items(key, accepted, value, &items, &n));
  for (size_t i = 0; i < n; i++) {
    /* The JIT passes each flag as one argv entry (no shell): a flag without
     * a leading '-' would be taken as an input file, and one with a space
     * would reach the compiler as a single unknown option. */
    const char *why = NULL;
    if (items[i][0] != '-') why = "does not start with '-'";
    for (const char *c = items[i]; !why && *c; c++)
      if (isspace((unsigned char)*c)) why = "contains a space (separate flags with ',')";
    if (why) {
      sk_status st = sk__fail(SK_STATUS_INVALID_ARGUMENT,
                              "option %s: illegal value '%s': flag '%s' %s (accepted: %s)", key,
                              value, items[i], why, accepted);
      free_strings(items, n);
      return st;
    }
    if (denied_flag(items[i])) {
      sk_status st = sk__fail(SK_STATUS_INVALID_ARGUMENT,
                              "option %s: flag '%s' is not allowed (it could redirect the compiler's "
                              "output or load code)",
                              key, items[i]);
      free_strings(items, n);
      return st;
    }
  }
  sk__options_free_flags(o);
  o->compile_options = items;
  o->n_compile_options = (int)n;
  return SK_STATUS_OK;
}

void sk__options_free_flags(sk__options *o) {
  free_strings(o->compile_options, (size_t)o->n_compile_options);
  o->compile_options = NULL;
  o->n_compile_options = 0;
}

sk_status sk__options_copy_flags(sk__options *dst, const sk__options *src) {
  dst->compile_options = NULL;
  dst->n_compile_options = 0;
  if (src->n_compile_options == 0) return SK_STATUS_OK;
  char **v = calloc((size_t)src->n_compile_options, sizeof *v);
  if (!v) return SK_STATUS_OUT_OF_MEMORY;
  for (int i = 0; i < src->n_compile_options; i++) {
    v[i] = dup_range(src->compile_options[i], strlen(src->compile_options[i]));
    if (!v[i]) {
      free_strings(v, (size_t)src->n_compile_options);
      return SK_STATUS_OUT_OF_MEMORY;
    }
  }
  dst->compile_options = v;
  dst->n_compile_options = src->n_compile_options;
  return SK_STATUS_OK;
}

bool sk__options_equal_strings(char *const *a, size_t na, char *const *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++)
    if (strcmp(a[i], b[i]) != 0) return false;
  return true;
}

/* ---- dcci op-type patterns --------------------------------------------- */

/* Compiles patterns[0..n) into a new array. On failure frees what it made,
 * returns NULL and reports the failing index in *bad (n when out of memory)
 * and regerror's text in why. */
static regex_t *compile_all(char *const *patterns, size_t n, size_t *bad, char *why,
                            size_t why_size) {
  regex_t *c = calloc(n, sizeof *c);
  if (!c) {
    *bad = n;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    /* No REG_NOSUB: matching needs the match span to require that the
     * pattern covers the whole op type name. */
    int rc = regcomp(&c[i], patterns[i], REG_EXTENDED);
    if (rc != 0) {
      *bad = rc == REG_ESPACE ? n : i;
      regerror(rc, &c[i], why, why_size);
      for (size_t j = 0; j < i; j++) regfree(&c[j]);
      free(c);
      return NULL;
    }
  }
  return c;
}

/* Limits on a pattern list. glibc's regcomp builds an automaton whose
 * size doubles with each nested repetition and multiplies with intervals
 * ("a" and twenty '+' took 700 MB, "(a{1000}){1000}" 200 MB), and every
 * pattern of a list is compiled: an option string must not be able to
 * exhaust memory. Op type names need neither long patterns nor intervals.
 * Within these limits the worst list measured ~6 MB (16 patterns of 128
 * characters with 4 nested '+'). Back-references are refused: they are
 * what makes matching exponential (see pattern_too_complex). */
enum { PATTERN_MAX_COUNT = 16, PATTERN_MAX_LEN = 128, PATTERN_MAX_REPEATS = 4 };

/* NULL when the pattern is within the limits, else which limit it breaks. */
static const char *pattern_too_complex(const char *pattern) {
  if (strlen(pattern) > PATTERN_MAX_LEN) return "longer than 128 characters";
  int repeats = 0;
  for (const char *c = pattern; *c; c++) {
    if (*c == '{') return "an interval {m,n}: write the repetition out";
    /* glibc's \1..\9 (an extension to ERE): matching with
     * back-references is NP-hard, and glibc's backtracking took seconds
     * for a 15-character pattern and hours for longer ones. Without them
     * a match is a walk of the automaton, polynomial in the name. */
    if (c[0] == '\\' && c[1] >= '1' && c[1] <= '9') return "a back-reference (\\1 to \\9), which is not supported";
    repeats += *c == '*' || *c == '+' || *c == '?';
  }
  return repeats > PATTERN_MAX_REPEATS ? "more than 4 repetition operators (*, +, ?)" : NULL;
}

sk_status sk__options_parse_patterns(const char *key, const char *accepted, const char *value,
                                     sk__op_pattern_list *list) {
  char **items;
  size_t n;
  SK_RETURN_IF_ERROR(split_items(key, accepted, value, &items, &n));
  if (n > PATTERN_MAX_COUNT) {
    sk_status st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "option %s: illegal value '%.300s': %zu patterns, at most %d (accepted: %s)",
                            key, value, n, PATTERN_MAX_COUNT, accepted);
    free_strings(items, n);
    return st;
  }
  for (size_t i = 0; i < n; i++) {
    const char *limit = pattern_too_complex(items[i]);
    if (!limit) continue;
    sk_status st = sk__fail(SK_STATUS_INVALID_ARGUMENT,
                            "option %s: illegal value '%.300s': pattern '%.300s' is too complex: %s (accepted: %s)", key,
                            value, items[i], limit, accepted);
    free_strings(items, n);
    return st;
  }
  size_t bad = 0;
  char why[160] = "";
  regex_t *compiled = compile_all(items, n, &bad, why, sizeof why);
  if (!compiled) {
    sk_status st;
    if (bad == n) {
      st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "option %s: out of memory", key);
    } else {
      st = sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "option %s: illegal value '%s': pattern '%s' is not a valid regular "
                    "expression: %s (accepted: %s)",
                    key, value, items[bad], why, accepted);
    }
    free_strings(items, n);
    return st;
  }
  sk__options_free_patterns(list);
  list->patterns = items;
  list->compiled = compiled;
  list->count = n;
  return SK_STATUS_OK;
}

void sk__options_free_patterns(sk__op_pattern_list *list) {
  if (list->compiled)
    for (size_t i = 0; i < list->count; i++) regfree(&list->compiled[i]);
  free(list->compiled);
  free_strings(list->patterns, list->count);
  list->patterns = NULL;
  list->compiled = NULL;
  list->count = 0;
}

sk_status sk__options_copy_patterns(sk__op_pattern_list *dst, const sk__op_pattern_list *src) {
  dst->patterns = NULL;
  dst->compiled = NULL;
  dst->count = 0;
  if (src->count == 0) return SK_STATUS_OK;
  /* A regex_t cannot be copied bitwise (it owns buffers): recompile. */
  char **v = calloc(src->count, sizeof *v);
  if (!v) return SK_STATUS_OUT_OF_MEMORY;
  for (size_t i = 0; i < src->count; i++) {
    v[i] = dup_range(src->patterns[i], strlen(src->patterns[i]));
    if (!v[i]) {
      free_strings(v, src->count);
      return SK_STATUS_OUT_OF_MEMORY;
    }
  }
  size_t bad;
  char why[160];
  regex_t *c = compile_all(v, src->count, &bad, why, sizeof why);
  if (!c) {
    free_strings(v, src->count);
    /* The source compiled once, so only memory can fail here. */
    return bad == src->count ? SK_STATUS_OUT_OF_MEMORY : SK_STATUS_INTERNAL;
  }
  dst->patterns = v;
  dst->compiled = c;
  dst->count = src->count;
  return SK_STATUS_OK;
}

bool sk__options_match(const sk__op_pattern_list *list, const char *op_type) {
  if (!list || !op_type || list->count == 0) return false;
  size_t len = strlen(op_type);
  for (size_t i = 0; i < list->count; i++) {
    regmatch_t m;
    /* POSIX regexec reports the leftmost-longest match, so a pattern that
     * can cover the whole name reports exactly [0, len). */
    if (regexec(&list->compiled[i], op_type, 1, &m, 0) == 0 && m.rm_so == 0 &&
        (size_t)m.rm_eo == len)
      return true;
  }
  return false;
}
