/*
 * safetensors.h — the tensors of a checkpoint directory's *.safetensors
 * files, memory-mapped (read-only) and checked, for checkpoint.c.
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON {"name": {"dtype": "BF16", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {..}}, then the data;
 * offsets count from the end of the header. Every entry is checked when the
 * file is opened: a known dtype name, a shape whose size matches its bytes,
 * offsets inside the file. Names must be unique across the directory.
 * Nothing is read from a tensor's data until a caller reads it, so opening
 * a checkpoint of hundreds of GB costs only its headers.
 */
#ifndef SK_TOOLS_SAFETENSORS_H
#define SK_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "superkernel.h"

#define SKM_ST_MAX_RANK 8

typedef struct skm_st_tensor {
  const char *name;
  const char *dtype_name;  /* as the file writes it: "BF16", "F32", "F8_E4M3", ... */
  sk_dtype dtype;          /* SK_DTYPE_INVALID when the library has no such dtype */
  int fp8_e4m3;            /* 1 for F8_E4M3 (dtype SK_DTYPE_INVALID): skm_st_float_at reads it */
  int rank;
  int64_t shape[SKM_ST_MAX_RANK];
  int64_t numel;
  const void *data;        /* in the mapping: valid while the directory is open */
  size_t bytes;
  const char *file;        /* the file's name inside the directory */
} skm_st_tensor;

typedef struct skm_st_dir skm_st_dir;

/* Maps and checks every *.safetensors file of `dir`. Errors: no such
 * directory or no *.safetensors file (SK_STATUS_NOT_FOUND), a malformed
 * file (SK_STATUS_INVALID_ARGUMENT, naming the file and what is wrong),
 * out of memory. */
sk_status skm_st_open(const char *dir, skm_st_dir **out, char *msg, size_t msg_size);
void skm_st_close(skm_st_dir *d);

/* The tensor `name`, or NULL. */
const skm_st_tensor *skm_st_find(const skm_st_dir *d, const char *name);
/* Tensor i (0 <= i < skm_st_count) in name order; skm_st_find's result
 * minus skm_st_at(d, 0) is its index. */
const skm_st_tensor *skm_st_at(const skm_st_dir *d, size_t i);
/* How many tensors and files the directory holds. */
size_t skm_st_count(const skm_st_dir *d);
size_t skm_st_files(const skm_st_dir *d);

/* Element i of a float tensor (F32, F16, BF16, or F8_E4M3: its value
 * unscaled, exact; a block-scaled checkpoint multiplies by the block's
 * scale itself) as float. */
float skm_st_float_at(const skm_st_tensor *t, int64_t i);
/* The float value of an FP8 E4M3 byte (OCP "e4m3fn": bias 7, no
 * infinities, S.1111.111 is NaN), exactly. */
float skm_fp8_e4m3_to_float(uint8_t b);
/* Whether t's dtype is one skm_st_float_at reads. */
int skm_st_is_float(const skm_st_tensor *t);

#endif
