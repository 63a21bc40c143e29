/* The constants of sk__expf (activation.c), shared by every ISA path so the
 * scalar definition and the SIMD lanes cannot drift apart. */
#ifndef SK_KERNELS_ACTIVATION_CONSTS_H
#define SK_KERNELS_ACTIVATION_CONSTS_H

/* Above: +Inf (e^x > FLT_MAX); below: +0 (e^x < 2^-150, rounds to 0). */
#define SK_EXP_HI 88.72283935546875f
#define SK_EXP_LO (-103.972076416015625f)
/* 1.5 * 2^23: adding and subtracting it rounds to an integer (RNE). */
#define SK_EXP_MAGIC 0x1.8p23f
#define SK_EXP_LOG2E 0x1.715476p+0f
/* ln2 = LN2_HI + LN2_LO; LN2_HI has 16 significant bits, so n * LN2_HI is
 * exact for |n| <= 2^8 (Cody-Waite reduction). */
#define SK_EXP_LN2_HI 0x1.62e400p-1f
#define SK_EXP_LN2_LO 0x1.7f7d1cp-20f
/* e^r - 1 - r = r^2 (C0 + C1 r + ... + C5 r^5) on |r| <= ln2/2 (Cephes expf). */
#define SK_EXP_C5 1.9875691500e-4f
#define SK_EXP_C4 1.3981999507e-3f
#define SK_EXP_C3 8.3334519073e-3f
#define SK_EXP_C2 4.1665795894e-2f
#define SK_EXP_C1 1.6666665459e-1f
#define SK_EXP_C0 5.0000001201e-1f

#endif
