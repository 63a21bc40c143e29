/*
 * npy.h — NumPy .npy files for the superkernel dtypes.
 *
 * Writing: format version 1.0, little-endian, C order, the header padded with
 * spaces and a final '\n' so that the data starts on a 64-byte boundary (as
 * numpy writes it).
 * Reading: versions 1.0, 2.0 and 3.0; the header must be a dict with exactly
 * the keys 'descr', 'fortran_order' (False: Fortran order is refused) and
 * 'shape'; the data must be exactly numel * itemsize bytes (truncated data
 * and trailing bytes are errors).
 *
 * dtypes:   fp32 '<f4'   fp16 '<f2'   int8 '|i1'   int32 '<i4'   int64 '<i8'
 *           bool '|b1'   uint8 '|u1'
 *   bf16:   numpy has no bfloat16. bf16 arrays are written as their raw bit
 *           patterns with descr '<u2' (np.load gives uint16; view it with
 *           ml_dtypes: a.view(ml_dtypes.bfloat16)). Reading maps '<u2' and
 *           '<V2' / '|V2' (what np.save writes for an ml_dtypes bfloat16
 *           array) to bf16; no other dtype reads as '<u2'.
 *   '=' (native = little on the hosts we support) is read like '<'; '>' (big
 *   endian) is refused for multi-byte dtypes (one-byte ones take any order); any other descr is refused,
 *   naming it and the supported list.
 *
 * Every function returns an sk_status and writes a one-line message naming
 * the file and the problem into msg (msg_size bytes; msg may be NULL):
 *   SK_STATUS_NOT_FOUND         the file does not exist
 *   SK_STATUS_SYSTEM_ERROR      any other I/O error (errno text)
 *   SK_STATUS_INVALID_ARGUMENT  not a .npy file / a malformed header / truncated
 *                               data / trailing bytes / a bad call
 *   SK_STATUS_UNSUPPORTED       unknown version, fortran_order True, big endian,
 *                               rank above SK_MAX_RANK
 *   SK_STATUS_INVALID_DTYPE     an unsupported descr, or not the expected dtype
 *   SK_STATUS_INVALID_SHAPE     not the expected shape
 */
#ifndef SK_TOOLS_NPY_H
#define SK_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "superkernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An array read from a file (owns data; release with skm_npy_free). */
typedef struct skm_npy_array {
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK];
  int64_t numel;
  void *data; /* numel * sk_dtype_size(dtype) bytes (never NULL on success) */
  size_t bytes;
} skm_npy_array;

/* The descr written for a dtype ("<f4", ...); NULL for an invalid dtype. */
const char *skm_npy_descr(sk_dtype dtype);

/* Writes an array (data: numel * dtype size bytes, C order). rank 0..8; a
 * zero-size shape writes no data. */
sk_status skm_npy_write(const char *path, sk_dtype dtype, int rank, const int64_t *shape, const void *data,
                        char *msg, size_t msg_size);

/* Reads a whole file, any supported dtype and shape. */
sk_status skm_npy_read(const char *path, skm_npy_array *out, char *msg, size_t msg_size);
void skm_npy_free(skm_npy_array *array);

/* Reads a file that must hold exactly `dtype` and `shape` into data (bytes
 * must be numel * dtype size). A mismatch names the file, the expected and
 * the actual dtype or shape. data is untouched when the file is missing or
 * its header is bad or mismatched; truncated or trailing data may leave it
 * partly written. */
sk_status skm_npy_read_into(const char *path, sk_dtype dtype, int rank, const int64_t *shape, void *data,
                            size_t bytes, char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif /* SK_TOOLS_NPY_H */
