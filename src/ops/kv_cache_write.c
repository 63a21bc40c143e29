/* kv_cache_write(cache, new, positions) -> cache: row t of new goes into
 * cache row positions[t], in place (docs/ops.md).
 *
 *   cache [S, Hkv, D] fp32, fp16 or bf16: a graph input, the caller's state
 *   new [T, Hkv, D] of cache's dtype; positions int32 or int64 [T]
 *
 * The output is the cache's own storage (op.h, writes_input): the op writes
 * the caller's buffer, and ops that read the output (attention) are ordered
 * after the write by the dataflow. Rows are copied bit for bit; nothing is
 * rounded. When two tokens name the same row, the later token's row is what
 * the cache holds (the rows are written in increasing t).
 *
 * positions is run-time data: a position outside [0, S) fails the run,
 * naming the entry, its value and S, and then nothing is written (every
 * block checks all positions before it writes a row).
 *
 * Blocks are ranges of cache rows, not of tokens: a block scans the
 * positions in increasing t and writes the rows that fall in its range, so
 * a row two tokens name is written by one block in token order, whatever
 * the team. Under a run-time token count, new and positions have T live
 * rows; the cache is static. */
#include <string.h>

#include "core/error.h"
#include "ops/index_input.h"
#include "ops/op_util.h"

enum { SLOT_CACHE, SLOT_NEW, SLOT_POSITIONS };

typedef struct kvw_params {
  int64_t s, t;        /* cache rows, planned tokens */
  int64_t row_bytes;   /* Hkv * D elements */
} kvw_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("cache", "[S, Hkv, D] fp32, fp16 or bf16: a graph input, written in place", .dtypes = SK__FLOATS,
           SK__RANK(3, 3)),
    SK__IN("new", "[T, Hkv, D], cache's dtype: the rows to write", SK__SAME_DTYPE_AS(SLOT_CACHE)),
    SK__IN("positions", "int32 or int64 [T]: the cache row of each new row, in [0, S)",
           .dtypes = SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64), SK__RANK(1, 1)),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("cache", "the cache after the write: the input's own storage (aliases it)")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *cache, *nw, *pos;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_CACHE, &cache));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_NEW, &nw));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_POSITIONS, &pos));
  char s1[SK_SHAPE_STR_MAX], s2[SK_SHAPE_STR_MAX];
  if (nw->rank != 3 || nw->shape[1] != cache->shape[1] || nw->shape[2] != cache->shape[2])
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input new: expected [T, %lld, %lld] (cache's Hkv, D), got %s", op,
                    (long long)cache->shape[1], (long long)cache->shape[2],
                    sk__shape_str(nw->rank, nw->shape, s1, sizeof s1));
  if (pos->shape[0] != nw->shape[0])
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input positions: expected [%lld] (new's T), got %s (new %s)", op,
                    (long long)nw->shape[0], sk__shape_str(pos->rank, pos->shape, s1, sizeof s1),
                    sk__shape_str(nw->rank, nw->shape, s2, sizeof s2));
  kvw_params *p = sk__ctx_params(ctx);
  p->s = cache->shape[0];
  p->t = nw->shape[0];
  p->row_bytes = cache->shape[1] * cache->shape[2] * (int64_t)sk_dtype_size(cache->dtype);
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, cache->dtype, cache->rank, cache->shape);
  return SK_STATUS_OK;
}

/* Writes the live tokens whose row lies in [r0, r1), in increasing t, once
 * every live position is known to be a cache row (else the run error names
 * the first that is not, and nothing is written). */
static void write_rows(const sk__node_io *io, int64_t r0, int64_t r1) {
  const kvw_params *p = io->params;
  const sk__tensor *pos = &io->in[SLOT_POSITIONS].tensors[0];
  const char *nw = io->in[SLOT_NEW].tensors[0].data;
  char *cache = io->out[0].data;
  int64_t n_tokens = sk__live_rows(io, pos);
  if (!sk__indices_in_range(io, pos, n_tokens, p->s,
                            "%s (kv_cache_write): input positions[%lld] = %lld: expected a cache row in [0, %lld) "
                            "(cache's S); nothing was written"))
    return;
  for (int64_t t = 0; t < n_tokens; t++) {
    int64_t at = sk__index_at(pos, t);
    if (at >= r0 && at < r1) memcpy(cache + at * p->row_bytes, nw + t * p->row_bytes, (size_t)p->row_bytes);
  }
}

static void reference(const sk__node_io *io) {
  const kvw_params *p = io->params;
  const sk__tensor *cache = &io->in[SLOT_CACHE].tensors[0];
  /* a test's own output buffer; in a program the output is the cache */
  if (io->out[0].data != cache->data) memcpy(io->out[0].data, cache->data, (size_t)(p->s * p->row_bytes));
  write_rows(io, 0, p->s);
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const kvw_params *p = io->params;
  /* Several blocks per core (a prefill's rows are one contiguous run of
   * the cache), each at least 64 KiB of rows. */
  int64_t min_rows = p->row_bytes >= 65536 ? 1 : 65536 / p->row_bytes;
  *out = sk__flat_tiling(p->s, sk__flat_block_size(p->s, 4 * n_cores, 1, min_rows));
  return SK_STATUS_OK;
}

/* Block b writes its cache rows (at most) and reads every position and
 * new row; it never reads the cache. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const kvw_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->s, io->n_blocks, block, &r0, &r1);
  reads[SLOT_CACHE] = (sk__span){0, 0};
  writes[0] = (sk__span){r0 * p->row_bytes, r1 * p->row_bytes};
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const kvw_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->s, io->n_blocks, block, &r0, &r1);
  write_rows(io, r0, r1);
}

const sk__op_def sk__op_kv_cache_write = {
    .type = "kv_cache_write",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "cache[positions[t]] = new[t], in place: the output is the cache input's storage",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(kvw_params),
    .writes_input = true,
    .dynamic_rows = true, /* T live tokens: every block scans them */
};
