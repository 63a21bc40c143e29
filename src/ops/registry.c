/* The op registry: the built-in table, plus ops registered at run time
 * (custom kernels, test ops), looked up by type name. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

extern const sk__op_def sk__op_reshape, sk__op_square, sk__op_add, sk__op_mul, sk__op_cast, sk__op_concat,
    sk__op_grouped_matmul, sk__op_moe_gating_topk, sk__op_dequant_swiglu_quant, sk__op_quant_matmul;

static const sk__op_def *const builtin_ops[] = {
    &sk__op_reshape,        &sk__op_square,          &sk__op_add,
    &sk__op_mul,            &sk__op_cast,            &sk__op_concat,
    &sk__op_grouped_matmul, &sk__op_moe_gating_topk, &sk__op_dequant_swiglu_quant,
    &sk__op_quant_matmul,   NULL,
};

/* Registered ops live until the process ends: graphs and programs keep
 * pointers to their definitions. */
static pthread_mutex_t extra_lock = PTHREAD_MUTEX_INITIALIZER;
static const sk__op_def **extra_ops;
static size_t n_extra, cap_extra;

const sk__op_def *sk__op_find(const char *type) {
  for (int i = 0; builtin_ops[i]; i++)
    if (strcmp(builtin_ops[i]->type, type) == 0) return builtin_ops[i];
  const sk__op_def *found = NULL;
  pthread_mutex_lock(&extra_lock);
  for (size_t i = 0; i < n_extra && !found; i++)
    if (strcmp(extra_ops[i]->type, type) == 0) found = extra_ops[i];
  pthread_mutex_unlock(&extra_lock);
  return found;
}

sk_status sk__op_register(const sk__op_def *def) {
  if (!def || !def->type || !def->build || !def->reference || (!def->is_view && (!def->tile || !def->run_block)))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op registration: incomplete op definition '%s'",
                    def && def->type ? def->type : "(null)");
  if (sk__op_find(def->type))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op registration: op type '%s' already exists", def->type);
  pthread_mutex_lock(&extra_lock);
  sk_status st = SK_STATUS_OK;
  if (n_extra == cap_extra) {
    size_t cap = cap_extra ? cap_extra * 2 : 8;
    const sk__op_def **grown = realloc(extra_ops, cap * sizeof *grown);
    if (grown) extra_ops = grown, cap_extra = cap;
    else st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "op registration: out of memory");
  }
  if (st == SK_STATUS_OK) extra_ops[n_extra++] = def;
  pthread_mutex_unlock(&extra_lock);
  return st;
}
