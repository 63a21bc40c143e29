/* reshape(x, shape): a view with another shape of the same element count; one
 * dimension may be -1 (inferred). Launches nothing. */
#include <string.h>

#include "core/error.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN("x", "any dtype")};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INTS_REQUIRED("shape", "the new dims; one may be -1 (inferred from the element count)"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "a view of x with the new shape")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  const int64_t *dims;
  size_t rank;
  SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "shape", &dims, &rank));
  if (rank > SK_MAX_RANK)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: attribute shape: rank %zu exceeds %d", op, rank, SK_MAX_RANK);
  int64_t shape[SK_MAX_RANK];
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < rank; i++) {
    shape[i] = dims[i];
    if (dims[i] == -1) {
      if (infer >= 0)
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: attribute shape: more than one -1 (dims %d and %zu)", op,
                        infer, i);
      infer = (int)i;
    } else if (dims[i] < 0) {
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: attribute shape: dimension %zu is %lld", op, i,
                      (long long)dims[i]);
    } else if (dims[i] > 0 && known > ((int64_t)1 << 48) / dims[i]) {
      /* The element count would pass any tensor's (and could wrap int64). */
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: attribute shape: size exceeds 2^48 bytes (dimension %zu is %lld)",
                      op, i, (long long)dims[i]);
    } else {
      known *= dims[i];
    }
  }
  int64_t numel = sk__tensor_numel(x);
  char a[SK_SHAPE_STR_MAX], b[SK_SHAPE_STR_MAX];
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: cannot infer -1 in %s from input x %s (%lld elements)", op,
                      sk__shape_str((int)rank, dims, a, sizeof a), sk__shape_str(x->rank, x->shape, b, sizeof b),
                      (long long)numel);
    shape[infer] = numel / known;
    known = numel;
  }
  if (known != numel)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x %s has %lld elements, shape %s has %lld", op,
                    sk__shape_str(x->rank, x->shape, b, sizeof b), (long long)numel,
                    sk__shape_str((int)rank, dims, a, sizeof a), (long long)known);
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, (int)rank, shape);
  return SK_STATUS_OK;
}

/* The reference of a view is a copy (the executor aliases instead). */
static void reference(const sk__node_io *io) { sk__view_reference(io, 0); }

const sk__op_def sk__op_reshape = {
    .type = "reshape",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = x with another shape of the same element count (a view: launches nothing)",
    .kind = SK_KERNEL_VECTOR,
    .is_view = true,
    .dynamic_rows = true, /* a view: it launches nothing, and aliases the live rows too */
    .build = build,
    .reference = reference,
};
