/* Packing constant weights at compile (packed_weights.h). */
#include "ops/packed_weights.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/gemm/gemm.h"
#include "kernels/qgemm/qgemm.h"

/* The block: which path and kind it was packed for, each matrix's byte
 * offset from the block's start (0: an empty matrix), then the panels. */
typedef struct packed_block {
  sk__isa isa;
  sk_numerics numerics;
  sk__pack_kind kind;
  int64_t n;
  size_t offset[];
} packed_block;

static size_t packed_size(sk__pack_kind kind, sk__isa isa, const sk__weight_matrix *m) {
  return kind == SK_PACK_FLOAT ? sk__gemm_packed_b_size(isa, m->dtype, m->k, m->n) : sk__qgemm_packed_b_size(isa, m->k, m->n);
}

/* B [k, n] row-major from a transposed matrix's [n, k] (malloc'd; NULL
 * when out of memory): one matrix at a time, so packing a layer of experts
 * never holds a second copy of all of them. */
static void *transposed_copy(const sk__weight_matrix *m) {
  size_t es = sk_dtype_size(m->dtype);
  char *b = malloc((size_t)(m->k * m->n) * es + 1);
  if (!b) return NULL;
  const char *w = m->data;
  for (int64_t j = 0; j < m->n; j++)
    for (int64_t q = 0; q < m->k; q++) memcpy(b + (size_t)(q * m->n + j) * es, w + (size_t)(j * m->k + q) * es, es);
  return b;
}

sk_status sk__pack_weights(sk__pack_kind kind, const sk__weight_matrix *mats, int64_t n, const char *op,
                           sk__isa isa, sk_numerics numerics, void **packed, size_t *bytes) {
  *packed = NULL;
  *bytes = 0;
  size_t header = sk__align_up(sizeof(packed_block) + (size_t)n * sizeof(size_t)), total = header;
  for (int64_t i = 0; i < n; i++) {
    size_t size = packed_size(kind, isa, &mats[i]);
    if (size && !mats[i].data) return SK_STATUS_OK; /* not a constant: nothing to pack */
    total += sk__align_up(size);
  }
  packed_block *block = sk__alloc_streamed(total); /* decode streams it: huge pages */
  if (!block) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory packing %zu bytes of weights", op, total);
  *block = (packed_block){.isa = isa, .numerics = numerics, .kind = kind, .n = n};
  size_t at = header;
  for (int64_t i = 0; i < n; i++) {
    const sk__weight_matrix *m = &mats[i];
    size_t size = packed_size(kind, isa, m);
    block->offset[i] = size ? at : 0;
    if (size && kind == SK_PACK_FLOAT && m->transposed) {
      void *b = transposed_copy(m);
      if (!b) {
        sk__aligned_free(block);
        return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory transposing a weight", op);
      }
      sk__gemm_pack_b(isa, numerics, b, m->dtype, m->n, m->k, m->n, (char *)block + at);
      free(b);
    } else if (size && kind == SK_PACK_FLOAT)
      sk__gemm_pack_b(isa, numerics, m->data, m->dtype, m->ldb, m->k, m->n, (char *)block + at);
    else if (size)
      sk__qgemm_pack_b(isa, m->data, m->ldb, m->k, m->n, (char *)block + at);
    at += sk__align_up(size);
  }
  *packed = block;
  *bytes = total;
  return SK_STATUS_OK;
}

const void *sk__packed_weight(const void *packed, sk__pack_kind kind, sk__isa isa, sk_numerics numerics, int64_t i) {
  const packed_block *block = packed;
  /* Panels of another path's width would be read wrongly. A node packs and
   * runs for its program's ISA, so this holds; the check keeps a mismatch
   * merely slower. */
  if (!block || block->isa != isa || block->numerics != numerics || block->kind != kind || i < 0 || i >= block->n || !block->offset[i])
    return NULL;
  return (const char *)block + block->offset[i];
}
