/* dequant_swiglu_quant: block tiling and the per-block kernel.
 *
 * A block is a run of whole rows (each row is quantized by its own max, so
 * rows never split). Per row the kernel makes one pass per step of the
 * arithmetic in dequant_swiglu_quant.c over a 2H-float scratch row: every
 * pass is a plain loop the compiler vectorizes on baseline SSE2, silu goes
 * through sk__siluf_array (SIMD per ISA, the scalar bits), and fp16 / bf16
 * loads through sk__convert. Splitting the steps into passes keeps each
 * element's operations and their order exactly the reference's.
 *
 * A run-time token count (op.h): a block computes its rows clipped to x's
 * live rows T, and group_index's ends are cut at that T, as in a program
 * built for T rows (its counts are run-time data summing to any total). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/cpu.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/dequant_swiglu_quant.h"
#include "ops/int8_quantize.h"
#include "ops/op_util.h"

/* Blocks of at least this many x elements (and 4 rows): a row of 128
 * takes ~0.12 us and a block's dispatch ~0.3 us, so 16-row blocks already
 * pay off (decode's 33 rows: 4.1 us on one core, ~2.3 us on two; 8192
 * kept it on one). */
#define MIN_BLOCK_ELEMS 2048

/* Scratch sections start on 64-byte boundaries. */
static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

sk_status sk__dsq_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const sk__tensor *x = &io->in[DSQ_X].tensors[0];
  int64_t t = x->shape[0], w = x->shape[1];
  int64_t min_rows = sk__ceil_div(MIN_BLOCK_ELEMS, w);
  if (min_rows < 4) min_rows = 4;
  *out = sk__flat_tiling(t, sk__flat_block_size(t, n_cores, 1, min_rows));
  /* row [2H] | float bias [2H] | quant_scale row [H] */
  out->workspace_bytes = (size_t)(2 * pad16(w) + pad16(w / 2)) * sizeof(float);
  return SK_STATUS_OK;
}

static const sk__tensor *slot_tensor(const sk__node_io *io, int i) {
  return io->in[i].count ? &io->in[i].tensors[0] : NULL;
}

/* Dequantizes row r of an int32 x into row[0, w). */
static void dequant_row(const int32_t *restrict xi, int64_t w, const int32_t *restrict bias_i,
                        const float *restrict wsr, const float *as, const float *restrict bias_f, float *restrict row) {
  if (bias_i)
    for (int64_t c = 0; c < w; c++) row[c] = (float)(int32_t)((uint32_t)xi[c] + (uint32_t)bias_i[c]);
  else
    for (int64_t c = 0; c < w; c++) row[c] = (float)xi[c];
  if (wsr)
    for (int64_t c = 0; c < w; c++) row[c] = row[c] * wsr[c];
  if (as) {
    float a = *as;
    for (int64_t c = 0; c < w; c++) row[c] = row[c] * a;
  }
  if (bias_f)
    for (int64_t c = 0; c < w; c++) row[c] = row[c] + bias_f[c];
}

void sk__dsq_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const dsq_params *p = io->params;
  const sk__tensor *x = &io->in[DSQ_X].tensors[0];
  const sk__tensor *ws = slot_tensor(io, DSQ_WEIGHT_SCALE), *as = slot_tensor(io, DSQ_ACTIVATION_SCALE);
  const sk__tensor *bias = slot_tensor(io, DSQ_BIAS), *qs = slot_tensor(io, DSQ_QUANT_SCALE);
  const sk__tensor *qo = slot_tensor(io, DSQ_QUANT_OFFSET), *gi = slot_tensor(io, DSQ_GROUP_INDEX);
  int64_t t = sk__live_rows(io, x), w = x->shape[1], h = w / 2, r0, r1;
  sk__flat_block_range(x->shape[0], io->n_blocks, block, &r0, &r1);
  sk__clip(&r0, &r1, t);
  if (r0 == r1) return;
  sk__isa isa = io->isa;
  float *row = workspace, *bias_f = row + pad16(w), *qs_row = bias_f + pad16(w);
  int8_t *y = io->out[0].data;
  float *scale = io->out[1].data;

  /* Per-block constants: the float bias and a shared quant_scale row in
   * fp32 once; a per-group quant_scale row whenever the group changes. */
  const int32_t *bias_i = NULL;
  if (bias && bias->dtype == SK_INT32) bias_i = bias->data;
  else if (bias) sk__convert(bias->data, bias->dtype, bias_f, SK_FP32, (size_t)w, isa);
  bool ws_grouped = ws && ws->rank == 2 && ws->shape[0] > 1;
  bool qs_grouped = qs && qs->rank == 2 && qs->shape[0] > 1;
  int64_t qs_group = -1; /* the group whose quant_scale row is in qs_row */
  float q = 0.0f, off = 0.0f;
  if (p->quant_mode == 0) {
    q = sk__load_f32(qs->data, qs->dtype, 0);
    if (qo) off = sk__load_f32(qo->data, qo->dtype, 0);
  }
  const int64_t *counts = gi ? gi->data : NULL;
  int64_t n_groups = gi ? sk__live_rows(io, gi) : 1, g = 0, g_end = gi ? sk__dsq_group_end(counts, 0, 0, t) : t;

  for (int64_t r = r0; r < r1; r++) {
    while (r >= g_end && g + 1 < n_groups) g_end = sk__dsq_group_end(counts, ++g, g_end, t);
    int8_t *yr = y + r * h;
    if (r >= g_end) { /* past the groups' total */
      memset(yr, 0, (size_t)h);
      scale[r] = 0.0f;
      continue;
    }
    if (x->dtype == SK_INT32)
      dequant_row((const int32_t *)x->data + r * w, w, bias_i, ws ? (const float *)ws->data + (ws_grouped ? g * w : 0) : NULL,
                  as ? (const float *)as->data + r : NULL, bias && !bias_i ? bias_f : NULL, row);
    else
      sk__convert((const char *)x->data + (size_t)(r * w) * sk_dtype_size(x->dtype), x->dtype, row, SK_FP32, (size_t)w,
                  isa);
    float *a = row + (p->activate_left ? 0 : h);
    const float *b = row + (p->activate_left ? h : 0);
    sk__siluf_array(a, a, (size_t)h, isa);
    for (int64_t c = 0; c < h; c++) a[c] = a[c] * b[c];
    if (p->quant_mode == 0) {
      sk__int8_quantize_row(a, h, q, off, yr);
      scale[r] = q;
      continue;
    }
    if (qs) {
      int64_t qg = qs_grouped ? g : 0;
      if (qg != qs_group) {
        sk__convert((const char *)qs->data + (size_t)(qg * h) * sk_dtype_size(qs->dtype), qs->dtype, qs_row, SK_FP32,
                    (size_t)h, isa);
        qs_group = qg;
      }
      for (int64_t c = 0; c < h; c++) a[c] = a[c] * qs_row[c];
    }
    sk__int8_quantize_dynamic(a, h, yr, &scale[r]);
  }
}

/* A block reads its rows of x and writes its rows of y and scale (the
 * planner's footprint; the other inputs stay whole). */
void sk__dsq_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const sk__tensor *x = &io->in[DSQ_X].tensors[0];
  int64_t r0, r1, w = x->shape[1], xes = (int64_t)sk_dtype_size(x->dtype);
  sk__flat_block_range(x->shape[0], io->n_blocks, block, &r0, &r1);
  reads[sk__io_input_index(io, DSQ_X, 0)] = (sk__span){r0 * w * xes, r1 * w * xes};
  writes[0] = (sk__span){r0 * (w / 2), r1 * (w / 2)};
  writes[1] = (sk__span){r0 * 4, r1 * 4};
}
