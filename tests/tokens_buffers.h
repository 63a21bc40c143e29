/* Buffers for the run-time token count tests (test_tokens.c,
 * test_batch_invariance.c): every input of a program at T tokens, row r
 * holding token ids[r]'s values (a hash of the input's name, the token and
 * the column, so the same token gives the same row wherever it sits), and
 * outputs filled with 0xA5; and the programs a case is checked on. */
#ifndef SK_TEST_TOKENS_BUFFERS_H
#define SK_TEST_TOKENS_BUFFERS_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tokens_cases.h"

enum { TC_MAX_IO = 8 };

/* Input element (name, token, col): in [-1, 1), the same for a token
 * wherever its row sits and whatever the input's index in the program. */
static inline float token_value(const char *name, int64_t token, int64_t col) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001B3ull;
  h = (h + (uint64_t)token * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull + (uint64_t)col * 0x94D049BB133111EBull;
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 29;
  return (float)((double)(h >> 11) / (double)(1ull << 53)) * 2.0f - 1.0f;
}

/* An input or output of a program: its rows at `tokens` tokens. k: rows
 * per token for a dynamic value (SK_DIM_TOKENS(k)), 0 for a static inline one. */
typedef struct io_rows {
  const char *name;
  sk_dtype dt;
  size_t row_bytes, rows;
  int64_t k;
} io_rows;

static inline io_rows io_at(const sk_program *p, sk_io_kind kind, size_t i, int64_t tokens) {
  io_rows r;
  int rank;
  int64_t shape[SK_MAX_RANK];
  CHECK_OK(kind == SK_IO_INPUT ? sk_program_input_info(p, i, &r.name, &r.dt, &rank, shape)
                               : sk_program_output_info(p, i, &r.name, &r.dt, &rank, shape));
  int64_t cols = 1;
  for (int d = 1; d < rank; d++) cols *= shape[d];
  r.row_bytes = (size_t)cols * sk_dtype_size(r.dt);
  r.k = shape[0] < 0 ? -shape[0] : 0;
  r.rows = (size_t)(r.k ? r.k * tokens : shape[0]);
  return r;
}

typedef struct run_buffers {
  sk_buffer in[TC_MAX_IO], out[TC_MAX_IO];
  size_t n_in, n_out;
} run_buffers;

/* Buffers for p at `tokens` tokens, row r of every input being token
 * ids[r]'s; outputs filled with 0xA5. */
static inline void alloc_buffers(const sk_program *p, int64_t tokens, const int64_t *ids, run_buffers *b) {
  memset(b, 0, sizeof *b);
  b->n_in = sk_program_num_inputs(p);
  b->n_out = sk_program_num_outputs(p);
  CHECK(b->n_in <= TC_MAX_IO && b->n_out <= TC_MAX_IO);
  for (size_t i = 0; i < b->n_in; i++) {
    io_rows io = io_at(p, SK_IO_INPUT, i, tokens);
    /* Every token-dependent input is [T, ...] (tokens_cases.h); an exact
     * build for one token has static inline [1, ...] inputs. */
    CHECK_MSG(io.rows == (size_t)tokens, "input '%s': %zu rows for %lld tokens", io.name, io.rows, (long long)tokens);
    b->in[i].name = io.name;
    b->in[i].bytes = io.rows * io.row_bytes;
    b->in[i].data = malloc(b->in[i].bytes + 1);
    size_t cols = io.row_bytes / sk_dtype_size(io.dt);
    for (size_t r = 0; r < io.rows; r++)
      for (size_t c = 0; c < cols; c++)
        tc_store(b->in[i].data, io.dt, (int64_t)(r * cols + c), token_value(io.name, ids[r], (int64_t)c));
  }
  for (size_t j = 0; j < b->n_out; j++) {
    io_rows io = io_at(p, SK_IO_OUTPUT, j, tokens);
    b->out[j].name = io.name;
    b->out[j].bytes = io.rows * io.row_bytes;
    b->out[j].data = malloc(b->out[j].bytes + 1);
    memset(b->out[j].data, 0xA5, b->out[j].bytes);
  }
}

static inline void free_buffers(run_buffers *b) {
  for (size_t i = 0; i < b->n_in; i++) free(b->in[i].data);
  for (size_t j = 0; j < b->n_out; j++) free(b->out[j].data);
}

static const sk_executor TC_EXECUTORS[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                           SK_EXECUTOR_REFERENCE};
#define TC_N_EXECUTORS (sizeof TC_EXECUTORS / sizeof TC_EXECUTORS[0])

/* g compiled for executor e on teams[t] (a team of t + 1 cores), or NULL:
 * the reference executor runs no team, so only t = 0 of it, and a failed
 * compile (its check has failed). */
static inline sk_program *tc_program(const sk_graph *g, size_t e, int t, sk_team *const *teams) {
  if (TC_EXECUTORS[e] == SK_EXECUTOR_REFERENCE && t > 0) return NULL;
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t], .executor = TC_EXECUTORS[e]};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

#endif
