/* Super-kernel options: "key=value:key=value" parsed through one table (key,
 * kind, accepted-values text, default, parser) in the spec's order. Every
 * operation that walks the options (defaults, free, copy, equal, layering,
 * render) walks the table, so adding an option is one row plus its field.
 * The list kinds (compile-options, dcci patterns) live in options_lists.c. */
#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "options/options.h"

/* Enum fields are read and written through int pointers by the table. */
_Static_assert(sizeof(sk__preload_code) == sizeof(int), "enum field size");
_Static_assert(sizeof(sk__strict_scope_check) == sizeof(int), "enum field size");
_Static_assert(SK_OPT_COUNT <= sizeof(unsigned) * CHAR_BIT, "explicit_mask width");

typedef enum { KIND_INT, KIND_ENUM, KIND_FLAGS, KIND_PATTERNS } opt_kind;

typedef struct opt_def opt_def;
/* A value parser: value is trimmed, unquoted and non-empty. It stores into
 * o or fails through sk__fail naming the key and the accepted values. */
typedef sk_status (*opt_parse_fn)(const opt_def *d, const char *value, sk__options *o);

struct opt_def {
  const char *key;
  opt_kind kind;
  size_t offset;        /* of the field (int, enum or pattern list) */
  const char *accepted; /* for messages and docs */
  const char *def;      /* default, in the syntax of a value; NULL = unset */
  opt_parse_fn parse;
  int min, max;             /* KIND_INT range (parse_range) */
  const char *const *names; /* KIND_ENUM: spelling of each enum value, NULL = unset */
  int n_names;
};

static sk_status parse_range(const opt_def *d, const char *value, sk__options *o);
static sk_status parse_align(const opt_def *d, const char *value, sk__options *o);
static sk_status parse_enum(const opt_def *d, const char *value, sk__options *o);
static sk_status parse_flags(const opt_def *d, const char *value, sk__options *o);
static sk_status parse_patterns(const opt_def *d, const char *value, sk__options *o);

static const char *const preload_names[] = {"per-func", "max", "none"};
static const char *const strict_names[] = {NULL, "abort", "bypass"};

#define F(field) offsetof(sk__options, field)
#define BOOL_OPT(k, field) \
  {k, KIND_INT, F(field), "0, 1", "0", parse_range, 0, 1, NULL, 0}
#define DCCI_ACCEPTED \
  "non-empty, comma-separated op types (POSIX extended regular expressions, matched against the whole name)"

/* Table order = the spec's order = sk__option_id = explicit_mask bits. */
static const opt_def table[SK_OPT_COUNT] = {
    {"func-align", KIND_INT, F(func_align), "0 or a power of two from 2 to 4096", "512", parse_align, 0, 0, NULL, 0},
    {"preload-code", KIND_ENUM, F(preload_code), "max, none, per-func", "per-func", parse_enum, 0, 0,
     preload_names, 3},
    {"early-start", KIND_INT, F(early_start), "0, 1, 2", "1", parse_range, 0, 2, NULL, 0},
    BOOL_OPT("stream-fusion", stream_fusion),
    BOOL_OPT("feed-sync-all", feed_sync_all),
    BOOL_OPT("profiling", profiling),
    {"split-mode", KIND_INT, F(split_mode), "an integer in 1..64", "4", parse_range, 1, 64, NULL, 0},
    BOOL_OPT("debug-dcci-all", debug_dcci_all),
    BOOL_OPT("debug-sync-all", debug_sync_all),
    {"debug-aic-num", KIND_INT, F(debug_aic_num), "an integer >= 0, at most the team size", "0",
     parse_range, 0, INT_MAX, NULL, 0},
    {"debug-aiv-num", KIND_INT, F(debug_aiv_num), "an integer >= 0, at most the team size", "0",
     parse_range, 0, INT_MAX, NULL, 0},
    {"compile-options", KIND_FLAGS, 0,
     "non-empty, comma-separated compiler flags, each starting with '-', no spaces", NULL,
     parse_flags, 0, 0, NULL, 0},
    {"strict-scope-check", KIND_ENUM, F(strict_scope_check), "abort, bypass", NULL, parse_enum, 0, 0,
     strict_names, 3},
    {"dcci-before-kernel-start", KIND_PATTERNS, F(dcci_before_kernel_start), DCCI_ACCEPTED, NULL,
     parse_patterns, 0, 0, NULL, 0},
    {"dcci-after-kernel-end", KIND_PATTERNS, F(dcci_after_kernel_end), DCCI_ACCEPTED, NULL,
     parse_patterns, 0, 0, NULL, 0},
    {"dcci-disable-on-kernel", KIND_PATTERNS, F(dcci_disable_on_kernel), DCCI_ACCEPTED, NULL,
     parse_patterns, 0, 0, NULL, 0},
};
#undef F
#undef BOOL_OPT

static int *int_field(sk__options *o, const opt_def *d) { return (int *)((char *)o + d->offset); }
static const int *cint_field(const sk__options *o, const opt_def *d) {
  return (const int *)((const char *)o + d->offset);
}
static sk__op_pattern_list *list_field(sk__options *o, const opt_def *d) {
  return (sk__op_pattern_list *)((char *)o + d->offset);
}
static const sk__op_pattern_list *clist_field(const sk__options *o, const opt_def *d) {
  return (const sk__op_pattern_list *)((const char *)o + d->offset);
}

const char *sk__options_key(sk__option_id id) {
  return (unsigned)id < SK_OPT_COUNT ? table[id].key : NULL;
}

/* ---- value parsers ------------------------------------------------------- */

static sk_status illegal(const opt_def *d, const char *value) {
  return sk__fail(SK_STATUS_INVALID_ARGUMENT, "option %s: illegal value '%s' (accepted: %s)",
                  d->key, value, d->accepted);
}

/* Decimal digits only: no sign (every integer option is non-negative), no
 * base prefix, no trailing garbage, nothing above INT_MAX. Leading zeros are
 * read as decimal ("010" is ten), never octal. */
static bool parse_decimal(const char *s, int *out) {
  if (!*s) return false;
  long long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
    if (v > INT_MAX) return false;
  }
  *out = (int)v;
  return true;
}

static sk_status parse_range(const opt_def *d, const char *value, sk__options *o) {
  int v;
  if (!parse_decimal(value, &v) || v < d->min || v > d->max) return illegal(d, value);
  *int_field(o, d) = v;
  return SK_STATUS_OK;
}

static sk_status parse_align(const opt_def *d, const char *value, sk__options *o) {
  int v;
  /* 0 = no alignment attribute; the spec makes 1 illegal, and v & (v - 1)
   * is zero only for 0 and powers of two. A page is the most any function
   * needs: 2^30 was accepted once and one model wrote 1 GB of objects. */
  if (!parse_decimal(value, &v) || v == 1 || v > SK__FUNC_ALIGN_MAX || (v & (v - 1)) != 0) return illegal(d, value);
  *int_field(o, d) = v;
  return SK_STATUS_OK;
}

static sk_status parse_enum(const opt_def *d, const char *value, sk__options *o) {
  for (int i = 0; i < d->n_names; i++)
    if (d->names[i] && strcmp(d->names[i], value) == 0) {
      *int_field(o, d) = i;
      return SK_STATUS_OK;
    }
  return illegal(d, value);
}

static sk_status parse_flags(const opt_def *d, const char *value, sk__options *o) {
  return sk__options_parse_flags(d->key, d->accepted, value, o);
}

static sk_status parse_patterns(const opt_def *d, const char *value, sk__options *o) {
  return sk__options_parse_patterns(d->key, d->accepted, value, list_field(o, d));
}

/* ---- per-field helpers driven by kind ------------------------------------- */

static void field_free(sk__options *o, const opt_def *d) {
  if (d->kind == KIND_FLAGS) sk__options_free_flags(o);
  if (d->kind == KIND_PATTERNS) sk__options_free_patterns(list_field(o, d));
}

/* Moves field d from src to dst (dst's old value freed, src's emptied). */
static void field_move(sk__options *dst, sk__options *src, const opt_def *d) {
  field_free(dst, d);
  if (d->kind == KIND_FLAGS) {
    dst->compile_options = src->compile_options;
    dst->n_compile_options = src->n_compile_options;
    src->compile_options = NULL;
    src->n_compile_options = 0;
  } else if (d->kind == KIND_PATTERNS) {
    *list_field(dst, d) = *list_field(src, d);
    *list_field(src, d) = (sk__op_pattern_list){0};
  } else {
    *int_field(dst, d) = *int_field(src, d);
  }
}

void sk__options_init_defaults(sk__options *o) {
  memset(o, 0, sizeof *o);
  /* Defaults go through the parsers, so the table's text is the one source
   * of truth (and a default that is not a legal value would show at once). */
  for (int i = 0; i < SK_OPT_COUNT; i++)
    if (table[i].def) (void)table[i].parse(&table[i], table[i].def, o);
}

void sk__options_free(sk__options *o) {
  if (!o) return;
  for (int i = 0; i < SK_OPT_COUNT; i++) field_free(o, &table[i]);
  sk__options_init_defaults(o);
}

/* ---- the string -------------------------------------------------------- */

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

/* Trims, strips one pair of surrounding double quotes, trims again. */
static char *clean(char *s) {
  s = trim(s);
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
    s[n - 1] = '\0';
    s = trim(s + 1);
  }
  return s;
}

static void known_keys(char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < SK_OPT_COUNT && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", table[i].key);
}

/* Edit distance between two short keys, compared case-insensitively with
 * '_' as '-', for the "did you mean" hint. */
static int distance(const char *a, const char *b) {
  enum { MAX = 64 };
  size_t na = strlen(a), nb = strlen(b);
  if (na >= MAX || nb >= MAX) return INT_MAX;
  int row[MAX + 1];
  for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int ca = tolower((unsigned char)(a[i - 1] == '_' ? '-' : a[i - 1]));
      int cb = tolower((unsigned char)b[j - 1]);
      int best = diag + (ca != cb);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = row[j];
      row[j] = best;
    }
  }
  return row[nb];
}

static sk_status unknown_key(const char *key) {
  char keys[512], hint[96] = "";
  known_keys(keys, sizeof keys);
  int best = INT_MAX, best_i = -1;
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    int dist = distance(key, table[i].key);
    if (dist < best) best = dist, best_i = i;
  }
  /* Close enough to be a typo: a couple of edits, or a third of the key. */
  if (best_i >= 0 && (best <= 2 || best * 3 <= (int)strlen(table[best_i].key)))
    snprintf(hint, sizeof hint, "did you mean '%s'? ", table[best_i].key);
  return sk__fail(SK_STATUS_INVALID_ARGUMENT, "options: unknown key '%s' (%sknown keys: %s)", key,
                  hint, keys);
}

static int find_key(const char *key) {
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    const char *a = key, *b = table[i].key;
    while (*a && (*a == *b || (*a == '_' && *b == '-'))) a++, b++;
    if (*a == '\0' && *b == '\0') return i;
  }
  return -1;
}

/* One "key=value" piece; given_as[i] remembers how option i was spelled,
 * for the "given twice" message. */
static sk_status parse_pair(char *pair, sk__options *o, const char **given_as) {
  pair = clean(pair);
  if (!*pair) return SK_STATUS_OK; /* "a=1::b=2", a trailing ':' */
  char *eq = strchr(pair, '=');
  if (!eq) {
    sk__log(SK_LOG_WARN, "options: skipping '%s': no '=' in it (expected key=value)", pair);
    return SK_STATUS_OK;
  }
  *eq = '\0';
  char *key = clean(pair), *value = clean(eq + 1);
  if (!*key) {
    char keys[512];
    known_keys(keys, sizeof keys);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "options: empty key in '=%s' (known keys: %s)",
                    value, keys);
  }
  int i = find_key(key);
  if (i < 0) return unknown_key(key);
  const opt_def *d = &table[i];
  if (given_as[i]) {
    if (strcmp(given_as[i], key) != 0)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "option %s: given twice, as '%s' and as '%s' (accepted: %s)", d->key,
                      given_as[i], key, d->accepted);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "option %s: given twice (accepted: %s)", d->key,
                    d->accepted);
  }
  given_as[i] = key;
  if (!*value)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "option %s: empty value (accepted: %s)", d->key,
                    d->accepted);
  /* A quote left inside a value is almost always a quoted value that
   * contained ':' and was cut there ('compile-options="-a:-b"'). */
  if (strchr(value, '"'))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "option %s: illegal value '%s': a double quote may only surround the whole "
                    "value, and ':' always ends a value (accepted: %s)",
                    d->key, value, d->accepted);
  SK_RETURN_IF_ERROR(d->parse(d, value, o));
  o->explicit_mask |= 1u << i;
  return SK_STATUS_OK;
}

sk_status sk__options_parse(const char *s, sk__options *o) {
  sk__options_init_defaults(o);
  if (!s) return SK_STATUS_OK;
  char *buf = malloc(strlen(s) + 1);
  if (!buf) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "options: out of memory");
  strcpy(buf, s);
  const char *given_as[SK_OPT_COUNT] = {0};
  sk_status st = SK_STATUS_OK;
  /* Quotes around the whole string first, then split on every ':'. */
  for (char *pair = clean(buf); pair && st == SK_STATUS_OK;) {
    char *next = strchr(pair, ':');
    if (next) *next++ = '\0';
    st = parse_pair(pair, o, given_as);
    pair = next;
  }
  if (st != SK_STATUS_OK) sk__options_free(o);
  free(buf);
  return st;
}

sk_status sk__options_parse_layered(const char *global, const char *scope, sk__options *o) {
  sk__options g, sc;
  sk_status st = sk__options_parse(global, &g);
  if (st != SK_STATUS_OK) {
    sk__options_init_defaults(o);
    return sk__fail_within(st, "global options");
  }
  st = sk__options_parse(scope, &sc);
  if (st != SK_STATUS_OK) {
    sk__options_free(&g);
    sk__options_init_defaults(o);
    return st;
  }
  *o = g; /* o takes over g's lists */
  for (int i = 0; i < SK_OPT_COUNT; i++)
    if (sc.explicit_mask & (1u << i)) field_move(o, &sc, &table[i]);
  o->explicit_mask = g.explicit_mask | sc.explicit_mask;
  sk__options_free(&sc);
  return SK_STATUS_OK;
}

sk_status sk__options_copy(sk__options *dst, const sk__options *src) {
  sk__options_init_defaults(dst);
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    const opt_def *d = &table[i];
    sk_status st = SK_STATUS_OK;
    if (d->kind == KIND_FLAGS) st = sk__options_copy_flags(dst, src);
    else if (d->kind == KIND_PATTERNS) st = sk__options_copy_patterns(list_field(dst, d), clist_field(src, d));
    else *int_field(dst, d) = *cint_field(src, d);
    if (st != SK_STATUS_OK) {
      sk__options_free(dst);
      return sk__fail(st, "options: copying option %s failed", d->key);
    }
  }
  dst->explicit_mask = src->explicit_mask;
  return SK_STATUS_OK;
}

bool sk__options_equal(const sk__options *a, const sk__options *b) {
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    const opt_def *d = &table[i];
    bool same;
    if (d->kind == KIND_FLAGS) {
      same = sk__options_equal_strings(a->compile_options, (size_t)a->n_compile_options,
                                       b->compile_options, (size_t)b->n_compile_options);
    } else if (d->kind == KIND_PATTERNS) {
      const sk__op_pattern_list *la = clist_field(a, d), *lb = clist_field(b, d);
      same = sk__options_equal_strings(la->patterns, la->count, lb->patterns, lb->count);
    } else {
      same = *cint_field(a, d) == *cint_field(b, d);
    }
    if (!same) return false;
  }
  return true;
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct appender {
  char *buf;
  size_t size, len; /* len counts everything, even what did not fit */
} appender;

static void append(appender *a, const char *s) {
  size_t n = strlen(s);
  if (a->len < a->size) {
    size_t room = a->size - 1 - a->len; /* keep one byte for the NUL */
    memcpy(a->buf + a->len, s, n < room ? n : room);
  }
  a->len += n;
}

static void append_list(appender *a, char *const *items, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) append(a, ",");
    append(a, items[i]);
  }
}

size_t sk__options_render(const sk__options *o, char *buf, size_t size) {
  appender a = {buf, buf ? size : 0, 0};
  bool first = true;
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    const opt_def *d = &table[i];
    char num[16];
    const char *text = NULL;        /* scalar value, or NULL */
    char *const *items = NULL;      /* list value, or NULL */
    size_t n_items = 0;
    if (d->kind == KIND_INT) {
      snprintf(num, sizeof num, "%d", *cint_field(o, d));
      text = num;
    } else if (d->kind == KIND_ENUM) {
      int v = *cint_field(o, d);
      text = v >= 0 && v < d->n_names ? d->names[v] : NULL;
    } else if (d->kind == KIND_FLAGS) {
      items = o->compile_options;
      n_items = (size_t)o->n_compile_options;
    } else {
      items = clist_field(o, d)->patterns;
      n_items = clist_field(o, d)->count;
    }
    /* No value (unset / none): left out, so the output parses back. */
    if (!text && n_items == 0) continue;
    if (!first) append(&a, ":");
    first = false;
    append(&a, d->key);
    append(&a, "=");
    if (text) append(&a, text);
    else append_list(&a, items, n_items);
  }
  if (a.size > 0) a.buf[a.len < a.size ? a.len : a.size - 1] = '\0';
  return a.len;
}

/* ---- public API ---------------------------------------------------------- */

sk_status sk_options_validate(const char *options) {
  sk__clear_error();
  sk__options o;
  sk_status st = sk__options_parse(options, &o);
  sk__options_free(&o);
  return st;
}

/* Renders the options of `global` under `scope` (NULL global: scope
 * alone, as sk_options_render). */
static sk_status render(const char *fn, const char *global, const char *scope, char *buf, size_t size,
                        size_t *needed) {
  sk__clear_error();
  if (needed) *needed = 0;
  if (!buf && size > 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: buf is NULL but size is %zu", fn, size);
  if (buf && size > 0) buf[0] = '\0';
  sk__options o;
  SK_RETURN_IF_ERROR(global ? sk__options_parse_layered(global, scope, &o) : sk__options_parse(scope, &o));
  size_t len = sk__options_render(&o, buf, size);
  sk__options_free(&o);
  if (needed) *needed = len;
  return SK_STATUS_OK;
}

sk_status sk_options_render(const char *options, char *buf, size_t size, size_t *needed) {
  return render("sk_options_render", NULL, options, buf, size, needed);
}

sk_status sk_options_render_layered(const char *default_options, const char *scope_options, char *buf, size_t size,
                                    size_t *needed) {
  return render("sk_options_render_layered", default_options ? default_options : "", scope_options, buf, size, needed);
}
