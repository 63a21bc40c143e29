/* Reading tests/cases/ops.cases (its header says the format). An
 * attribute's kind comes from the op's schema (sk_op_info_by_name), so the
 * file writes values as a person would: k=4, epsilon=1e-5, shape=[3,-1],
 * dtype=fp16. */
#include "case_table.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* "x: fp32[4,6] fp32[2] @0..10" */
static int parse_slot(char *text, case_slot *slot) {
  char *colon = strchr(text, ':');
  if (!colon) return -1;
  *colon = '\0';
  snprintf(slot->name, sizeof slot->name, "%s", trim(text));
  char *save = NULL;
  for (char *tok = strtok_r(colon + 1, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
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
    if (c->n_slots == CASE_MAX_SLOTS || parse_slot(s, &c->slots[c->n_slots++]) != 0) return -1;
  }
  if (n == 4)
    for (char *a = strtok_r(fields[3], " \t", &save); a; a = strtok_r(NULL, " \t", &save))
      if (parse_attr(c, &schema, a) != 0) return -1;
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
    memset(&all[n], 0, sizeof all[n]);
    all[n].line = lineno;
    if (parse_line(s, &all[n]) != 0) {
      fprintf(stderr, "%s:%d: cannot parse this case\n", path, lineno);
      free(all);
      fclose(f);
      return -1;
    }
    n++;
  }
  fclose(f);
  /* The attributes point into their case, which the array's growth moved. */
  for (int i = 0; i < n; i++)
    for (size_t k = 0; k < all[i].n_attrs; k++) {
      all[i].attrs[k].name = all[i].attr_names[k];
      if (all[i].attrs[k].kind == SK_ATTR_KIND_INTS) all[i].attrs[k].ints = all[i].attr_ints[k];
    }
  *cases = all;
  return n;
}
