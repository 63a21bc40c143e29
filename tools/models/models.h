/*
 * models.h — the seed model (example01) and the benchmark scenarios built with
 * the public C API, plus deterministic inputs and buffer helpers for running a
 * compiled program (shared/spec/models.md).
 *
 * Models:
 *   example01, seed  T = 256, small group 64 rows: exactly example01's graph
 *   decode           T = 16,  small group 8 rows
 *   prefill          T = 4096, small group 64 rows
 *   example02        examples/example02_super_kernel_profiling's six scopes
 *                    (sk1..sk5 grouped_matmul -> moe_gating_topk -> cast, sk6
 *                    dequant_swiglu_quant), T = 64; inputs x, w, b, dsq_x,
 *                    dsq_scale; outputs routing, quantized
 *
 * Every function that can fail returns an sk_status and writes a one-line
 * message into msg (msg_size bytes; msg may be NULL).
 */
#ifndef SK_TOOLS_MODELS_H
#define SK_TOOLS_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "superkernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a printf-style message into msg (msg_size bytes; msg may be NULL)
 * and returns st: the one error helper of tools/models. */
sk_status skm_error(char *msg, size_t msg_size, sk_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* What the model builder is asked for. */
typedef struct skm_config {
  /* Options string given to every scope (sk1, sk2; example02's sk1..sk4 and
   * sk6, its sk5 keeping its own "early-start=0"); NULL = none (the scopes
   * then take the compile config's default_options). */
  const char *options;
  /* NULL: every tensor is a graph input. Else the model's weights (the
   * grouped_matmul weights and biases, moe1_bias, dequant_swiglu_quant's
   * weight and quant scales, quant_matmul's data2 and scale; example02's
   * w, b and dsq_scale) are graph constants (copied) holding the data of
   * the same-named tensors here (skm_values), and not program inputs. */
  const struct skm_io *weights;
  /* With weights: the constants borrow its data (SK_CONSTANT_BORROW)
   * instead of copying it, so weights must outlive, unchanged, every
   * program compiled from the graph. For large layers: one copy less. */
  int borrow_weights;
} skm_config;

/* What a model is. */
typedef struct skm_model_info {
  const char *name;        /* "seed", ... */
  const char *description; /* one line */
  int64_t t;               /* rows of the large group (gmm1_x_1 is [T,180]; example02: x is [T,128]) */
  int64_t small_rows;      /* rows of the small group (gmm1_x_0 is [rows,128]; example02: 0) */
  int64_t dsq_rows;        /* rows seen by dequant_swiglu_quant */
} skm_model_info;

/* The known models, in order, NULL-terminated. */
extern const char *const skm_model_names[];
/* "example01, seed, decode, prefill, example02" (for --help and error
 * messages). */
const char *skm_model_list(void);

/* Looks a model up by name; false (info untouched) when unknown. info may be
 * NULL. */
int skm_model_lookup(const char *name, skm_model_info *info);

/* Builds model `model` (cfg may be NULL). On success *graph_out owns a new
 * graph (sk_graph_destroy) and *info (may be NULL) describes the model. An
 * unknown model is SK_STATUS_NOT_FOUND with "unknown model 'x' (known: ...)";
 * a graph error names the node and carries sk_last_error(). */
sk_status skm_build(const char *model, const skm_config *cfg, sk_graph **graph_out,
                    skm_model_info *info, char *msg, size_t msg_size);

/* One matrix product of a model as an fp32 GEMM: `batch` products of
 * [m, k] x [k, n]. */
typedef struct skm_gemm {
  int64_t batch, m, k, n;
} skm_gemm;

/* The model's matrix products in graph order (each grouped_matmul group,
 * quant_matmul's batch), at most max of them into out; returns how many
 * the model has (0 for an unknown model). What `sk bench` times with
 * OpenBLAS as the scenario's GEMM floor. */
int skm_gemm_shapes(const char *model, skm_gemm *out, int max);

/* ---- Buffers for a compiled program ------------------------------------ */

/* One input or output of a program with its buffer. */
typedef struct skm_tensor {
  const char *name; /* owned by the program: valid while it lives */
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK];
  int64_t numel;
  void *data; /* zero-initialized, 64-byte aligned */
  size_t bytes;
  /* A run-time token dimension (SK_DIM_TOKENS(k)): k rows per token, and
   * shape[0] the rows of the count the buffer was made for; 0: static. */
  int64_t tokens_k;
} skm_tensor;

/* Every input and output of a program, in declaration order, with buffers
 * and the sk_buffer arrays sk_program_run takes. */
typedef struct skm_io {
  size_t n_inputs, n_outputs;
  skm_tensor *inputs, *outputs;
  sk_buffer *in_buffers, *out_buffers;
  sk_program *owner; /* skm_values: the program the names belong to, freed with io */
} skm_io;

/* Allocates buffers for every input and output of a program. On failure io
 * is left empty (skm_io_free is still safe). */
sk_status skm_io_alloc(const sk_program *program, skm_io *io, char *msg, size_t msg_size);
/* The same for a run of `tokens` tokens of a program with a run-time token
 * count (tokens < 0: its maximum; ignored for static programs). */
sk_status skm_io_alloc_at(const sk_program *program, int64_t tokens, skm_io *io, char *msg, size_t msg_size);
/* The token count a model's runs have: its tN for a moe-layer with a
 * run-time token count (tmax=N), else -1 (static shapes: what they say). */
int64_t skm_model_run_tokens(const char *model);
void skm_io_free(skm_io *io);

/* Finds an input / output by name; NULL when there is none. */
skm_tensor *skm_io_find_input(skm_io *io, const char *name);

/* Fills every input deterministically: one pseudo-random stream from `seed`,
 * the inputs in declaration order, each value drawn uniformly from the
 * input's range (by name: the ranges of example01, which keep every op in its
 * meaningful range at any T, and example02's for its inputs). "scale" gets the packed quant_matmul scale of
 * 1/4096. With SKM_DEFAULT_SEED and the seed model the values are exactly
 * example01's. Inputs of unknown names get a range from their dtype. */
#define SKM_DEFAULT_SEED 20261129u
void skm_fill_inputs(skm_io *io, uint64_t seed);

/* The values skm_fill_inputs(seed) gives every input of `model` built with
 * every tensor an input (cfg->weights ignored): the source of both the
 * weights as constants (skm_config.weights) and the inputs of a program
 * built either way (skm_fill_from), so both give the same outputs. */
sk_status skm_values(const char *model, const skm_config *cfg, uint64_t seed, skm_io *values, char *msg,
                     size_t msg_size);
/* Fills each input of io from the same-named tensor of values (all of
 * them must be there, with the same size). */
sk_status skm_fill_from(skm_io *io, const skm_io *values, char *msg, size_t msg_size);
/* Whether a tensor of the model is a weight (see skm_config.weights). */
int skm_is_weight(const char *name);

/* Sum of a tensor's values as double (fp16 / bf16 / ints converted). */
double skm_checksum(const skm_tensor *t);
/* FNV-1a 64 of a tensor's bytes: equal bits <=> (almost surely) equal hash. */
uint64_t skm_hash(const skm_tensor *t);

/* "[6, 48, 64]" ("[]" for rank 0) into buf. */
const char *skm_format_shape(int rank, const int64_t *shape, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SK_TOOLS_MODELS_H */
