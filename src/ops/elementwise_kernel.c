/* The fast kernel of square / add / mul: the output walked in runs along its
 * last (merged) dimension, each operand read with stride 1 or, where it is
 * broadcast, 0. Floats go through fp32 chunks (the SIMD converters widen and
 * narrow fp16 / bf16), so every element is the reference's one fp32
 * operation, rounded once. */
#include "core/cpu.h"
#include "kernels/convert/convert.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"

enum { CHUNK = 512 };

/* n elements of a float operand as fp32, from element off on with stride 0
 * or 1: a pointer into fp32 data, or buf filled. */
static const float *f32_operand(const void *data, sk_dtype dt, int64_t off, int64_t stride, size_t n, float *buf,
                                sk__isa isa) {
  if (stride == 0) {
    float v = sk__load_f32(data, dt, (size_t)off);
    for (size_t j = 0; j < n; j++) buf[j] = v;
    return buf;
  }
  if (dt == SK_FP32) return (const float *)data + off;
  sk__convert((const char *)data + off * (int64_t)sk_dtype_size(dt), dt, buf, SK_FP32, n, isa);
  return buf;
}

/* Output elements [i, i + n) of a float op; x from xo, y from yo. */
static void float_run(const sk__node_io *io, const sk__ew_params *p, int64_t i, int64_t n, int64_t xo, int64_t yo) {
  const sk__tensor *x = &io->in[SK__EW_SLOT_X].tensors[0];
  const void *yd = p->kind == SK__EW_SQUARE || p->has_scalar ? NULL : io->in[SK__EW_SLOT_Y].tensors[0].data;
  int64_t xs = p->loop.stride[0][p->loop.rank - 1], ys = p->loop.stride[1][p->loop.rank - 1];
  sk_dtype dt = x->dtype;
  size_t es = sk_dtype_size(dt);
  sk__isa isa = io->isa;
  float abuf[CHUNK], bbuf[CHUNK], obuf[CHUNK];
  if (p->has_scalar)
    for (size_t j = 0; j < CHUNK; j++) bbuf[j] = p->scalar_f32;
  for (int64_t k = 0; k < n; k += CHUNK) {
    size_t m = (size_t)(n - k < CHUNK ? n - k : CHUNK);
    const float *a = f32_operand(x->data, dt, xo + k * xs, xs, m, abuf, isa);
    const float *b = p->kind == SK__EW_SQUARE ? a : p->has_scalar ? bbuf : f32_operand(yd, dt, yo + k * ys, ys, m, bbuf, isa);
    float *o = dt == SK_FP32 ? (float *)io->out[0].data + i + k : obuf;
    for (size_t j = 0; j < m; j++) o[j] = sk__ew_f32(p->kind, a[j], b[j]);
    if (dt != SK_FP32) sk__convert(obuf, SK_FP32, (char *)io->out[0].data + (i + k) * (int64_t)es, dt, m, isa);
  }
}

/* Output elements [i, i + n) of an integer or bool op. */
static void int_run(const sk__node_io *io, const sk__ew_params *p, int64_t i, int64_t n, int64_t xo, int64_t yo) {
  const sk__tensor *x = &io->in[SK__EW_SLOT_X].tensors[0];
  const void *yd = p->kind == SK__EW_SQUARE || p->has_scalar ? NULL : io->in[SK__EW_SLOT_Y].tensors[0].data;
  int64_t xs = p->loop.stride[0][p->loop.rank - 1], ys = p->loop.stride[1][p->loop.rank - 1];
  sk_dtype dt = x->dtype;
  for (int64_t j = 0; j < n; j++) {
    uint64_t a = sk__ew_load_int(x->data, dt, xo + j * xs);
    uint64_t b = p->kind == SK__EW_SQUARE ? a : p->has_scalar ? (uint64_t)p->scalar_int
                                                              : sk__ew_load_int(yd, dt, yo + j * ys);
    sk__ew_store_int(io->out[0].data, dt, i + j, sk__ew_u64(p->kind, a, b));
  }
}

void sk__ew_compute(const sk__node_io *io, int64_t begin, int64_t end) {
  const sk__ew_params *p = io->params;
  bool is_float = sk__is_float(io->out[0].dtype);
  int64_t row = p->loop.shape[p->loop.rank - 1];
  for (int64_t i = begin; i < end;) {
    int64_t n = row - i % row, xo, yo;
    if (n > end - i) n = end - i;
    sk__bcast_offsets(&p->loop, i, &xo, &yo);
    if (is_float) float_run(io, p, i, n, xo, yo);
    else int_run(io, p, i, n, xo, yo);
    i += n;
  }
}
