/*
 * superkernel_checkpoint.h — a Hugging Face checkpoint directory
 * (config.json and its *.safetensors files) read by the library: the
 * files are memory-mapped and checked when opened, and a model is made
 * straight from them, borrowing the mapping (nothing copied but a tensor
 * whose data is not aligned to its element size).
 *
 *   sk_checkpoint *ck;  sk_checkpoint_open("Qwen3-30B-A3B", &ck);
 *   sk_model_config cfg = {.team = team};
 *   sk_model *model;    sk_model_create_from_checkpoint(ck, &cfg, &model);
 *   ...
 *   sk_model_destroy(model);  sk_checkpoint_close(ck);
 *
 * Weights: F32, F16 and BF16 tensors are taken as they are. An F8_E4M3
 * weight of a block-scaled FP8 checkpoint (config.json's
 * quantization_config "quant_method": "fp8" with "weight_block_size"
 * [rows, cols], and a float "<name>_scale_inv" of one scale a block:
 * DeepSeek-V3's) is dequantized into the model's dtype (the embedding
 * table's): w = fp8 * scale in fp32, rounded once, in file-backed memory
 * ($SUPERKERNEL_WEIGHTS_DIR, else $TMPDIR, else /tmp) that is paged out
 * once the model has packed it. Another dtype (integers, FP8 without its
 * scales) is an error naming the tensor, its dtype and its file.
 *
 * Errors (sk_last_error) name the directory and the file: a missing
 * directory, config.json or shard (a file model.safetensors.index.json
 * names that is not there), a malformed or cut-short safetensors file (the
 * file and the tensor: every header entry is checked against the file
 * when it is opened), and what sk_model_create refuses (its message names
 * the config field or the weight; the file holding that weight, or the
 * directory lacking it, is added). Opening reads only the headers, so a
 * checkpoint of hundreds of GB opens at once.
 */
#ifndef SUPERKERNEL_CHECKPOINT_H
#define SUPERKERNEL_CHECKPOINT_H

#include "superkernel_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sk_checkpoint sk_checkpoint;

/* One tensor of the directory, as its file stores it. */
typedef struct sk_checkpoint_tensor {
  const char *name;
  const char *file;        /* the file's name inside the directory */
  const char *dtype_name;  /* as the file writes it: "BF16", "F32", "F8_E4M3", ... */
  sk_dtype dtype;          /* SK_DTYPE_INVALID where the library has no such dtype (F8_E4M3, F64, ...) */
  int rank;
  int64_t shape[SK_MODEL_MAX_RANK];
  int64_t numel;
  const void *data;        /* in the mapping, read-only: valid until sk_checkpoint_close */
  size_t bytes;
  int used;                /* 1 once sk_checkpoint_weight handed it to a model */
} sk_checkpoint_tensor;

/* Reads DIR/config.json, checks the index's shards (when there is an
 * index), and maps and checks every *.safetensors file. */
SK_API sk_status sk_checkpoint_open(const char *dir, sk_checkpoint **out);
/* Destroy every model made from it first: they borrow its mapping. NULL is accepted. */
SK_API void sk_checkpoint_close(sk_checkpoint *ck);

SK_API const char *sk_checkpoint_dir(const sk_checkpoint *ck);
/* config.json's text, NUL-terminated. */
SK_API const char *sk_checkpoint_config_json(const sk_checkpoint *ck);
/* How many *.safetensors files and tensors the directory holds. */
SK_API size_t sk_checkpoint_file_count(const sk_checkpoint *ck);
SK_API size_t sk_checkpoint_tensor_count(const sk_checkpoint *ck);
/* Tensor i (0 <= i < sk_checkpoint_tensor_count) in name order; NULL
 * past the end. Valid until sk_checkpoint_close. */
SK_API const sk_checkpoint_tensor *sk_checkpoint_tensor_at(const sk_checkpoint *ck, size_t i);
/* The tensor `name`, or NULL when there is none. Valid until sk_checkpoint_close. */
SK_API const sk_checkpoint_tensor *sk_checkpoint_find(const sk_checkpoint *ck, const char *name);
/* Element i of an F32, F16, BF16 or F8_E4M3 tensor as float, exactly (an
 * FP8 value unscaled: a block-scaled checkpoint multiplies by its block's
 * scale); NaN for another dtype or an i out of range. */
SK_API float sk_checkpoint_float_at(const sk_checkpoint_tensor *t, int64_t i);
/* The float value of an FP8 E4M3 byte (OCP "e4m3fn": bias 7, no
 * infinities, S.1111.111 is NaN), exactly. */
SK_API float sk_fp8_e4m3_to_fp32(uint8_t bits);

/* An sk_model_weight_fn over the checkpoint (weight_user: the
 * sk_checkpoint): the weight as a model takes it (FP8 dequantized, data
 * aligned), marked used. */
SK_API sk_status sk_checkpoint_weight(void *checkpoint, const char *name, sk_model_tensor *out);

/* sk_model_create with cfg (NULL: every field its default) whose
 * config_json, weight and weight_user are the checkpoint's; the errors
 * name the directory and the file. Dequantized FP8 weights are paged out
 * to their file once the model has packed them. */
SK_API sk_status sk_model_create_from_checkpoint(sk_checkpoint *ck, const sk_model_config *cfg,
                                                 sk_model **model_out);

#ifdef __cplusplus
}
#endif

#endif
