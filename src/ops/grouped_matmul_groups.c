/* grouped_matmul, group_type 0: which rows of x belong to which expert,
 * from the group_list attribute (fixed when the graph is built) or the
 * group_list input (read by every run). Both lists mean the same:
 * group_list_type 0 gives each expert's cumulative row end (non-decreasing,
 * at most M), 1 its row count (>= 0, summing to at most M). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

/* The one reading of a group list, for the attribute (build time) and the
 * input (every run): each expert's rows [begin[e], end[e]) of M, and the
 * rows covered. False on a bad list, with why naming the entry: a
 * cumulative end below the one before, a negative count, or rows past M
 * (counts summed without overflow). */
static bool walk_list(const int64_t *list, int64_t n, int list_type, int64_t m, int64_t *begin, int64_t *end,
                      int64_t *used, char *why, size_t why_size) {
  int64_t at = 0;
  for (int64_t e = 0; e < n; e++) {
    int64_t next = list[e];
    if (list_type == 0 && next < at) {
      snprintf(why, why_size, "cumulative ends must be non-decreasing, but entry %lld is %lld after %lld",
               (long long)e, (long long)next, (long long)at);
      return false;
    }
    if (list_type == 1 && list[e] < 0) {
      snprintf(why, why_size, "count %lld is negative (%lld)", (long long)e, (long long)list[e]);
      return false;
    }
    if (list_type == 1 && list[e] > INT64_MAX - at) { /* at + count would overflow */
      snprintf(why, why_size, "entry %lld (count %lld) reaches past M = %lld", (long long)e, (long long)list[e],
               (long long)m);
      return false;
    }
    if (list_type == 1) next = at + list[e];
    if (next > m) {
      snprintf(why, why_size, "entry %lld reaches row %lld, past M = %lld", (long long)e, (long long)next,
               (long long)m);
      return false;
    }
    begin[e] = at;
    end[e] = next;
    at = next;
  }
  *used = at;
  return true;
}

/* group_type 0: fills row_begin / row_end per expert from group_list. */
sk_status sk__gmm_parse_group_list(sk__build_ctx *ctx, gmm_params *p, int64_t m) {
  const char *op = sk__ctx_op(ctx);
  const int64_t *list;
  size_t n;
  int64_t list_type;
  SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "group_list", &list, &n));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_list_type", &list_type));
  if ((int64_t)n != p->n_groups)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list: expected %lld entries (one per expert), got %zu",
                    op, (long long)p->n_groups, n);
  p->row_begin = malloc(n * sizeof(int64_t));
  p->row_end = malloc(n * sizeof(int64_t));
  if (!p->row_begin || !p->row_end) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", op);
  char why[160];
  if (!walk_list(list, (int64_t)n, (int)list_type, m, p->row_begin, p->row_end, &p->rows_used, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list: %s", op, why);
  return SK_STATUS_OK;
}

/* group_type 0 with a group_list tensor: its rows are read by every run
 * (sk__gmm_runtime_rows), so only its form is checked here. */
sk_status sk__gmm_check_runtime_list(sk__build_ctx *ctx, gmm_params *p, const sk__tensor *list) {
  const char *op = sk__ctx_op(ctx);
  char s[SK_SHAPE_STR_MAX];
  int64_t list_type;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_list_type", &list_type));
  if (sk__ctx_has_attr(ctx, "group_list"))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: give group_list as an attribute or an input, not both", op);
  if (list->rank != 1 || list->shape[0] != p->n_groups)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input group_list: expected shape [%lld] (one entry per expert), got %s",
                    op, (long long)p->n_groups, sk__shape_str(list->rank, list->shape, s, sizeof s));
  if (p->split_item < 2)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute split_item: a group_list input needs 2 or 3 (one [M, N] output; per-expert "
                    "outputs would have shapes known only at run time), got %d",
                    op, p->split_item);
  p->runtime_groups = true;
  p->list_type = (int)list_type;
  return SK_STATUS_OK;
}

/* M is the rows of x that exist in this run: with a run-time token count
 * (op.h) fewer than the planned x has, and the list must stay within them
 * as it would in a program built for exactly this run's tokens. */
bool sk__gmm_runtime_rows(const sk__node_io *io, int64_t *row_begin, int64_t *row_end, int64_t *rows_used) {
  const gmm_params *p = io->params;
  const sk__tensor *x = &io->in[GMM_X].tensors[0];
  int64_t m = sk__live_rows(io, x);
  char why[160];
  if (walk_list(io->in[GMM_GROUP_LIST].tensors[0].data, p->n_groups, p->list_type, m, row_begin, row_end, rows_used,
                why, sizeof why))
    return true;
  if (m < x->shape[0]) /* say where this M comes from */
    sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT,
                      "%s (grouped_matmul): input group_list: %s (x's rows in this run of %lld tokens)", io->name, why,
                      (long long)io->tokens);
  else
    sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT, "%s (grouped_matmul): input group_list: %s", io->name,
                      why);
  return false;
}

void *sk__gmm_transpose_cols(const gmm_group *q, int64_t n0, int64_t n1, void *dst) {
  const size_t es = sk_dtype_size(q->w_dtype);
  const int64_t nb = n1 - n0, k = q->k;
  char *b = dst ? dst : malloc((size_t)(k * nb) * es + 1);
  if (!b) return NULL;
  const char *w = q->w;
  for (int64_t j = 0; j < nb; j++)
    for (int64_t r = 0; r < k; r++) memcpy(b + (size_t)(r * nb + j) * es, w + (size_t)((n0 + j) * k + r) * es, es);
  return b;
}
