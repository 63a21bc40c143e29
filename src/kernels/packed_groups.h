/* The column groups of weights packed once (sk__gemm_pack_b and
 * sk__qgemm_pack_b): panels lie in groups of SK_PACKED_GROUP_COLUMNS
 * columns, each group one contiguous run over all of k. A tile of whole
 * groups reads its weights as one stream, so the tilings that stream
 * weights (decode work items) cut their strips in these units. (Packed K
 * block after K block over all columns, a strip was read in chunks of its
 * width x 256 rows, 16 KiB for a 2-panel strip of a 7168-deep bf16 weight,
 * and chunks that short stream at about half the memory's rate.) */
#ifndef SK_KERNELS_PACKED_GROUPS_H
#define SK_KERNELS_PACKED_GROUPS_H

/* A multiple of every micro-kernel's NR: 16 scalar int8 or 4 float panels,
 * 4 AVX2 panels, 2 AVX-512 or AMX panels. */
#define SK_PACKED_GROUP_COLUMNS 64

#endif
