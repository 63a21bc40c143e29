/* fuzz_exec's run-time token count (superkernel.h, "A run-time token
 * count"; fuzz/README.md).
 *
 * One input in about three (byte 0 >= TOKENS_MODE_MIN) builds its graph
 * with a maximum token count: the next byte draws the maximum, and the
 * generator (fuzz_gen.h: gen_rows, gen_input_role) declares inputs whose
 * leading dimension is the maximum as SK_DIM_DYNAMIC. The compiled
 * programs then run at 1..3 token counts T in 0..max drawn from the
 * input's last bytes (T = 0 and T = max one time in 8 each), each on
 * every executor and checked as a static graph is (fuzz_exec.c), so runs
 * at several T also switch buckets. Then the buffers are
 * sized wrongly on purpose (tokens_check_bad_sizes): a byte off, partial
 * rows, T > max, buffers that disagree on T. Each such run, given or
 * bound, must be refused, and write nothing.
 *
 * The harness's model of a run's T (the library's rule, bind.c): T comes
 * from the dynamic inputs and outputs whose token rows have bytes; they
 * must all hold the same whole number of rows, at most the maximum. With
 * no such buffer T is 0, and a run at T = 0 writes nothing at all. */
#ifndef SK_FUZZ_TOKENS_H
#define SK_FUZZ_TOKENS_H

#include "fuzz_gen.h"


/* Byte 0 at or above this: a graph with a run-time token count. Saved
 * inputs of static graphs (byte 0 below it) replay as before. */
#define TOKENS_MODE_MIN 168
#define TOKENS_MAX_COUNTS 3

/* Sets a maximum drawn from the next byte: 1..8 mostly, up to 64 now and
 * then (every bucket 1, 2, 4, ... max gets a compile). */
static void tokens_begin(gen *G, fuzz_reader *r) {
  unsigned c = fr_u8(r);
  int64_t max = c < 160 ? 1 + c % 8 : c < 232 ? 1 + c % 24 : 1 + c % 64;
  if (FUZZ_CALL(sk_graph_set_max_tokens(G->g, max)) != SK_STATUS_OK)
    FUZZ_FAIL("sk_graph_set_max_tokens(%lld) on an empty graph: %s", (long long)max, sk_last_error());
  G->max_tokens = max;
  gen_stat("dynamic graphs");
}

/* 1..3 token counts to run at: 0 one time in 8, max one in 8, else any in
 * 1..max (also past the input's end, where bytes read 0). */
static size_t tokens_draw_counts(fuzz_reader *r, int64_t max, int64_t *counts) {
  size_t n = 1 + fr_u8(r) % TOKENS_MAX_COUNTS;
  for (size_t i = 0; i < n; i++) {
    unsigned c = fr_u8(r);
    counts[i] = c >= 1 && c < 33 ? 0 : c >= 33 && c < 65 ? max : 1 + (int64_t)(c % (unsigned)max);
  }
  return n;
}

/* The bytes of input or output i in a run of T tokens, its name, and the
 * bytes of one token's rows (0: a static binding). A dynamic leading
 * dimension is reported as SK_DIM_TOKENS(k): k * T rows. */
static size_t tokens_io_bytes(const sk_program *p, sk_io_kind kind, size_t i, int64_t T, const char **name,
                              size_t *row) {
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  sk_status st = kind == SK_IO_INPUT ? sk_program_input_info(p, i, name, &dt, &rank, shape)
                                     : sk_program_output_info(p, i, name, &dt, &rank, shape);
  FUZZ_ASSERT(st == SK_STATUS_OK, "binding info: %s", sk_last_error());
  size_t n = sk_dtype_size(dt);
  for (int d = 1; d < rank; d++) n *= (size_t)shape[d];
  bool dynamic = rank >= 1 && shape[0] < 0;
  FUZZ_ASSERT(!dynamic || sk_program_max_tokens(p) > 0, "'%s' is dynamic in a program without a token count", *name);
  if (row) *row = dynamic ? n * (size_t)-shape[0] : 0;
  return rank == 0 ? n : dynamic ? n * (size_t)(-shape[0] * T) : n * (size_t)shape[0];
}

static size_t tokens_n_io(const sk_program *p, sk_io_kind kind) {
  return kind == SK_IO_INPUT ? sk_program_num_inputs(p) : sk_program_num_outputs(p);
}

/* The dynamic inputs and outputs whose rows have bytes: what T is read from. */
static size_t tokens_row_buffers(const sk_program *p) {
  size_t n = 0, row;
  const char *name;
  for (int kind = 0; kind < 2; kind++)
    for (size_t i = 0; i < tokens_n_io(p, (sk_io_kind)kind); i++) {
      tokens_io_bytes(p, (sk_io_kind)kind, i, 0, &name, &row);
      n += row > 0;
    }
  return n;
}

/* Whether a run of T tokens computes anything (see the model above). */
static bool tokens_live(const sk_program *p, int64_t T) {
  return sk_program_max_tokens(p) == 0 || (T > 0 && tokens_row_buffers(p) > 0);
}

/* ---- Wrongly sized buffers ------------------------------------------------- */

/* The sizes of a run's buffers: bytes[SK_IO_INPUT][i], bytes[SK_IO_OUTPUT][j]. */
typedef struct tokens_sizes {
  size_t *bytes[2];
} tokens_sizes;

/* Whether one buffer of `bytes` may be given or bound for io i (the
 * library's check_buffer): whole rows up to the maximum, or exact. */
static bool tokens_buffer_ok(const sk_program *p, sk_io_kind kind, size_t i, size_t bytes) {
  size_t row;
  const char *name;
  int64_t max = sk_program_max_tokens(p);
  size_t want = tokens_io_bytes(p, kind, i, max, &name, &row);
  return row ? bytes % row == 0 && bytes <= want : bytes == want;
}

/* Whether a run with these sizes is legal: every buffer fits, and the
 * buffers with token rows agree on T. */
static bool tokens_run_ok(const sk_program *p, const tokens_sizes *s) {
  int64_t first = -1;
  for (int kind = 0; kind < 2; kind++)
    for (size_t i = 0; i < tokens_n_io(p, (sk_io_kind)kind); i++) {
      size_t row, bytes = s->bytes[kind][i];
      const char *name;
      tokens_io_bytes(p, (sk_io_kind)kind, i, 0, &name, &row);
      if (!tokens_buffer_ok(p, (sk_io_kind)kind, i, bytes)) return false;
      if (!row) continue;
      if (first >= 0 && (int64_t)(bytes / row) != first) return false;
      first = (int64_t)(bytes / row);
    }
  return true;
}

#define TOKENS_UNTOUCHED 0x5A

/* Runs p with buffers of these sizes (inputs zero, outputs TOKENS_UNTOUCHED)
 * given to sk_program_run and bound to a run context: each run must be
 * refused (a bind too when its buffer alone is wrong), outputs untouched. */
static void tokens_expect_refused(sk_program *p, const char *ex, sk_team *team, const tokens_sizes *s,
                                  const char *what) {
  size_t n[2] = {tokens_n_io(p, SK_IO_INPUT), tokens_n_io(p, SK_IO_OUTPUT)};
  sk_buffer *bufs[2];
  for (int kind = 0; kind < 2; kind++) {
    bufs[kind] = calloc(n[kind] + 1, sizeof(sk_buffer));
    FUZZ_ASSERT(bufs[kind] != NULL, "out of memory");
    for (size_t i = 0; i < n[kind]; i++) {
      const char *name;
      tokens_io_bytes(p, (sk_io_kind)kind, i, 0, &name, NULL);
      void *data = calloc(s->bytes[kind][i] + 1, 1);
      FUZZ_ASSERT(data != NULL, "out of memory");
      if (kind == SK_IO_OUTPUT) memset(data, TOKENS_UNTOUCHED, s->bytes[kind][i] + 1);
      bufs[kind][i] = (sk_buffer){name, data, s->bytes[kind][i]};
    }
  }
  sk_status st = FUZZ_CALL(sk_program_run(p, team, bufs[0], n[0], bufs[1], n[1]));
  FUZZ_ASSERT(st != SK_STATUS_OK, "%s: a run with %s was not refused", ex, what);
  sk_run_context *ctx = NULL;
  bool all_bound = FUZZ_CALL(sk_run_context_create(p, &ctx)) == SK_STATUS_OK;
  for (int kind = 0; ctx && kind < 2; kind++)
    for (size_t i = 0; i < n[kind]; i++) {
      sk_buffer *b = &bufs[kind][i];
      bool ok = FUZZ_CALL(sk_run_context_bind(ctx, (sk_io_kind)kind, i, b->data, b->bytes)) == SK_STATUS_OK;
      FUZZ_ASSERT(ok == tokens_buffer_ok(p, (sk_io_kind)kind, i, b->bytes), "%s: binding '%s' of %zu bytes (%s): %s",
                  ex, b->name, b->bytes, what, ok ? "accepted" : sk_last_error());
      all_bound &= ok;
    }
  if (all_bound) {
    st = FUZZ_CALL(sk_run_context_run(ctx, team));
    FUZZ_ASSERT(st != SK_STATUS_OK, "%s: a bound run with %s was not refused", ex, what);
  }
  sk_run_context_destroy(ctx);
  for (size_t j = 0; j < n[1]; j++) {
    const unsigned char *o = bufs[1][j].data;
    for (size_t b = 0; b <= bufs[1][j].bytes; b++)
      FUZZ_ASSERT(o[b] == TOKENS_UNTOUCHED, "%s: a refused run (%s) wrote output '%s' (byte %zu of %zu)", ex, what,
                  bufs[1][j].name, b, bufs[1][j].bytes);
  }
  for (int kind = 0; kind < 2; kind++) {
    for (size_t i = 0; i < n[kind]; i++) free(bufs[kind][i].data);
    free(bufs[kind]);
  }
  gen_stat("bad sizes refused");
}

/* Draws one wrong size into s (sizes of a run at T; rows: each buffer's
 * token row bytes): a buffer a byte off, a partial row, every token buffer
 * at T > max, or one token buffer at another T than the rest. Returns what
 * it drew, NULL when the draw cannot apply (no partial row of 1 byte). */
static const char *tokens_draw_bad(const sk_program *p, fuzz_reader *r, int64_t T, tokens_sizes *s,
                                   size_t *const rows[2]) {
  int64_t max = sk_program_max_tokens(p);
  size_t n[2] = {tokens_n_io(p, SK_IO_INPUT), tokens_n_io(p, SK_IO_OUTPUT)};
  /* The buffer to change: any input or output. */
  unsigned pick = fr_u16(r) % (unsigned)(n[0] + n[1]);
  int kind = pick < n[0] ? SK_IO_INPUT : SK_IO_OUTPUT;
  size_t i = kind == SK_IO_INPUT ? pick : pick - n[0], row = rows[kind][i], *b = &s->bytes[kind][i];
  switch (fr_u8(r) % 4) {
    case 0: /* a byte more or less */
      if (*b > 0 && fr_chance(r, 128)) {
        *b -= 1;
        return "a buffer a byte short";
      }
      *b += 1;
      return "a buffer a byte long";
    case 1: /* a partial token row */
      if (row < 2) return NULL;
      *b += 1 + fr_u8(r) % (row - 1);
      return "a partial token row";
    case 2: /* every token buffer holds more than the maximum */
      for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < n[k]; j++) s->bytes[k][j] += rows[k][j] * (size_t)(max + 1 - T + fr_u8(r) % 3);
      return "T > max";
    default: /* one token buffer at another count than the rest */
      if (!row) return NULL;
      *b = row * (size_t)((T + 1 + fr_u8(r) % max) % (max + 1));
      return "token buffers that disagree";
  }
}

/* One wrongly sized run (tokens_draw_bad) of each program in ps (named by
 * names), when the draw is illegal: a byte more of a 1-byte row is one
 * token more, a legal run, and is skipped. */
static void tokens_check_bad_sizes(sk_program *const *ps, const char *const *names, size_t n_ps, sk_team *team,
                                   fuzz_reader *r) {
  const sk_program *p = ps[0];
  int64_t max = sk_program_max_tokens(p), T = fr_u8(r) % (max + 1);
  size_t n[2] = {tokens_n_io(p, SK_IO_INPUT), tokens_n_io(p, SK_IO_OUTPUT)};
  tokens_sizes s;
  size_t *rows[2];
  for (int kind = 0; kind < 2; kind++) {
    s.bytes[kind] = calloc(n[kind] + 1, sizeof(size_t));
    rows[kind] = calloc(n[kind] + 1, sizeof(size_t));
    FUZZ_ASSERT(s.bytes[kind] && rows[kind], "out of memory");
    for (size_t i = 0; i < n[kind]; i++) {
      const char *name;
      s.bytes[kind][i] = tokens_io_bytes(p, (sk_io_kind)kind, i, T, &name, &rows[kind][i]);
    }
  }
  const char *what = n[0] + n[1] ? tokens_draw_bad(p, r, T, &s, rows) : NULL;
  if (what && !tokens_run_ok(p, &s))
    for (size_t k = 0; k < n_ps; k++) tokens_expect_refused(ps[k], names[k], team, &s, what);
  for (int kind = 0; kind < 2; kind++) {
    free(s.bytes[kind]);
    free(rows[kind]);
  }
}

#endif
