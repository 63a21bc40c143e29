/* The op registry: the built-in ops of op_list.h, plus ops registered at run
 * time (custom kernels, test ops), looked up by type name; and the public
 * schema queries over them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fork.h"
#include "ops/op.h"
#include "ops/op_list.h"

#define SK__DECLARE_OP(name) extern const sk__op_def sk__op_##name;
SK__BUILTIN_OPS(SK__DECLARE_OP)
#undef SK__DECLARE_OP

#define SK__OP_ENTRY(name) &sk__op_##name,
static const sk__op_def *const builtin_ops[] = {SK__BUILTIN_OPS(SK__OP_ENTRY)};
#undef SK__OP_ENTRY

/* Registered ops live until the process ends: graphs and programs keep
 * pointers to their definitions. */
static sk__fork_mutex extra_lock = SK__FORK_MUTEX_INITIALIZER;
static const sk__op_def **extra_ops;
static size_t n_extra, cap_extra;

const sk__op_def *sk__op_find(const char *type) {
  for (size_t i = 0; i < SK__COUNT(builtin_ops); i++)
    if (strcmp(builtin_ops[i]->type, type) == 0) return builtin_ops[i];
  const sk__op_def *found = NULL;
  sk__fork_mutex_lock(&extra_lock);
  for (size_t i = 0; i < n_extra && !found; i++)
    if (strcmp(extra_ops[i]->type, type) == 0) found = extra_ops[i];
  sk__fork_mutex_unlock(&extra_lock);
  return found;
}

const sk_op_attr_info *sk__op_attr(const sk__op_def *def, const char *name) {
  for (size_t i = 0; i < def->n_attrs; i++)
    if (strcmp(def->attrs[i].name, name) == 0) return &def->attrs[i];
  return NULL;
}

int sk__op_slot(const sk__op_def *def, const char *name) {
  for (size_t i = 0; i < def->n_inputs; i++)
    if (strcmp(def->inputs[i].name, name) == 0) return (int)i;
  return -1;
}

sk_status sk__op_register(const sk__op_def *def) {
  if (!def || !def->type || !def->build || !def->reference || (!def->is_view && (!def->tile || !def->run_block)) ||
      def->n_inputs > SK__MAX_SLOTS || (def->n_inputs && !def->inputs) || (def->n_attrs && !def->attrs))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op registration: incomplete op definition '%s'",
                    def && def->type ? def->type : "(null)");
  if (sk__op_find(def->type))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op registration: op type '%s' already exists", def->type);
  sk__fork_mutex_lock(&extra_lock);
  sk_status st = SK_STATUS_OK;
  if (n_extra == cap_extra) {
    size_t cap = cap_extra ? cap_extra * 2 : 8;
    const sk__op_def **grown = realloc(extra_ops, cap * sizeof *grown);
    if (grown) extra_ops = grown, cap_extra = cap;
    else st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "op registration: out of memory");
  }
  if (st == SK_STATUS_OK) extra_ops[n_extra++] = def;
  sk__fork_mutex_unlock(&extra_lock);
  return st;
}

size_t sk_op_count(void) { return SK__COUNT(builtin_ops); }

static void fill_schema(const sk__op_def *def, sk_op_schema *out) {
  *out = (sk_op_schema){.name = def->type, .kernel_type = (int)def->kind, .is_view = def->is_view,
                        .inputs = def->inputs, .n_inputs = def->n_inputs, .attrs = def->attrs,
                        .n_attrs = def->n_attrs, .outputs = def->outputs, .n_outputs = def->n_outputs,
                        .doc = def->doc ? def->doc : ""};
}

sk_status sk_op_info(size_t i, sk_op_schema *schema_out) {
  sk__clear_error();
  if (!schema_out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_op_info: schema_out is NULL");
  if (i >= sk_op_count())
    return sk__fail(SK_STATUS_NOT_FOUND, "sk_op_info: op %zu (there are %zu built-in ops)", i, sk_op_count());
  fill_schema(builtin_ops[i], schema_out);
  return SK_STATUS_OK;
}

sk_status sk_op_info_by_name(const char *op, sk_op_schema *schema_out) {
  sk__clear_error();
  if (!op || !schema_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_op_info_by_name: %s is NULL", !op ? "op" : "schema_out");
  const sk__op_def *def = sk__op_find(op);
  if (!def) return sk__fail(SK_STATUS_NOT_FOUND, "sk_op_info_by_name: unknown op type '%s'", op);
  fill_schema(def, schema_out);
  return SK_STATUS_OK;
}
