/* Reading tests/cases/ops.cases (its header says the format). An
 * attribute's kind comes from the op's schema (sk_op_info_by_name), so the
 * file writes values as a person would: k=4, epsilon=1e-5, shape=[3,-1],
 * dtype=fp16. A slot's tensor may carry literal values, " =v0,v1,..." after
 * it (group_list: int64[3] =5,9,20): decimal numbers, exactly as many as the
 * tensor has elements, integers for the integer dtypes (in the dtype's
 * range; 0 or 1 for bool), finite for the floats; only in a slot of one
 * tensor and without an @lo..hi range. Anything else refuses the line. */
#include "case_table.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Why the line being read was refused, when a check says more than "malformed". */
static char why[160];

static int refuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return -1;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

static sk_dtype dtype_named(const char *name, size_t len) {
  for (int d = SK_DTYPE_INVALID + 1; d < SK_DTYPE_COUNT_; d++) {
    const char *n = sk_dtype_name((sk_dtype)d);
    if (strlen(n) == len && strncmp(n, name, len) == 0) return (sk_dtype)d;
  }
  return SK_DTYPE_INVALID;
}

/* "1,2,3" up to the closing ']' into out; the count, -1 when malformed. */
static int parse_ints(const char *s, int64_t *out, int max, const char **end) {
  int n = 0;
  while (*s && *s != ']') {
    char *after;
    long long v = strtoll(s, &after, 10);
    if (after == s || n == max) return -1;
    out[n++] = v;
    s = after;
    while (*s == ',' || *s == ' ') s++;
  }
  if (*s != ']') return -1;
  *end = s + 1;
  return n;
}

/* A decimal number: [+-]digits, and for a float also .digits and an
 * exponent (no hex, inf or nan: the Python reader takes the same). */
static bool is_decimal(const char *s, bool fraction) {
  if (*s == '+' || *s == '-') s++;
  size_t digits = strspn(s, "0123456789");
  s += digits;
  if (fraction && *s == '.') {
    size_t more = strspn(s + 1, "0123456789");
    digits += more;
    s += 1 + more;
  }
  if (!digits) return false;
  if (fraction && (*s == 'e' || *s == 'E')) {
    s++;
    if (*s == '+' || *s == '-') s++;
    size_t exp = strspn(s, "0123456789");
    if (!exp) return false;
    s += exp;
  }
  return *s == '\0';
}

/* One literal value of dtype dt into *v; -1 (and why) when it is not one. */
static int parse_value(const char *text, sk_dtype dt, case_value *v) {
  if (dt == SK_FP32 || dt == SK_FP16 || dt == SK_BF16) {
    double max = dt == SK_FP16 ? 65504.0 : 3.38e38; /* finite in the dtype too */
    v->f = is_decimal(text, true) ? strtod(text, NULL) : NAN;
    if (!isfinite(v->f) || fabs(v->f) > max)
      return refuse("value \"%s\" is not a finite %s value", text, sk_dtype_name(dt));
    return 0;
  }
  long long lo = dt == SK_INT8 ? INT8_MIN : dt == SK_INT32 ? INT32_MIN : dt == SK_INT64 ? INT64_MIN : 0;
  long long hi = dt == SK_INT8    ? INT8_MAX
                 : dt == SK_UINT8 ? UINT8_MAX
                 : dt == SK_BOOL  ? 1
                 : dt == SK_INT32 ? INT32_MAX
                                  : INT64_MAX;
  bool decimal = is_decimal(text, false);
  errno = 0;
  long long i = decimal ? strtoll(text, NULL, 10) : 0;
  if (!decimal || errno == ERANGE || i < lo || i > hi)
    return refuse("value \"%s\" is not an integer in the range of %s", text,
                  dt == SK_BOOL ? "bool (0, 1)" : sk_dtype_name(dt));
  v->i = i;
  return 0;
}

/* "=v0,v1,..." for the slot's one tensor, into the case's values. */
static int parse_values(op_case *c, case_slot *slot, const char *text) {
  if (slot->count != 1 || slot->n_values) return refuse("values (=...) follow the one tensor of their slot, once");
  const case_tensor *t = &slot->t[0];
  int64_t numel = 1;
  for (int d = 0; d < t->rank; d++) numel *= t->shape[d];
  slot->first_value = c->n_values;
  for (const char *s = text;; s++) {
    size_t len = strcspn(s, ",");
    char one[64];
    if (len == 0 || len >= sizeof one) return refuse("slot %s: an empty or overlong value", slot->name);
    if (c->n_values == CASE_MAX_VALUES) return refuse("more than %d values in one case", CASE_MAX_VALUES);
    memcpy(one, s, len);
    one[len] = '\0';
    if (parse_value(one, t->dtype, &c->values[c->n_values]) != 0) return -1;
    c->n_values++;
    slot->n_values++;
    s += len;
    if (!*s) break;
  }
  if (slot->n_values != numel)
    return refuse("slot %s: %d values for %lld elements", slot->name, slot->n_values, (long long)numel);
  return 0;
}

/* "x: fp32[4,6] fp32[2] @0..10" or "g: int64[3] =5,9,20" */
static int parse_slot(op_case *c, char *text, case_slot *slot) {
  char *colon = strchr(text, ':');
  if (!colon) return -1;
  *colon = '\0';
  snprintf(slot->name, sizeof slot->name, "%s", trim(text));
  char *save = NULL;
  for (char *tok = strtok_r(colon + 1, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
    if (tok[0] == '=') {
      if (parse_values(c, slot, tok + 1) != 0) return -1;
      continue;
    }
    if (tok[0] == '@') {
      char *dots = strstr(tok, "..");
      if (!dots) return -1;
      char *end_lo, *end_hi;
      *dots = '\0'; /* strtod would read "-1." of "-1..12" */
      slot->lo = strtod(tok + 1, &end_lo);
      slot->hi = strtod(dots + 2, &end_hi);
      if (end_lo != dots || end_lo == tok + 1 || *end_hi || !(slot->hi > slot->lo)) return -1; /* lo < hi */
      continue;
    }
    char *bracket = strchr(tok, '[');
    if (!bracket || slot->count == CASE_MAX_LIST) return -1;
    case_tensor *t = &slot->t[slot->count++];
    t->dtype = dtype_named(tok, (size_t)(bracket - tok));
    const char *end;
    t->rank = parse_ints(bracket + 1, t->shape, SK_MAX_RANK, &end);
    if (t->dtype == SK_DTYPE_INVALID || t->rank < 0 || *end) return -1;
  }
  if (slot->n_values && (slot->count != 1 || slot->hi > slot->lo))
    return refuse("slot %s: values (=...) take a slot of one tensor and no range", slot->name);
  return slot->count > 0 ? 0 : -1;
}

/* "k=4", its kind from the schema. */
static int parse_attr(op_case *c, const sk_op_schema *schema, char *tok) {
  char *eq = strchr(tok, '=');
  if (!eq || c->n_attrs == CASE_MAX_ATTRS) return -1;
  *eq = '\0';
  size_t k = c->n_attrs;
  snprintf(c->attr_names[k], sizeof c->attr_names[k], "%s", tok);
  const sk_op_attr_info *info = NULL;
  for (size_t i = 0; i < schema->n_attrs; i++)
    if (strcmp(schema->attrs[i].name, tok) == 0) info = &schema->attrs[i];
  if (!info) return -1;
  const char *v = eq + 1, *end = NULL;
  char *num_end = NULL;
  sk_attr a = {.name = c->attr_names[k], .kind = info->kind};
  if (info->kind == SK_ATTR_KIND_INTS) {
    int n = v[0] == '[' ? parse_ints(v + 1, c->attr_ints[k], SK_MAX_RANK, &end) : -1;
    if (n < 0) return -1;
    a.ints = c->attr_ints[k], a.n_ints = (size_t)n;
    if (*end) return -1;
  } else if (info->kind == SK_ATTR_KIND_FLOAT) {
    a.f = strtod(v, &num_end);
    if (num_end == v || *num_end) return -1;
  } else {
    sk_dtype d = dtype_named(v, strlen(v));
    a.i = d != SK_DTYPE_INVALID ? (int64_t)d : strtoll(v, &num_end, 10);
    if (d == SK_DTYPE_INVALID && (num_end == v || *num_end)) return -1;
  }
  c->attrs[c->n_attrs++] = a;
  return 0;
}

static int parse_line(char *line, op_case *c) {
  char *fields[4] = {0};
  int n = 0;
  for (char *p = line; n < 4; n++) {
    fields[n] = p;
    char *bar = strchr(p, '|');
    if (!bar) {
      n++;
      break;
    }
    *bar = '\0';
    p = bar + 1;
  }
  if (n < 3) return -1;
  snprintf(c->op, sizeof c->op, "%s", trim(fields[0]));
  snprintf(c->what, sizeof c->what, "%s", trim(fields[1]));
  sk_op_schema schema;
  if (sk_op_info_by_name(c->op, &schema) != SK_STATUS_OK) return -1;
  char *save = NULL;
  for (char *s = strtok_r(fields[2], ";", &save); s; s = strtok_r(NULL, ";", &save)) {
    if (c->n_slots == CASE_MAX_SLOTS || parse_slot(c, s, &c->slots[c->n_slots++]) != 0) return -1;
  }
  if (n == 4)
    for (char *a = strtok_r(fields[3], " \t", &save); a; a = strtok_r(NULL, " \t", &save))
      if (parse_attr(c, &schema, a) != 0) return -1;
  return 0;
}

/* The attributes point into their case's own arrays (moved with the case). */
static void point_attrs(op_case *c) {
  for (size_t k = 0; k < c->n_attrs; k++) {
    c->attrs[k].name = c->attr_names[k];
    if (c->attrs[k].kind == SK_ATTR_KIND_INTS) c->attrs[k].ints = c->attr_ints[k];
  }
}

/* Parses one line (trimmed, not a comment) into *c; -1 with a message on
 * stderr naming where when it does not parse. */
static int parse_case(char *text, const char *where, int lineno, op_case *c) {
  memset(c, 0, sizeof *c);
  c->line = lineno;
  why[0] = '\0';
  if (parse_line(text, c) == 0) return 0;
  fprintf(stderr, "%s:%d: cannot parse this case%s%s%s\n", where, lineno, why[0] ? " (" : "", why, why[0] ? ")" : "");
  return -1;
}

int case_table_parse_line(const char *text, op_case *c) {
  char line[4096];
  snprintf(line, sizeof line, "%s", text);
  if (parse_case(trim(line), "(line)", 1, c) != 0) return -1;
  point_attrs(c);
  return 0;
}

int case_table_read(const char *path, op_case **cases) {
#ifdef SK_CASES_FILE
  if (!path) path = SK_CASES_FILE;
#endif
  *cases = NULL;
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) {
    fprintf(stderr, "case table: cannot open %s\n", path ? path : "(no path)");
    return -1;
  }
  char line[4096];
  int n = 0, cap = 0, lineno = 0;
  op_case *all = NULL;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *s = trim(line);
    if (!*s || *s == '#') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      op_case *grown = realloc(all, (size_t)cap * sizeof *grown);
      if (!grown) break;
      all = grown;
    }
    if (parse_case(s, path, lineno, &all[n]) != 0) {
      free(all);
      fclose(f);
      return -1;
    }
    n++;
  }
  fclose(f);
  for (int i = 0; i < n; i++) point_attrs(&all[i]); /* the array's growth moved them */
  *cases = all;
  return n;
}
