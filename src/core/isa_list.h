/* The ISA rungs, lowest first: the one list the library's enum, names and
 * $SK_ISA parsing (core/cpu.h), the tests' ISA gate (tests/isa_gate.c) and
 * the tests' ISA variants (tests/CMakeLists.txt reads the X( lines of this
 * file) come from. Adding a rung: one line here, its detection in
 * core/cpu.c, and the kernel families that use it (their config_for). A
 * rung includes every rung above it in this list.
 *
 * X(ENUM_SUFFIX, name, what a CPU needs for it) */
#ifndef SK_CORE_ISA_LIST_H
#define SK_CORE_ISA_LIST_H

#define SK__ISA_LIST(X)                                                                                           \
  X(SCALAR, scalar, "nothing")                                                                                    \
  X(AVX2, avx2, "AVX2 with FMA and F16C (with OS support for the YMM state)")                                     \
  X(AVX512, avx512, "AVX-512 (F, DQ, BW and VL, with OS support for the ZMM state)")                              \
  X(AVX512VNNI, avx512vnni, "AVX512_VNNI (VPDPBUSD) on an AVX-512 CPU")                                          \
  X(AVX512BF16, avx512bf16, "AVX512_BF16 (VDPBF16PS) on an AVX-512 VNNI CPU")                                     \
  X(AMX, amx, "AMX-INT8 (AMX-TILE and AMX-INT8 on an AVX-512 VNNI CPU, the tile state granted by the OS)")

/* " scalar avx2 ...": every name, for messages. */
#define SK__ISA_SPELLING(suffix, name, needs) " " #name
#define SK__ISA_SPELLINGS SK__ISA_LIST(SK__ISA_SPELLING)

#endif
