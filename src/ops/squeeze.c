/* squeeze(x; dims) and unsqueeze(x; dim): views that drop or insert
 * dimensions of size 1, as torch's. They launch nothing: the output aliases
 * the input, byte for byte. */
#include "core/error.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN("x", "any dtype")};
static const sk_op_attr_info squeeze_attrs[] = {
    SK__ATTR_INTS("dims", "dimensions to drop, negative from the end; one whose size is not 1 is kept (as torch); "
                          "absent: every dimension of size 1"),
};
static const sk_op_attr_info unsqueeze_attrs[] = {
    SK__ATTR_INT_REQUIRED("dim", -SK_MAX_RANK, SK_MAX_RANK - 1,
                          "index of the new size-1 dimension in the output, in [-(rank + 1), rank]; negative from the end"),
};
static const sk_op_output_info squeeze_outputs[] = {SK__OUT("y", "a view of x without the dropped dimensions")};
static const sk_op_output_info unsqueeze_outputs[] = {SK__OUT("y", "a view of x with a dimension of size 1 at dim")};

static sk_status build_squeeze(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  bool drop[SK_MAX_RANK] = {false};
  if (sk__ctx_has_attr(ctx, "dims")) {
    const int64_t *dims;
    size_t n;
    SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "dims", &dims, &n));
    int wrap = x->rank > 0 ? x->rank : 1; /* torch: a 0-d tensor takes dim 0 or -1 */
    bool seen[SK_MAX_RANK] = {false};
    for (size_t i = 0; i < n; i++) {
      if (dims[i] < -wrap || dims[i] >= wrap)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dims[%zu]: expected %d..%d for input x of rank %d, got %lld",
                        op, i, -wrap, wrap - 1, x->rank, (long long)dims[i]);
      int d = (int)(dims[i] < 0 ? dims[i] + wrap : dims[i]);
      if (seen[d])
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dims[%zu]: dimension %d is given twice", op, i, d);
      seen[d] = true;
      drop[d] = d < x->rank && x->shape[d] == 1;
    }
  } else {
    for (int d = 0; d < x->rank; d++) drop[d] = x->shape[d] == 1;
  }
  int64_t shape[SK_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (!drop[d]) shape[rank++] = x->shape[d];
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, rank, shape);
  return SK_STATUS_OK;
}

static sk_status build_unsqueeze(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t dim;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "dim", &dim));
  if (x->rank >= SK_MAX_RANK)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: rank %d leaves no room for another dimension (at most %d)",
                    op, x->rank, SK_MAX_RANK);
  if (dim < -(x->rank + 1) || dim > x->rank)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dim: expected %d..%d for input x of rank %d, got %lld", op,
                    -(x->rank + 1), x->rank, x->rank, (long long)dim);
  int at = (int)(dim < 0 ? dim + x->rank + 1 : dim);
  int64_t shape[SK_MAX_RANK];
  for (int d = 0, k = 0; d <= x->rank; d++) shape[d] = d == at ? 1 : x->shape[k++];
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank + 1, shape);
  return SK_STATUS_OK;
}

static void reference(const sk__node_io *io) { sk__view_reference(io, 0); }

const sk__op_def sk__op_squeeze = {
    .type = "squeeze",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(squeeze_attrs),
    SK__SCHEMA_OUTPUTS(squeeze_outputs),
    .doc = "y = x without dimensions of size 1 (a view: launches nothing)",
    .kind = SK_KERNEL_VECTOR,
    .is_view = true,
    .dynamic_rows = true, /* a view: it launches nothing, and aliases the live rows too */
    .build = build_squeeze,
    .reference = reference,
};

const sk__op_def sk__op_unsqueeze = {
    .type = "unsqueeze",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(unsqueeze_attrs),
    SK__SCHEMA_OUTPUTS(unsqueeze_outputs),
    .doc = "y = x with a dimension of size 1 inserted at dim (a view: launches nothing)",
    .kind = SK_KERNEL_VECTOR,
    .is_view = true,
    .dynamic_rows = true, /* a view: it launches nothing, and aliases the live rows too */
    .build = build_unsqueeze,
    .reference = reference,
};
