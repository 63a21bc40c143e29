/* Building one node: the generic checks every op's descriptor passes
 * against its schema, the getters an op's build reads its attributes with,
 * and the checks of what the build declared (build_ctx.h). */
#include "ops/build_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_ATTRS 64

const sk__op_def *sk__ctx_def(const sk__build_ctx *ctx) { return ctx->def; }

const char *sk__ctx_op(const sk__build_ctx *ctx) { return ctx->label; }

const sk__slot *sk__ctx_slot(const sk__build_ctx *ctx, int i) { return &ctx->slots[i]; }

sk_status sk__ctx_single(sk__build_ctx *ctx, int i, const sk__tensor **t) {
  const sk__slot *s = &ctx->slots[i];
  if (s->count != 1)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: expected 1 tensor, got %zu", ctx->label,
                    ctx->def->inputs[i].name, s->count);
  *t = &s->tensors[0];
  return SK_STATUS_OK;
}

sk_status sk__build_like_x(sk__build_ctx *ctx) {
  const sk__tensor *x = NULL;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, 0, &x));
  sk__tensor *out = NULL;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank, x->shape);
  return SK_STATUS_OK;
}

static const sk_attr *given_attr(const sk__build_ctx *ctx, const char *name) {
  for (size_t i = 0; i < ctx->desc->n_attrs; i++)
    if (strcmp(ctx->desc->attrs[i].name, name) == 0) return &ctx->desc->attrs[i];
  return NULL;
}

bool sk__ctx_has_attr(const sk__build_ctx *ctx, const char *name) { return given_attr(ctx, name) != NULL; }

/* The schema entry an op's getter asks for: missing is a bug in the op. */
static sk_status schema_attr(const sk__build_ctx *ctx, const char *name, sk_attr_kind kind,
                             const sk_op_attr_info **out) {
  *out = sk__op_attr(ctx->def, name);
  if (!*out || (*out)->kind != kind)
    return sk__fail(SK_STATUS_INTERNAL, "%s: the op reads attribute %s, which its schema %s", ctx->label, name,
                    *out ? "declares with another kind" : "lacks");
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_int(sk__build_ctx *ctx, const char *name, int64_t *out) {
  const sk_op_attr_info *info;
  SK_RETURN_IF_ERROR(schema_attr(ctx, name, SK_ATTR_KIND_INT, &info));
  const sk_attr *a = given_attr(ctx, name);
  *out = a ? a->i : info->default_int;
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_float(sk__build_ctx *ctx, const char *name, double *out) {
  const sk_op_attr_info *info;
  SK_RETURN_IF_ERROR(schema_attr(ctx, name, SK_ATTR_KIND_FLOAT, &info));
  const sk_attr *a = given_attr(ctx, name);
  /* An int given for a float attribute is accepted: 2 means 2.0. */
  *out = !a ? info->default_float : a->kind == SK_ATTR_KIND_INT ? (double)a->i : a->f;
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_ints(sk__build_ctx *ctx, const char *name, const int64_t **out, size_t *n) {
  const sk_op_attr_info *info;
  SK_RETURN_IF_ERROR(schema_attr(ctx, name, SK_ATTR_KIND_INTS, &info));
  const sk_attr *a = given_attr(ctx, name);
  *out = a ? a->ints : NULL;
  *n = a ? a->n_ints : 0;
  return SK_STATUS_OK;
}

void *sk__ctx_params(sk__build_ctx *ctx) { return ctx->params; }

sk_status sk__ctx_set_outputs(sk__build_ctx *ctx, size_t n, sk__tensor **outs) {
  if (n == 0 || n > SK__MAX_OUTPUTS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu outputs (must be 1..%d)", ctx->label, n, SK__MAX_OUTPUTS);
  free(ctx->outs);
  ctx->outs = calloc(n, sizeof *ctx->outs);
  if (!ctx->outs) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  ctx->n_outs = n;
  *outs = ctx->outs;
  return SK_STATUS_OK;
}

static const char *kind_name(sk_attr_kind kind) {
  switch (kind) {
    case SK_ATTR_KIND_INT: return "int";
    case SK_ATTR_KIND_FLOAT: return "float";
    case SK_ATTR_KIND_INTS: return "ints";
    default: return "invalid";
  }
}

/* "a, b, c" of the schema's input or attribute names, for messages. */
static const char *accepted_names(const sk__op_def *def, bool attrs, char *buf, size_t size) {
  buf[0] = '\0';
  size_t n = attrs ? def->n_attrs : def->n_inputs;
  for (size_t k = 0; k < n; k++) {
    strncat(buf, k ? ", " : "", size - strlen(buf) - 1);
    strncat(buf, attrs ? def->attrs[k].name : def->inputs[k].name, size - strlen(buf) - 1);
  }
  return n ? buf : "none";
}

static sk_status check_inputs(sk__build_ctx *ctx) {
  const sk_op_desc *d = ctx->desc;
  const sk__op_def *def = ctx->def;
  char names[512];
  bool seen[SK__MAX_SLOTS] = {false};
  if (d->n_inputs && !d->inputs)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu inputs but a NULL pointer", ctx->label, d->n_inputs);
  for (size_t i = 0; i < d->n_inputs; i++) {
    const sk_op_input *in = &d->inputs[i];
    if (!in->name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input slot %zu has no name", ctx->label, i);
    int s = sk__op_slot(def, in->name);
    if (s < 0)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: unknown input '%s' (accepted: %s)", ctx->label, in->name,
                      accepted_names(def, false, names, sizeof names));
    if (seen[s]) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input '%s' given twice", ctx->label, in->name);
    seen[s] = true;
    if (in->count && !in->values)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: %zu values but a NULL pointer", ctx->label,
                      in->name, in->count);
    if (in->count > SK__MAX_OUTPUTS)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: %zu tensors (at most %d)", ctx->label, in->name,
                      in->count, SK__MAX_OUTPUTS);
    if (in->count > 1 && !def->inputs[s].is_list)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: expected 1 tensor, got %zu", ctx->label, in->name,
                      in->count);
    if (i < SK__MAX_SLOTS) ctx->desc_slot[i] = s;
  }
  return SK_STATUS_OK;
}

/* After everything given was checked: what is missing. */
static sk_status check_required(const sk__build_ctx *ctx) {
  const sk__op_def *def = ctx->def;
  for (size_t s = 0; s < def->n_inputs; s++) {
    const sk_op_slot_info *slot = &def->inputs[s];
    if (slot->is_optional) continue;
    size_t given = 0;
    for (size_t i = 0; i < ctx->desc->n_inputs; i++)
      if (ctx->desc_slot[i] == (int)s) given = ctx->desc->inputs[i].count;
    if (given == 0)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, slot->is_list ? "%s: input %s: expected a non-empty list"
                                                                : "%s: input %s: expected 1 tensor, got 0",
                      ctx->label, slot->name);
  }
  for (size_t k = 0; k < def->n_attrs; k++)
    if (def->attrs[k].is_required && !sk__ctx_has_attr(ctx, def->attrs[k].name))
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s is required", ctx->label, def->attrs[k].name);
  return SK_STATUS_OK;
}

static sk_status check_range(const sk__build_ctx *ctx, const sk_op_attr_info *info, int64_t v, size_t index,
                             bool element) {
  if (!info->has_range || (v >= info->min && v <= info->max)) return SK_STATUS_OK;
  char where[32] = "";
  if (element) snprintf(where, sizeof where, "[%zu]", index);
  return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s%s: expected %lld..%lld (%s), got %lld", ctx->label,
                  info->name, where, (long long)info->min, (long long)info->max, info->doc ? info->doc : "",
                  (long long)v);
}

static sk_status check_attrs(const sk__build_ctx *ctx) {
  const sk_op_desc *d = ctx->desc;
  const sk__op_def *def = ctx->def;
  char names[512];
  if (d->n_attrs > MAX_ATTRS)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: %zu attributes (at most %d)", ctx->label, d->n_attrs, MAX_ATTRS);
  if (d->n_attrs && !d->attrs)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu attributes but a NULL pointer", ctx->label, d->n_attrs);
  for (size_t i = 0; i < d->n_attrs; i++) {
    const sk_attr *a = &d->attrs[i];
    if (!a->name) return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %zu has no name", ctx->label, i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(a->name, d->attrs[j].name) == 0)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s given twice", ctx->label, a->name);
    const sk_op_attr_info *info = sk__op_attr(def, a->name);
    if (!info)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: unknown attribute '%s' (accepted: %s)", ctx->label, a->name,
                      accepted_names(def, true, names, sizeof names));
    bool int_for_float = info->kind == SK_ATTR_KIND_FLOAT && a->kind == SK_ATTR_KIND_INT;
    if (a->kind != info->kind && !int_for_float)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s: expected kind %s, got %s", ctx->label, a->name,
                      kind_name(info->kind), kind_name(a->kind));
    if (a->kind == SK_ATTR_KIND_INT && !int_for_float) SK_RETURN_IF_ERROR(check_range(ctx, info, a->i, 0, false));
    if (a->kind == SK_ATTR_KIND_INTS) {
      if (a->n_ints && !a->ints)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s: %zu ints but a NULL pointer", ctx->label,
                        a->name, a->n_ints);
      for (size_t k = 0; k < a->n_ints; k++) SK_RETURN_IF_ERROR(check_range(ctx, info, a->ints[k], k, true));
    }
  }
  return SK_STATUS_OK;
}

sk_status sk__build_check_desc(sk__build_ctx *ctx) {
  SK_RETURN_IF_ERROR(check_inputs(ctx));
  SK_RETURN_IF_ERROR(check_attrs(ctx));
  return check_required(ctx);
}

/* "x" for a single slot, "x[i]" for a list's tensor i. */
static const char *tensor_name(const sk_op_slot_info *info, size_t i, char *buf, size_t size) {
  if (info->is_list) snprintf(buf, size, "%s[%zu]", info->name, i);
  else snprintf(buf, size, "%s", info->name);
  return buf;
}

/* "fp32, fp16 or bf16" of a dtype mask, in sk_dtype order. */
static const char *dtype_list(unsigned mask, char *buf, size_t size) {
  int n = 0, total = 0;
  for (int d = SK_DTYPE_INVALID + 1; d < SK_DTYPE_COUNT_; d++) total += (mask >> d) & 1;
  buf[0] = '\0';
  for (int d = SK_DTYPE_INVALID + 1; d < SK_DTYPE_COUNT_; d++) {
    if (!((mask >> d) & 1)) continue;
    const char *sep = n == 0 ? "" : n + 1 == total ? " or " : ", ";
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", sep, sk_dtype_name((sk_dtype)d));
    n++;
  }
  return buf;
}

/* The data rules of the schema's slots (sk_op_slot_info: dtypes, ranks,
 * same dtype as another slot), one message for every op. */
static sk_status check_data(const sk__build_ctx *ctx) {
  const sk__op_def *def = ctx->def;
  for (size_t s = 0; s < def->n_inputs; s++) {
    const sk_op_slot_info *info = &def->inputs[s];
    const sk__slot *slot = &ctx->slots[s];
    const sk_op_slot_info *ref_info = info->same_dtype_as ? &def->inputs[info->same_dtype_as - 1] : NULL;
    const sk__slot *ref = ref_info ? &ctx->slots[info->same_dtype_as - 1] : NULL;
    for (size_t i = 0; i < slot->count; i++) {
      const sk__tensor *t = &slot->tensors[i];
      char name[96], other[96], text[128];
      if (info->dtypes && !(info->dtypes & SK_DTYPE_BIT(t->dtype)))
        return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input %s: expected dtype %s, got %s", ctx->label,
                        tensor_name(info, i, name, sizeof name), dtype_list(info->dtypes, text, sizeof text),
                        sk_dtype_name(t->dtype));
      if (ref && ref->count && t->dtype != ref->tensors[0].dtype)
        return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input %s: expected dtype %s (as %s), got %s", ctx->label,
                        tensor_name(info, i, name, sizeof name), sk_dtype_name(ref->tensors[0].dtype),
                        tensor_name(ref_info, 0, other, sizeof other), sk_dtype_name(t->dtype));
      bool ranked = info->min_rank != 0 || info->max_rank != 0;
      if (ranked && (t->rank < info->min_rank || (info->max_rank >= 0 && t->rank > info->max_rank))) {
        char want[48];
        if (info->max_rank < 0) snprintf(want, sizeof want, ">= %d", info->min_rank);
        else if (info->min_rank == info->max_rank) snprintf(want, sizeof want, "%d", info->min_rank);
        else snprintf(want, sizeof want, "%d..%d", info->min_rank, info->max_rank);
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected rank %s (%s), got rank %d %s", ctx->label,
                        tensor_name(info, i, name, sizeof name), want, info->doc ? info->doc : "", t->rank,
                        sk__shape_str(t->rank, t->shape, text, sizeof text));
      }
    }
  }
  return SK_STATUS_OK;
}

sk_status sk__build_node(sk__build_ctx *ctx) {
  const sk__op_def *def = ctx->def;
  SK_RETURN_IF_ERROR(check_data(ctx));
  ctx->params = calloc(1, def->params_size ? def->params_size : 1);
  sk_status st = ctx->params ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  if (st == SK_STATUS_OK) st = def->build(ctx);
  if (st == SK_STATUS_OK && ctx->n_outs == 0)
    st = sk__fail(SK_STATUS_INTERNAL, "%s: the op declared no outputs", ctx->label);
  /* Inferred outputs obey the limits of graph inputs (at most 2^48 bytes),
   * e.g. grouped_matmul of [2^32, 0] x [0, 2^32], or a cast to a wider dtype. */
  for (size_t i = 0; st == SK_STATUS_OK && i < ctx->n_outs; i++) {
    char why[128];
    if (!sk__shape_check(ctx->outs[i].dtype, ctx->outs[i].rank, ctx->outs[i].shape, why, sizeof why))
      st = sk__fail(SK_STATUS_INVALID_SHAPE, "%s: output %zu: %s", ctx->label, i, why);
  }
  if (st != SK_STATUS_OK && ctx->params) {
    if (def->free_params) def->free_params(ctx->params);
    free(ctx->params);
    ctx->params = NULL;
  }
  return st;
}

void sk__build_ctx_free(sk__build_ctx *ctx) {
  free(ctx->outs);
  ctx->outs = NULL;
  ctx->n_outs = 0;
}
