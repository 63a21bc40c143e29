/* Bad inputs derived from the schemas: for every built-in op, its first case
 * of the shared table (tests/cases/ops.cases) made wrong at each edge its
 * schema declares — a dtype a slot does not accept, a dtype other than the
 * slot it must match, a rank outside the slot's range, a required slot left
 * out, two tensors in a single slot, an unknown slot or attribute, an
 * attribute of the wrong kind or past its range — must fail sk_op_infer
 * with the status of that edge and a message naming the op and the input or
 * attribute. A new op gets these rows from its schema and its table case,
 * with no hand work; the hand-written catalogue (test_bad_inputs.c) keeps
 * the rules a schema cannot say. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "case_table.h"
#include "harness.h"

static op_case *CASES;
static int N_CASES;
static int rows_checked;

/* The case as sk_op_infer's arguments: slot names, values (unused by
 * sk_op_infer beyond their count) and metas, slot after slot. */
typedef struct infer_args {
  sk_op_input ins[CASE_MAX_SLOTS + 1];
  sk_value values[CASE_MAX_SLOTS + 1][CASE_MAX_LIST + 1];
  sk_tensor_meta metas[(CASE_MAX_SLOTS + 1) * (CASE_MAX_LIST + 1)];
  size_t n_ins, n_metas;
  sk_attr attrs[CASE_MAX_ATTRS + 1];
  size_t n_attrs;
} infer_args;

static void args_from_case(const op_case *c, infer_args *a) {
  memset(a, 0, sizeof *a);
  for (int s = 0; s < c->n_slots; s++) {
    a->ins[a->n_ins] = (sk_op_input){c->slots[s].name, a->values[a->n_ins], (size_t)c->slots[s].count};
    for (int j = 0; j < c->slots[s].count; j++) {
      const case_tensor *t = &c->slots[s].t[j];
      sk_tensor_meta *m = &a->metas[a->n_metas++];
      m->dtype = t->dtype, m->rank = t->rank;
      memcpy(m->shape, t->shape, sizeof m->shape);
    }
    a->n_ins++;
  }
  memcpy(a->attrs, c->attrs, c->n_attrs * sizeof *c->attrs);
  a->n_attrs = c->n_attrs;
}

static sk_status infer(const char *op, const infer_args *a) {
  sk_op_desc d = {.op = op, .inputs = a->ins, .n_inputs = a->n_ins, .attrs = a->attrs, .n_attrs = a->n_attrs};
  sk_tensor_meta outs[16];
  size_t n_out = 0;
  return sk_op_infer(&d, a->metas, a->n_metas, outs, 16, &n_out);
}

/* The first meta of slot `name` in a, or NULL. */
static sk_tensor_meta *first_meta(infer_args *a, const char *name) {
  size_t at = 0;
  for (size_t i = 0; i < a->n_ins; i++) {
    if (strcmp(a->ins[i].name, name) == 0) return a->ins[i].count ? &a->metas[at] : NULL;
    at += a->ins[i].count;
  }
  return NULL;
}

/* One derived row: a made wrong must fail with `want`, the message naming
 * the op and `what` (and `also` when not NULL). */
static void expect(const char *op, const char *row, const infer_args *a, sk_status want, const char *what,
                   const char *also) {
  sk_status st = infer(op, a);
  const char *msg = sk_last_error();
  rows_checked++;
  CHECK_MSG(st == want, "%s, %s: got status %s (%s), want %s", op, row, sk_status_string(st), msg,
            sk_status_string(want));
  CHECK_MSG(strstr(msg, op) && strstr(msg, what) && (!also || strstr(msg, also)),
            "%s, %s: message \"%s\" lacks \"%s\"%s%s", op, row, msg, what, also ? " or " : "", also ? also : "");
}

/* A dtype outside mask, preferring one a front end would plausibly pass. */
static sk_dtype dtype_outside(unsigned mask) {
  static const sk_dtype order[] = {SK_FP32, SK_INT32, SK_FP16, SK_INT8, SK_BF16, SK_INT64, SK_UINT8, SK_BOOL};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
    if (!(mask & SK_DTYPE_BIT(order[i]))) return order[i];
  return SK_DTYPE_INVALID;
}

static void slot_rows(const op_case *c, const sk_op_schema *s, size_t k) {
  const sk_op_slot_info *slot = &s->inputs[k];
  char what[80], row[128];
  snprintf(what, sizeof what, "input %s", slot->name);
  infer_args a;
  args_from_case(c, &a);
  sk_tensor_meta *m = first_meta(&a, slot->name);
  if (!m) { /* an optional slot the case leaves out: only a required slot's absence is an edge */
    return;
  }
  sk_tensor_meta kept = *m;
  if (slot->dtypes) {
    m->dtype = dtype_outside(slot->dtypes);
    snprintf(row, sizeof row, "slot %s as %s", slot->name, sk_dtype_name(m->dtype));
    expect(c->op, row, &a, SK_STATUS_INVALID_DTYPE, what, "expected dtype");
    *m = kept;
  }
  if (slot->same_dtype_as && (size_t)slot->same_dtype_as - 1 != k) {
    const sk_tensor_meta *ref = first_meta(&a, s->inputs[slot->same_dtype_as - 1].name);
    if (ref) {
      unsigned allowed = slot->dtypes ? slot->dtypes : ~0u;
      sk_dtype other = dtype_outside(~allowed | SK_DTYPE_BIT(ref->dtype));
      if (other != SK_DTYPE_INVALID) {
        m->dtype = other;
        snprintf(row, sizeof row, "slot %s as %s, not %s's %s", slot->name, sk_dtype_name(other),
                 s->inputs[slot->same_dtype_as - 1].name, sk_dtype_name(ref->dtype));
        expect(c->op, row, &a, SK_STATUS_INVALID_DTYPE, what, "(as ");
        *m = kept;
      }
    }
  }
  if (slot->min_rank > 0) {
    m->rank = slot->min_rank - 1;
    snprintf(row, sizeof row, "slot %s of rank %d", slot->name, m->rank);
    expect(c->op, row, &a, SK_STATUS_INVALID_SHAPE, what, "expected rank");
    *m = kept;
  }
  if (slot->max_rank > 0 && slot->max_rank < SK_MAX_RANK) {
    m->rank = slot->max_rank + 1;
    for (int d = kept.rank; d < m->rank; d++) m->shape[d] = 1;
    snprintf(row, sizeof row, "slot %s of rank %d", slot->name, m->rank);
    expect(c->op, row, &a, SK_STATUS_INVALID_SHAPE, what, "expected rank");
    *m = kept;
  }
  if (!slot->is_optional) { /* left out */
    infer_args b;
    args_from_case(c, &b);
    size_t at = 0, w = 0, wm = 0;
    for (size_t i = 0; i < b.n_ins; i++) {
      bool drop = strcmp(b.ins[i].name, slot->name) == 0;
      for (size_t j = 0; j < b.ins[i].count; j++, at++)
        if (!drop) b.metas[wm++] = b.metas[at];
      if (!drop) b.ins[w++] = b.ins[i];
    }
    b.n_ins = w, b.n_metas = wm;
    snprintf(row, sizeof row, "required slot %s left out", slot->name);
    expect(c->op, row, &b, SK_STATUS_INVALID_ARGUMENT, what, NULL);
  }
  if (!slot->is_list) { /* two tensors in a single slot */
    infer_args b;
    args_from_case(c, &b);
    size_t at = 0;
    for (size_t i = 0; i < b.n_ins; i++) {
      if (strcmp(b.ins[i].name, slot->name) == 0) {
        memmove(&b.metas[at + 1], &b.metas[at], (b.n_metas - at) * sizeof b.metas[0]);
        b.n_metas++;
        b.ins[i].count = 2;
        break;
      }
      at += b.ins[i].count;
    }
    snprintf(row, sizeof row, "two tensors in single slot %s", slot->name);
    expect(c->op, row, &b, SK_STATUS_INVALID_ARGUMENT, what, "expected 1 tensor");
  }
}

static void attr_rows(const op_case *c, const sk_op_schema *s, size_t k) {
  const sk_op_attr_info *info = &s->attrs[k];
  char what[80], row[128];
  snprintf(what, sizeof what, "attribute %s", info->name);
  infer_args a;
  args_from_case(c, &a);
  size_t at = a.n_attrs;
  for (size_t i = 0; i < a.n_attrs; i++)
    if (strcmp(a.attrs[i].name, info->name) == 0) at = i;
  if (at == a.n_attrs) a.n_attrs++;
  /* The wrong kind: an ints list for a scalar, an int for a list. */
  static const int64_t two[] = {1, 2};
  a.attrs[at] = info->kind == SK_ATTR_KIND_INTS ? SK_ATTR_INT(info->name, 1) : SK_ATTR_INTS(info->name, two, 2);
  snprintf(row, sizeof row, "attribute %s of the wrong kind", info->name);
  expect(c->op, row, &a, SK_STATUS_INVALID_ATTRIBUTE, what, "expected kind");
  if (info->has_range && info->kind == SK_ATTR_KIND_INT) {
    int64_t past[2] = {info->max < INT64_MAX ? info->max + 1 : info->max, info->min > INT64_MIN ? info->min - 1 : info->min};
    for (int e = 0; e < 2; e++) {
      if (past[e] == (e ? info->min : info->max)) continue;
      a.attrs[at] = SK_ATTR_INT(info->name, past[e]);
      snprintf(row, sizeof row, "attribute %s = %lld", info->name, (long long)past[e]);
      expect(c->op, row, &a, SK_STATUS_INVALID_ATTRIBUTE, what, "expected");
    }
  }
}

static void test_every_edge_of_every_schema(void) {
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    const op_case *c = NULL;
    for (int k = 0; k < N_CASES && !c; k++)
      if (strcmp(CASES[k].op, s.name) == 0) c = &CASES[k];
    CHECK_MSG(c != NULL, "op %s has no case in tests/cases/ops.cases", s.name);
    if (!c) continue;
    infer_args a;
    args_from_case(c, &a);
    CHECK_MSG(infer(c->op, &a) == SK_STATUS_OK, "%s: its table case (line %d) fails: %s", c->op, c->line,
              sk_last_error());
    int before = rows_checked;
    for (size_t k = 0; k < s.n_inputs; k++) slot_rows(c, &s, k);
    for (size_t k = 0; k < s.n_attrs; k++) attr_rows(c, &s, k);
    /* Names the schema does not have. */
    a.ins[a.n_ins] = (sk_op_input){"no_such_input", a.values[a.n_ins], 0};
    a.n_ins++;
    expect(c->op, "an unknown input", &a, SK_STATUS_INVALID_ARGUMENT, "unknown input 'no_such_input'", NULL);
    args_from_case(c, &a);
    a.attrs[a.n_attrs++] = SK_ATTR_INT("no_such_attribute", 1);
    expect(c->op, "an unknown attribute", &a, SK_STATUS_INVALID_ATTRIBUTE, "unknown attribute 'no_such_attribute'",
           NULL);
    printf("  %-24s %3d rows from its schema\n", s.name, rows_checked - before);
  }
}

/* The table's reader refuses a malformed line (naming it on stderr), so a
 * typo cannot become a silent 0 in a case. */
static void test_table_reader_refuses_bad_lines(void) {
  static const char *const bad[] = {
      "add | no slots",                            /* too few fields */
      "frob | unknown op | x: fp32[4]",            /* no such op */
      "add | bad dtype | x: fp33[4]; y: fp32[4]",  /* dtype */
      "add | bad shape | x: fp32[4,x]; y: fp32[4]",
      "add | junk after shape | x: fp32[4]z; y: fp32[4]",
      "add | bad range | x: fp32[4] @1..x; y: fp32[4]",
      "add | empty range | x: fp32[4] @3..3; y: fp32[4]",
      "mul | bad float | x: fp32[4] | scalar=1.5q",
      "cast | bad int | x: fp32[4] | dtype=7x",
      "reshape | bad list | x: fp32[4] | shape=[2,",
      "square | unknown attribute | x: fp32[4] | frob=1",
      /* literal values (=v0,v1,...) that are wrong */
      "grouped_matmul | too few | x: fp16[20,8]; weight: fp16[3,8,5]; group_list: int64[3] =5,9 | group_type=0",
      "add | too many | x: int32[2] =1,2,3; y: int32[2]",
      "add | garbage | x: fp32[2] =1.5,abc; y: fp32[2]",
      "add | empty value | x: fp32[3] =1,,2; y: fp32[3]",
      "add | trailing comma | x: fp32[2] =1,2,; y: fp32[2]",
      "add | nothing | x: fp32[1] =; y: fp32[1]",
      "add | fraction for an int | x: int32[2] =1,2.5; y: int32[2]",
      "add | int8 out of range | x: int8[2] =1,128; y: int8[2]",
      "add | uint8 negative | x: uint8[2] =1,-1; y: uint8[2]",
      "add | bool 2 | x: bool[2] =0,2; y: bool[2]",
      "add | int64 overflow | x: int64[1] =9223372036854775808; y: int64[1]",
      "add | hex float | x: fp32[1] =0x1p-3; y: fp32[1]",
      "add | nan | x: fp32[1] =nan; y: fp32[1]",
      "add | exponent without digits | x: fp32[1] =1e; y: fp32[1]",
      "add | fp16 overflow | x: fp16[1] =70000; y: fp16[1]",
      "add | before the tensor | x: =1 fp32[1]; y: fp32[1]",
      "add | glued to the shape | x: fp32[1]=1; y: fp32[1]",
      "add | twice | x: fp32[2] =1,2 =1,2; y: fp32[2]",
      "add | with a range | x: fp32[2] =1,2 @0..1; y: fp32[2]",
      "concat | a list slot of two | x: fp16[1,2] fp16[1,2] =1,2 | dim=0",
      "concat | a tensor after them | x: fp16[1,2] =1,2 fp16[1,2] | dim=0",
  };
  op_case one;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_MSG(case_table_parse_line(bad[i], &one) == -1, "the reader took \"%s\"", bad[i]);
  CHECK(case_table_parse_line("add | a good one | x: int32[4] @-1..12; y: int32[4]", &one) == 0 &&
        one.slots[0].lo == -1 && one.slots[0].hi == 12);
  /* and a file with one bad line after good ones is refused whole */
  char path[] = "/tmp/sk_cases_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# a good line, then a bad one\nadd | good | x: fp32[4]; y: fp32[4]\n%s\n", bad[0]);
  fclose(f);
  op_case *cases = NULL;
  CHECK(case_table_read(path, &cases) == -1 && cases == NULL);
  free(cases);
  unlink(path);
}

static void setup(void) {
  N_CASES = case_table_read(NULL, &CASES);
  CHECK_MSG(N_CASES > 0, "the case table could not be read");
}

static void teardown(void) { free(CASES); }

TEST_MAIN(TEST_CASE(setup), TEST_CASE(test_every_edge_of_every_schema), TEST_CASE(test_table_reader_refuses_bad_lines),
          TEST_CASE(teardown))
