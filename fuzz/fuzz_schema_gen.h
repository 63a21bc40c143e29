/* Schema-driven ops for the graph generator (fuzz_gen.h): every built-in op,
 * from the shared case table (tests/cases/ops.cases) and the op's schema,
 * with no generator of its own.
 *
 * An op is drawn as one of its table cases, then varied where the schema
 * and the library allow: each distinct dimension of the case is renamed to
 * a drawn one (consistently, so a K shared by x and weight stays shared),
 * the leading one sometimes to the run-time token count — unless a slot
 * has a value range, which follows the case's dimensions; the float dtype the
 * case's slots share is swapped for another where every slot accepts it;
 * sk_op_supported filters what the library refuses (a group list that no
 * longer sums to the rows), falling back to the case as written. Each tensor
 * is then an existing value of that dtype and shape (chaining ops, as
 * sk_op_infer made it), a new graph input (a slot's @lo..hi range becomes
 * the input's fill range), or, now and then, a graph constant; a slot with
 * literal values (=v0,v1,...: a permutation of rows) is always a constant
 * holding exactly them. A tensor whose rows the case's values index
 * (gen_rows_indexed) stays static. A case that the library refuses as
 * written is a finding. */
#ifndef SK_FUZZ_SCHEMA_GEN_H
#define SK_FUZZ_SCHEMA_GEN_H

/* Included by fuzz_gen.h after the helpers it uses (values, inputs,
 * gen_add), before the op mix that calls gen_schema_op. */
#include "case_table.h"

static op_case *GEN_CASES;
static int GEN_N_CASES;

static void gen_load_cases(void) {
  if (GEN_CASES) return;
  GEN_N_CASES = case_table_read(NULL, &GEN_CASES);
  if (GEN_N_CASES <= 0) FUZZ_FAIL("the case table (tests/cases/ops.cases) could not be read");
}

/* The case's tensors as metas, slot after slot. */
static size_t gen_case_metas(const op_case *c, sk_tensor_meta *metas) {
  size_t n = 0;
  for (int s = 0; s < c->n_slots; s++)
    for (int j = 0; j < c->slots[s].count; j++) {
      const case_tensor *t = &c->slots[s].t[j];
      metas[n] = (sk_tensor_meta){.dtype = t->dtype, .rank = t->rank};
      memcpy(metas[n].shape, t->shape, sizeof t->shape);
      n++;
    }
  return n;
}

/* Renames each distinct dimension (one draw per distinct value) and, with
 * a chance, swaps the float dtype the case's float tensors share when every
 * slot holding it accepts the new one. */
static void gen_vary_metas(gen *G, const op_case *c, const sk_op_schema *schema, sk_tensor_meta *m, size_t n) {
  int64_t from[64], to[64];
  int n_names = 0;
  /* A slot's value range or literal values follow the case's dimensions
   * (expert ids below E, rows below R): a case with either keeps its shapes. */
  bool ranged = false;
  for (int s = 0; s < c->n_slots; s++) ranged |= c->slots[s].hi > c->slots[s].lo || c->slots[s].n_values > 0;
  bool vary = !ranged && gen_chance(G, 160);
  for (size_t i = 0; i < n && vary; i++)
    for (int d = 0; d < m[i].rank; d++) {
      int k = 0;
      while (k < n_names && from[k] != m[i].shape[d]) k++;
      if (k == n_names && n_names < 64) {
        from[k] = m[i].shape[d];
        to[k] = gen_chance(G, 128) ? from[k] : d == 0 ? gen_rows(G) : gen_dim(G);
        n_names++;
      }
      if (k < n_names) m[i].shape[d] = to[k];
    }
  if (!gen_chance(G, 64) || !c->n_slots) return;
  sk_dtype old = m[0].dtype, swap = gen_float_dt(G);
  if (!gen_is_float(old) || swap == old) return;
  size_t at = 0;
  for (int s = 0; s < c->n_slots; s++) { /* every slot holding old must accept swap */
    const sk_op_slot_info *info = NULL;
    for (size_t k = 0; k < schema->n_inputs; k++)
      if (strcmp(schema->inputs[k].name, c->slots[s].name) == 0) info = &schema->inputs[k];
    for (int j = 0; j < c->slots[s].count; j++, at++)
      if (m[at].dtype == old && info && info->dtypes && !(info->dtypes & SK_DTYPE_BIT(swap))) return;
  }
  for (size_t i = 0; i < n; i++)
    if (m[i].dtype == old) m[i].dtype = swap;
}

/* A graph constant of meta m with data fit for its role (the values given,
 * a range, else by dtype: small floats, any int); -1 when refused. */
static int gen_constant(gen *G, const sk_tensor_meta *m, const case_value *given, double lo, double hi) {
  int64_t numel = gen_numel(m->rank, m->shape);
  if (numel > GEN_MAX_NUMEL || G->n_vals == GEN_MAX_VALUES) return -1;
  size_t bytes = (size_t)numel * sk_dtype_size(m->dtype);
  unsigned char *data = calloc(bytes + 1, 1);
  if (!data) return -1;
  uint64_t s = gen_u8(G) + 1;
  for (int64_t i = 0; i < numel; i++) {
    double v = hi > lo ? lo + (hi - lo) * (double)(fuzz_mix(&s) >> 11) * 0x1p-53 : (double)(fuzz_mix(&s) % 7) - 3;
    if (given) v = gen_is_float(m->dtype) ? given[i].f : (double)given[i].i; /* exact: the table's are small */
    switch (m->dtype) {
      case SK_FP32: ((float *)data)[i] = (float)v; break;
      case SK_FP16: ((uint16_t *)data)[i] = sk_fp32_to_fp16((float)v); break;
      case SK_BF16: ((uint16_t *)data)[i] = sk_fp32_to_bf16((float)v); break;
      case SK_INT8: ((int8_t *)data)[i] = (int8_t)floor(v); break;
      case SK_INT32: ((int32_t *)data)[i] = (int32_t)floor(v); break;
      case SK_INT64: ((int64_t *)data)[i] = (int64_t)floor(v); break;
      default: data[i] = (unsigned char)((int)floor(v) & 1); break;
    }
  }
  char name[32];
  snprintf(name, sizeof name, "c%d", G->n_vals);
  sk_value v = SK_VALUE_NONE;
  sk_status st = FUZZ_CALL(
      sk_graph_add_constant(G->g, name, m->dtype, m->rank, m->shape, data, SK_CONSTANT_COPY, &v));
  free(data);
  if (st != SK_STATUS_OK) FUZZ_FAIL("valid constant %s refused: %s", name, sk_last_error());
  return gen_track(G, v);
}

/* One tensor of slot s: an existing value of its meta, a new input or a
 * constant. -1 when none could be made (the op is skipped). */
/* Whether the case's values index rows of a tensor of `rows` rows: a
 * slot's range ends there (@-1..60 over 60 rows) or its literal values'
 * largest is rows - 1. Such a tensor stays static: at a run-time token
 * count below its rows the values would point past it. */
static bool gen_rows_indexed(const op_case *c, int64_t rows) {
  for (int s = 0; s < c->n_slots; s++) {
    const case_slot *sl = &c->slots[s];
    if (sl->hi > sl->lo && (double)rows == sl->hi) return true;
    bool is_int = !gen_is_float(sl->t[0].dtype);
    int64_t largest = INT64_MIN;
    for (int i = 0; i < sl->n_values && is_int; i++)
      if (c->values[sl->first_value + i].i > largest) largest = c->values[sl->first_value + i].i;
    if (sl->n_values && is_int && largest == rows - 1) return true;
  }
  return false;
}

static int gen_schema_tensor(gen *G, const op_case *c, const case_slot *s, const sk_tensor_meta *m) {
  if (s->n_values > 0) /* the case's shapes were kept (gen_vary_metas) */
    return gen_numel(m->rank, m->shape) == s->n_values ? gen_constant(G, m, &c->values[s->first_value], 0, 0) : -1;
  gen_val want = {.dt = m->dtype, .rank = m->rank};
  memcpy(want.shape, m->shape, sizeof want.shape);
  bool ranged = s->hi > s->lo;
  bool indexed = m->rank >= 1 && gen_rows_indexed(c, m->shape[0]);
  if (!ranged && gen_chance(G, 96)) {
    int vi = gen_pick(G, indexed ? pred_same_static : pred_same, &want);
    if (vi >= 0) return vi;
  }
  if (!ranged && m->dtype != SK_INT64 && gen_chance(G, 32) && !(G->max_tokens > 0 && m->rank && m->shape[0] == G->max_tokens))
    return gen_constant(G, m, NULL, 0, 0);
  gen_role role = ranged ? ROLE_RANGE : m->dtype == SK_INT64 ? ROLE_PACKED : ROLE_DATA;
  G->static_only = indexed;
  int vi = gen_input_role(G, m->dtype, m->rank, m->shape, role, 0);
  G->static_only = false;
  if (vi >= 0 && ranged) G->inputs[G->n_inputs - 1].lo = s->lo, G->inputs[G->n_inputs - 1].hi = s->hi;
  return vi;
}

/* Whether d on inputs of these metas keeps the graph within
 * GEN_MAX_GRAPH_NUMEL: its inputs (counted as new) and outputs. */
static bool gen_op_fits(const gen *G, const sk_op_desc *d, const sk_tensor_meta *metas, size_t n) {
  sk_tensor_meta outs[SK_KERNEL_MAX_OUTPUTS * 4];
  size_t n_out = 0;
  if (sk_op_infer(d, metas, n, outs, sizeof outs / sizeof outs[0], &n_out) != SK_STATUS_OK) return false;
  double total = (double)G->numel; /* doubles: no overflow on any shape */
  for (size_t i = 0; i < n + n_out; i++) {
    const sk_tensor_meta *m = i < n ? &metas[i] : &outs[i - n];
    double numel = 1;
    for (int k = 0; k < m->rank; k++) numel *= m->shape[k] < 0 ? 1.0 : (double)m->shape[k];
    total += numel;
  }
  return total <= GEN_MAX_GRAPH_NUMEL;
}

/* Whether slot s of op is state the op writes in place (op.h's
 * writes_input; python/superkernel/torch_ops.py WRITES_IN_PLACE says the
 * same: the public schema does not yet). Such a slot takes a new, static
 * graph input that no other node reads (sk_graph_add_op refuses anything
 * else), marked so that later picks and outputs leave it alone. */
static bool gen_writes_in_place(const char *op, int s) { return s == 0 && strcmp(op, "kv_cache_write") == 0; }

static int gen_state_input(gen *G, const sk_tensor_meta *m) {
  G->static_only = true;
  int vi = gen_input_role(G, m->dtype, m->rank, m->shape, ROLE_DATA, 0);
  G->static_only = false;
  if (vi >= 0) G->vals[vi].state = true;
  return vi;
}

/* One op drawn from the table and its schema; its first output's index or -1. */
static int gen_schema_op(gen *G) {
  gen_load_cases();
  const op_case *c = &GEN_CASES[(gen_u8(G) * 256u + gen_u8(G)) % (unsigned)GEN_N_CASES];
  sk_op_schema schema;
  if (sk_op_info_by_name(c->op, &schema) != SK_STATUS_OK) FUZZ_FAIL("table op %s unknown: %s", c->op, sk_last_error());
  sk_tensor_meta metas[CASE_MAX_SLOTS * CASE_MAX_LIST];
  size_t n = gen_case_metas(c, metas);
  sk_op_input probe[CASE_MAX_SLOTS];
  sk_value unused[CASE_MAX_SLOTS][CASE_MAX_LIST];
  for (int s = 0; s < c->n_slots; s++) probe[s] = GEN_IN(c->slots[s].name, unused[s], (size_t)c->slots[s].count);
  sk_op_desc d = {.op = c->op, .inputs = probe, .n_inputs = (size_t)c->n_slots, .attrs = c->attrs,
                  .n_attrs = c->n_attrs};
  if (!G->hostile && FUZZ_CALL(sk_op_supported(&d, metas, n)) != SK_STATUS_OK)
    FUZZ_FAIL("table case %s (%s, line %d) refused as written: %s", c->op, c->what, c->line, sk_last_error());
  sk_tensor_meta varied[CASE_MAX_SLOTS * CASE_MAX_LIST];
  memcpy(varied, metas, sizeof varied);
  gen_vary_metas(G, c, &schema, varied, n);
  if (FUZZ_CALL(sk_op_supported(&d, varied, n)) == SK_STATUS_OK && gen_op_fits(G, &d, varied, n))
    memcpy(metas, varied, n * sizeof *metas);
  if (!gen_op_fits(G, &d, metas, n)) return -1; /* the case itself is too large for what is left */
  sk_value values[CASE_MAX_SLOTS][CASE_MAX_LIST];
  size_t at = 0;
  for (int s = 0; s < c->n_slots; s++)
    for (int j = 0; j < c->slots[s].count; j++, at++) {
      int vi = gen_writes_in_place(c->op, s) ? gen_state_input(G, &metas[at])
                                             : gen_schema_tensor(G, c, &c->slots[s], &metas[at]);
      if (vi < 0) return -1;
      values[s][j] = G->vals[vi].v;
    }
  sk_op_input ins[CASE_MAX_SLOTS];
  for (int s = 0; s < c->n_slots; s++) ins[s] = GEN_IN(c->slots[s].name, values[s], (size_t)c->slots[s].count);
  gen_stat("schema ops");
  return gen_add(G, c->op, ins, (size_t)c->n_slots, c->attrs, c->n_attrs);
}

#endif
