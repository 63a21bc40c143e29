/* Packing B: once per constant at compile (sk__gemm_pack_b, the layout in
 * gemm_internal.h), and the bf16 blocks the tiles pack for weights that are
 * not constants. bf16 weights go in whole pairs of k steps (odd k padded
 * with a zero step), in the pair layout on a CPU whose tiles multiply with
 * VDPBF16PS, else as rows with each pair's odd row first: either way the
 * kernels take the steps in the contract's order (bf16_contract.h). */
#include <emmintrin.h>
#include <string.h>

#include "kernels/gemm/bf16_dot.h"
#include "kernels/gemm/gemm_internal.h"

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

size_t sk__gemm_packed_b_size(sk__isa isa, sk_dtype b_dtype, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0) return 0;
  const size_t ks = sk__gemm_k_steps(b_dtype, (size_t)k);
  return round_up((size_t)n, (size_t)sk__gemm_config_for(isa)->nr) * ks *
         (sk__gemm_is_16bit(b_dtype) ? 2 : sizeof(float));
}

void sk__gemm_pack_bf16_block(int dot, const uint16_t *b, size_t ldb, size_t k, size_t pc, size_t kc, size_t j0,
                              size_t cols, size_t nr, uint16_t *out) {
  for (size_t q = 0; q < kc; q += 2, out += 2 * nr) {
    const uint16_t *even = pc + q < k ? b + (pc + q) * ldb + j0 : NULL;
    const uint16_t *odd = pc + q + 1 < k ? b + (pc + q + 1) * ldb + j0 : NULL;
    if (dot) {
      size_t c = 0;
      if (even && odd) /* whole 8-column runs interleaved in SSE2 registers (the loop below took 10% of a
                          Qwen3 MoE layer's compile) */
        for (; c + 8 <= cols; c += 8) {
          const __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(even + c));
          const __m128i o = _mm_loadu_si128((const __m128i *)(const void *)(odd + c));
          _mm_storeu_si128((__m128i *)(void *)(out + 2 * c), _mm_unpacklo_epi16(e, o));
          _mm_storeu_si128((__m128i *)(void *)(out + 2 * c + 8), _mm_unpackhi_epi16(e, o));
        }
      for (; c < nr; c++) {
        out[2 * c] = even && c < cols ? even[c] : 0;
        out[2 * c + 1] = odd && c < cols ? odd[c] : 0;
      }
      continue;
    }
    const uint16_t *rows[2] = {odd, even};
    for (int r = 0; r < 2; r++) {
      uint16_t *o = out + (size_t)r * nr;
      if (rows[r]) memcpy(o, rows[r], cols * 2);
      memset(o + (rows[r] ? cols : 0), 0, (nr - (rows[r] ? cols : 0)) * 2);
    }
  }
}

void sk__gemm_pack_bf16_block_f32(const uint16_t *b, size_t ldb, size_t k, size_t pc, size_t kc, size_t j0,
                                  size_t cols, size_t nr, float *out) {
  for (size_t p = 0; p < kc; p++, out += nr) {
    const size_t row = pc + (p ^ 1); /* the pair's other step */
    for (size_t c = 0; c < nr; c++) out[c] = row < k && c < cols ? sk_bf16_to_fp32(b[row * ldb + j0 + c]) : 0.0f;
  }
}

void sk__gemm_widen_pairs(size_t kc, size_t nr, const uint16_t *pairs, float *out) {
  for (size_t q = 0; q < kc; q += 2, pairs += 2 * nr, out += 2 * nr)
    for (size_t c = 0; c < nr; c++) {
      out[c] = sk_bf16_to_fp32(pairs[2 * c + 1]);
      out[nr + c] = sk_bf16_to_fp32(pairs[2 * c]);
    }
}

void sk__gemm_pack_b(sk__isa isa, sk_numerics numerics, const void *b, sk_dtype b_dtype, int64_t ldb, int64_t k,
                     int64_t n, void *dst) {
  if (k <= 0 || n <= 0) return;
  const sk__gemm_config *cfg = sk__gemm_config_for(isa);
  const size_t nr = (size_t)cfg->nr, kk = (size_t)k, ks = sk__gemm_k_steps(b_dtype, kk);
  const size_t n_panels = ((size_t)n + nr - 1) / nr, kb = sk__gemm_kc_for(ks);
  const size_t es = sk_dtype_size(b_dtype), packed_es = sk__gemm_is_16bit(b_dtype) ? 2 : sizeof(float);
  const int dot = b_dtype == SK_BF16 && sk__gemm_pair_layout(isa, numerics);
  for (size_t j = 0; j < n_panels; j++) {
    const size_t j0 = j * nr, cols = (size_t)n - j0 < nr ? (size_t)n - j0 : nr;
    for (size_t pc = 0; pc < ks; pc += kb) {
      const size_t kc = ks - pc < kb ? ks - pc : kb;
      char *out = (char *)dst + sk__gemm_packed_offset(nr, ks, n_panels, j, pc) * packed_es;
      if (b_dtype == SK_BF16) {
        sk__gemm_pack_bf16_block(dot, b, (size_t)ldb, kk, pc, kc, j0, cols, nr, (uint16_t *)(void *)out);
        continue;
      }
      const char *src = (const char *)b + (pc * (size_t)ldb + j0) * es;
      if (b_dtype != SK_FP16) {
        cfg->pack_b(kc, cols, src, (size_t)ldb, b_dtype, (float *)(void *)out);
        continue;
      }
      /* fp16: B's own 16 bits, plain copies, once per constant. */
      for (size_t p = 0; p < kc; p++, out += nr * 2) {
        memcpy(out, src + p * (size_t)ldb * 2, cols * 2);
        memset(out + cols * 2, 0, (nr - cols) * 2);
      }
    }
  }
}
