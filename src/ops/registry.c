/* The op registry: one table, looked up by type name. */
#include <string.h>

#include "ops/op.h"

extern const sk__op_def sk__op_reshape, sk__op_square, sk__op_add, sk__op_mul, sk__op_cast,
    sk__op_concat, sk__op_grouped_matmul;

extern const sk__op_def sk__op_dequant_swiglu_quant;
extern const sk__op_def sk__op_quant_matmul;
extern const sk__op_def sk__op_moe_gating_topk;

static const sk__op_def *const all_ops[] = {
    &sk__op_dequant_swiglu_quant,
    &sk__op_quant_matmul,
    &sk__op_moe_gating_topk,
    &sk__op_reshape, &sk__op_square, &sk__op_add,    &sk__op_mul,
    &sk__op_cast,    &sk__op_concat, &sk__op_grouped_matmul, NULL,
};

const sk__op_def *const *sk__op_all(void) { return all_ops; }

const sk__op_def *sk__op_find(const char *type) {
  for (int i = 0; all_ops[i]; i++)
    if (strcmp(all_ops[i]->type, type) == 0) return all_ops[i];
  return NULL;
}
