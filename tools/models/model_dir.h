/*
 * model_dir.h — a Hugging Face checkpoint directory (config.json and its
 * *.safetensors files) as a whole model of the library
 * (superkernel_model.h): `sk run model DIR` and `sk bench model DIR`.
 *
 * config.json's text goes to sk_model_create as it is; the weight callback
 * finds each name in the directory's memory-mapped safetensors files
 * (safetensors.h) and hands the mapping out borrowed: nothing is copied
 * but a tensor whose data is not aligned to its element size. F32, F16
 * and BF16 tensors are taken as they are; an F8_E4M3 weight of a
 * block-scaled FP8 checkpoint (config.json's quantization_config
 * "quant_method": "fp8" with "weight_block_size" [rows, cols], and a
 * float "<name>_scale_inv" of one scale a block: DeepSeek-V3's) is
 * dequantized into the model's dtype (the embedding table's), w = fp8 *
 * scale in fp32 rounded once, in file-backed memory that is paged out once
 * the model has packed it. Another dtype (integers, FP8 without its
 * scales) is an error naming the tensor, its dtype and its file.
 *
 * Errors name the directory and file: a missing directory, config.json or
 * shard (a file model.safetensors.index.json names that is not there), a
 * malformed or cut-short safetensors file (the file and tensor), and what
 * sk_model_create refuses (its message names the config field or the
 * weight; the file holding that weight, or the directory lacking it, is
 * added).
 */
#ifndef SK_TOOLS_MODEL_DIR_H
#define SK_TOOLS_MODEL_DIR_H

#include <stddef.h>

#include "superkernel_model.h"

typedef struct skm_model_dir skm_model_dir;

/* Reads DIR/config.json, checks the index's shards (when there is an
 * index) and maps every *.safetensors file. */
sk_status skm_model_dir_open(const char *dir, skm_model_dir **out, char *msg, size_t msg_size);
/* Destroy the model made from it first: the model borrows its mapping. */
void skm_model_dir_close(skm_model_dir *d);

/* sk_model_create with cfg's config_json, weight and weight_user set to
 * the directory's (the rest as the caller set it); errors as above. */
sk_status skm_model_dir_create(skm_model_dir *d, sk_model_config *cfg, sk_model **out, char *msg, size_t msg_size);

/* What the model took from the directory (after skm_model_dir_create). */
typedef struct skm_model_dir_usage {
  size_t files, tensors;   /* the directory's */
  size_t taken_bytes;      /* of every tensor the model took, each once */
  size_t embedding_bytes;  /* model.embed_tokens.weight */
  size_t expert_bytes;     /* the routed experts' (names with "mlp.experts.") */
  int64_t experts, top_k;  /* config.json's expert count and experts per token (0: a dense model) */
} skm_model_dir_usage;
void skm_model_dir_get_usage(const skm_model_dir *d, skm_model_dir_usage *out);

#endif
