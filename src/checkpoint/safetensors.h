/*
 * safetensors.h — the tensors of a checkpoint directory's *.safetensors
 * files, memory-mapped (read-only) and checked, for checkpoint.c.
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON {"name": {"dtype": "BF16", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {..}}, then the data;
 * offsets count from the end of the header. The header is parsed with
 * cJSON, and every entry is checked when the file is opened: a known dtype
 * name, a shape whose size matches its bytes, offsets inside the file.
 * Names must be unique across the directory. Nothing is read from a
 * tensor's data until a caller reads it, so opening a checkpoint of
 * hundreds of GB costs only its headers.
 */
#ifndef SK_CHECKPOINT_SAFETENSORS_H
#define SK_CHECKPOINT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "superkernel_checkpoint.h"

typedef struct sk__st_dir sk__st_dir;

/* Maps and checks every *.safetensors file of `dir`. Errors (sk__fail:
 * sk_last_error): no such directory or no *.safetensors file
 * (SK_STATUS_NOT_FOUND), a malformed file (SK_STATUS_INVALID_ARGUMENT,
 * naming the file and what is wrong), out of memory. */
sk_status sk__st_open(const char *dir, sk__st_dir **out);
void sk__st_close(sk__st_dir *d);

/* The tensor `name`, or NULL. Its `used` field is the caller's to set. */
sk_checkpoint_tensor *sk__st_find(const sk__st_dir *d, const char *name);
/* Tensor i (0 <= i < sk__st_count) in name order, or NULL. */
sk_checkpoint_tensor *sk__st_at(const sk__st_dir *d, size_t i);
/* How many tensors and files the directory holds. */
size_t sk__st_count(const sk__st_dir *d);
size_t sk__st_files(const sk__st_dir *d);

/* Whether t is F32, F16 or BF16. */
int sk__st_is_float(const sk_checkpoint_tensor *t);
/* Whether t is F8_E4M3. */
int sk__st_is_fp8(const sk_checkpoint_tensor *t);

#endif
