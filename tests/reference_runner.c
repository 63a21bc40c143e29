#include "reference_runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/program.h"
#include "kernels/convert/convert.h"

uint64_t rr_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double rr_uniform(uint64_t *s, double lo, double hi) {
  return lo + (hi - lo) * (double)(rr_next(s) >> 11) * 0x1p-53;
}

void rr_store(void *data, sk_dtype dtype, size_t i, double v) {
  switch (dtype) {
    case SK_INT8: ((int8_t *)data)[i] = (int8_t)(int)floor(v); break;
    case SK_INT32: ((int32_t *)data)[i] = (int32_t)floor(v); break;
    case SK_INT64: ((int64_t *)data)[i] = (int64_t)floor(v); break;
    case SK_UINT8: ((uint8_t *)data)[i] = (uint8_t)(int64_t)floor(v); break;
    /* 2 and 3 too: readers must take any nonzero byte as true. */
    case SK_BOOL: ((uint8_t *)data)[i] = (uint8_t)((int64_t)floor(v) & 3); break;
    default: sk__store_f32(data, dtype, i, (float)v); break;
  }
}

void rr_fill(void *data, sk_dtype dtype, size_t n, double lo, double hi, uint64_t *state) {
  for (size_t i = 0; i < n; i++) rr_store(data, dtype, i, rr_uniform(state, lo, hi));
}

static size_t info_bytes(const sk_program *p, size_t i, bool input, const char **name) {
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  if (input) sk_program_input_info(p, i, name, &dt, &rank, shape);
  else sk_program_output_info(p, i, name, &dt, &rank, shape);
  size_t n = sk_dtype_size(dt);
  for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
  return n;
}

bool rr_alloc(const sk_program *p, rr_buffers *b, double lo, double hi, uint64_t seed) {
  b->n_inputs = sk_program_num_inputs(p);
  b->n_outputs = sk_program_num_outputs(p);
  b->inputs = calloc(b->n_inputs + 1, sizeof(sk_buffer));
  b->outputs = calloc(b->n_outputs + 1, sizeof(sk_buffer));
  if (!b->inputs || !b->outputs) return false;
  for (size_t i = 0; i < b->n_inputs; i++) {
    const char *name;
    size_t bytes = info_bytes(p, i, true, &name);
    b->inputs[i] = (sk_buffer){name, malloc(bytes + 1), bytes};
    if (!b->inputs[i].data) return false;
    rr_fill(b->inputs[i].data, p->inputs[i].desc.dtype, bytes / sk_dtype_size(p->inputs[i].desc.dtype), lo, hi, &seed);
  }
  for (size_t i = 0; i < b->n_outputs; i++) {
    const char *name;
    size_t bytes = info_bytes(p, i, false, &name);
    b->outputs[i] = (sk_buffer){name, calloc(1, bytes + 1), bytes};
    if (!b->outputs[i].data) return false;
  }
  return true;
}

void rr_fill_dtype_range(void *data, sk_dtype dt, size_t n, uint64_t *seed) {
  if (dt == SK_INT64) {
    for (size_t j = 0; j < n; j++) {
      float scale = (float)rr_uniform(seed, 0x1p-12, 0x1p-8), offset = (float)rr_uniform(seed, -20, 20);
      sk_trans_quant_param(&scale, &offset, 1, (int64_t *)data + j);
    }
  } else {
    double lo = dt == SK_INT8 ? -128 : dt == SK_INT32 ? -1000 : dt == SK_UINT8 || dt == SK_BOOL ? 0 : -1;
    double hi = dt == SK_INT8 ? 128 : dt == SK_INT32 ? 1000 : dt == SK_UINT8 ? 256 : dt == SK_BOOL ? 4 : 1;
    rr_fill(data, dt, n, lo, hi, seed);
  }
}

void rr_fill_by_dtype(rr_buffers *b, const sk_program *p, uint64_t seed) {
  for (size_t i = 0; i < b->n_inputs; i++) {
    sk_dtype dt = p->inputs[i].desc.dtype;
    rr_fill_dtype_range(b->inputs[i].data, dt, b->inputs[i].bytes / sk_dtype_size(dt), &seed);
  }
}

void rr_free(rr_buffers *b) {
  for (size_t i = 0; b->inputs && i < b->n_inputs; i++) free(b->inputs[i].data);
  for (size_t i = 0; b->outputs && i < b->n_outputs; i++) free(b->outputs[i].data);
  free(b->inputs);
  free(b->outputs);
  memset(b, 0, sizeof *b);
}

/* Evaluates the program's nodes with their references into per-value
 * buffers; returns them (values[v] malloc'd; inputs point at b's data). */
static void **reference_values(sk_program *p, rr_buffers *b) {
  void **values = calloc(p->n_values, sizeof(void *));
  for (size_t i = 0; i < p->n_inputs; i++) values[p->inputs[i].value] = b->inputs[i].data;
  for (size_t v = 0; v < p->n_values; v++) /* constants: the program's data (a copy, freed below) */
    if (p->root[v] == v && p->storage[v].kind == SK_STORE_CONSTANT) {
      const sk__program_constant *c = &p->constants[p->storage[v].index];
      values[v] = malloc(c->bytes + 1);
      if (c->bytes) memcpy(values[v], c->data, c->bytes);
    }
  for (size_t k = 0; k < p->n_nodes; k++) {
    sk__exec_node *n = &p->nodes[k];
    sk__node_io io = n->io;
    sk__tensor *ins = calloc(n->n_in_tensors + 1, sizeof(sk__tensor));
    sk__tensor *outs = calloc(n->io.n_out, sizeof(sk__tensor));
    for (size_t j = 0; j < n->n_in_tensors; j++) {
      ins[j] = n->in_tensors[j];
      ins[j].data = values[n->in_values[j]];
    }
    for (int s = 0; s < SK__MAX_SLOTS; s++) io.in[s].tensors = ins + (n->io.in[s].tensors - n->in_tensors);
    for (size_t j = 0; j < n->io.n_out; j++) {
      outs[j] = n->io.out[j];
      /* poisoned unlike the program's outputs (rr_alloc's zeros): an op
       * that leaves an output unwritten cannot match itself */
      outs[j].data = malloc(sk__tensor_bytes(&outs[j]) + 1);
      if (outs[j].data) memset(outs[j].data, 0xA5, sk__tensor_bytes(&outs[j]) + 1);
      values[n->out_values[j]] = outs[j].data;
    }
    io.out = outs;
    n->def->reference(&io);
    free(ins);
    free(outs);
  }
  return values;
}

static void report_difference(const char *name, sk_dtype dt, const void *got, const void *want, size_t bytes) {
  size_t es = sk_dtype_size(dt);
  for (size_t i = 0; i < bytes / es; i++)
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
      double g = dt == SK_INT8 ? ((const int8_t *)got)[i] : dt == SK_INT32 ? ((const int32_t *)got)[i]
               : dt == SK_INT64 ? (double)((const int64_t *)got)[i] : sk__load_f32(got, dt, i);
      double w = dt == SK_INT8 ? ((const int8_t *)want)[i] : dt == SK_INT32 ? ((const int32_t *)want)[i]
               : dt == SK_INT64 ? (double)((const int64_t *)want)[i] : sk__load_f32(want, dt, i);
      fprintf(stderr, "output %s differs at element %zu: got %.9g, reference %.9g\n", name, i, g, w);
      return;
    }
}

int rr_check_program(sk_program *p, sk_team *team, rr_buffers *b) {
  sk_status st = sk_program_run(p, team, b->inputs, b->n_inputs, b->outputs, b->n_outputs);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "run failed: %s: %s\n", sk_status_string(st), sk_last_error());
    return (int)b->n_outputs + 1;
  }
  void **values = reference_values(p, b);
  int bad = 0;
  for (size_t j = 0; j < p->n_outputs; j++) {
    const void *want = values[p->outputs[j].value];
    if (memcmp(b->outputs[j].data, want, b->outputs[j].bytes) != 0) {
      bad++;
      report_difference(p->outputs[j].name, p->outputs[j].desc.dtype, b->outputs[j].data, want, b->outputs[j].bytes);
    }
  }
  /* Free reference buffers (inputs' entries are the caller's). */
  for (size_t v = 0; v < p->n_values; v++) {
    bool is_input = false;
    for (size_t i = 0; i < p->n_inputs; i++) is_input |= p->inputs[i].value == v;
    if (!is_input) free(values[v]);
  }
  free(values);
  return bad;
}

int rr_fused_vs_eager(const sk_graph *g, sk_team *team, sk_executor executor, const char *options, uint64_t seed) {
  sk_compile_config fc = {.struct_size = sizeof fc, .team = team, .executor = executor, .default_options = options};
  sk_compile_config ec = {.struct_size = sizeof ec, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *fused = NULL, *eager = NULL;
  int bad = 0;
  if (sk_compile(g, &fc, &fused) != SK_STATUS_OK || sk_compile(g, &ec, &eager) != SK_STATUS_OK) {
    fprintf(stderr, "compile failed (options \"%s\"): %s\n", options ? options : "", sk_last_error());
    sk_program_destroy(fused);
    return 1;
  }
  rr_buffers a = {0}, b = {0};
  if (!rr_alloc(fused, &a, -1, 1, seed) || !rr_alloc(eager, &b, -1, 1, seed)) bad++;
  else bad += rr_check_program(fused, team, &a);
  for (int rep = 0; rep < 3 && !bad; rep++) { /* repeated runs: flags carry over launches */
    if (sk_program_run(fused, team, a.inputs, a.n_inputs, a.outputs, a.n_outputs) != SK_STATUS_OK ||
        sk_program_run(eager, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs) != SK_STATUS_OK) {
      fprintf(stderr, "run failed: %s\n", sk_last_error());
      bad++;
      break;
    }
    for (size_t o = 0; o < a.n_outputs; o++)
      if (memcmp(a.outputs[o].data, b.outputs[o].data, a.outputs[o].bytes) != 0) {
        bad++;
        fprintf(stderr, "output %s differs from eager (options \"%s\", %d cores)\n", a.outputs[o].name,
                options ? options : "", team ? sk_team_num_cores(team) : 1);
      }
  }
  rr_free(&a);
  rr_free(&b);
  sk_program_destroy(fused);
  sk_program_destroy(eager);
  return bad;
}
