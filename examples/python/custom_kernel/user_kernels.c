/* user_kernels.c — a user's own kernel library for example06 (the seed's
 * "custom operator fusion" example, on the CPU).
 *
 * Built by the example with `cc -shared -fPIC -O2 -I<superkernel include>`;
 * registered from Python with superkernel.custom.register_kernel. The sk_*
 * functions called here bind to the superkernel library the Python process
 * has loaded.
 *
 *   pows    y[i] = x[i]^p, p = *(float *)user (the exponent travels through
 *           the descriptor's user pointer: scalars do not pass through a
 *           graph). x fp32 or fp16, y the same dtype and shape; fp16 is
 *           widened exactly, computed with powf in fp32 and rounded to
 *           nearest even on store.
 *           args {x, y} (n_params 2), VECTOR, any block count.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "superkernel.h"

/* Block `block` of n_blocks handles elements [begin, end) of n. */
static void block_range(int64_t n, int64_t block, int64_t n_blocks, int64_t *begin, int64_t *end) {
  *begin = n * block / n_blocks;
  *end = n * (block + 1) / n_blocks;
}

void pows_kernel(void *const *args, int64_t block, int64_t n_blocks, void *workspace, sk_kernel_ctx *ctx) {
  (void)workspace;
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK], n = 1, begin, end;
  if (sk_kernel_arg_info(ctx, 0, &dtype, &rank, shape) != SK_STATUS_OK) return;
  for (int d = 0; d < rank; d++) n *= shape[d];
  const float p = *(const float *)sk_kernel_user(ctx);
  block_range(n, block, n_blocks, &begin, &end);
  if (dtype == SK_FP32) {
    const float *x = args[0];
    float *y = args[1];
    for (int64_t i = begin; i < end; i++) y[i] = powf(x[i], p);
  } else {
    const uint16_t *x = args[0];
    uint16_t *y = args[1];
    for (int64_t i = begin; i < end; i++) y[i] = sk_fp32_to_fp16(powf(sk_fp16_to_fp32(x[i]), p));
  }
}

/* One fp32 or fp16 input; one output like it. Anything else is refused, and
 * the graph (or the torch op's fake kernel) reports it. */
sk_status pows_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes, size_t n_in,
                     sk_dtype *out_dtypes, int *out_ranks, int64_t (*out_shapes)[SK_MAX_RANK], size_t *n_out,
                     void *user) {
  (void)user;
  if (n_in != 1) return SK_STATUS_INVALID_ARGUMENT;
  if (in_dtypes[0] != SK_FP32 && in_dtypes[0] != SK_FP16) return SK_STATUS_INVALID_DTYPE;
  out_dtypes[0] = in_dtypes[0];
  out_ranks[0] = in_ranks[0];
  memcpy(out_shapes[0], in_shapes[0], sizeof(int64_t) * (size_t)in_ranks[0]);
  *n_out = 1;
  return SK_STATUS_OK;
}
