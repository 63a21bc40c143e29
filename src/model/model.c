/* sk_model and sk_model_seq (superkernel_model.h): a decoder model's two
 * compiled programs, and per sequence its KV cache and run contexts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/family.h"
#include "model/model_graph.h"

/* llama.cpp's default batch: a 512-token prompt in one run, each MoE
 * expert's weights streamed once (in two runs of 256: twice, 10% slower). */
#define DEFAULT_MAX_TOKENS 512
#define DEFAULT_MAX_CONTEXT 4096

struct sk_model {
  sk__decoder d;
  char family[64];
  char about[256];
  int64_t max_tokens, max_context;
  size_t weight_bytes;
  sk_program *body, *head;
  size_t body_ids, body_positions, body_hidden, head_hidden, head_logits; /* io indices */
  sk__model_cache *caches; /* the body's cache inputs (name, one sequence's bytes, input index) */
  int n_caches;
  bool w8a8;
  sk__weight_store store;  /* the weights the model made (w8a8's int8 copies) */
};

struct sk_model_seq {
  sk_model *model;
  int64_t length;
  void **caches;        /* the model's n_caches */
  int32_t *ids, *positions;
  void *hidden;         /* [max_tokens, H] */
  sk_run_context *body, *head;
};

const char *sk_model_families(void) { return sk__family_names(); }

void sk_model_weight_error(const char *message) {
  /* the status is the callback's return; only the text is kept here */
  (void)sk__fail(SK_STATUS_INTERNAL, "%s", message ? message : "(no message)");
}

sk_status sk__model_describe(const char *json, sk__decoder *d, char *family, size_t family_size) {
  cJSON *c = cJSON_Parse(json);
  if (!c) {
    const char *at = cJSON_GetErrorPtr();
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: not valid JSON (at byte %lld)",
                    at ? (long long)(at - json) : -1LL);
  }
  sk_status st = SK_STATUS_OK;
  const char *type = NULL;
  if (!cJSON_IsObject(c)) st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: expected an object");
  if (st == SK_STATUS_OK) st = sk__cfg_string(c, "model_type", &type);
  const sk__family *f = type ? sk__family_find(type) : NULL;
  if (st == SK_STATUS_OK && !type)
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: model_type: missing (supported: %s)", sk__family_names());
  else if (st == SK_STATUS_OK && !f)
    st = sk__fail(SK_STATUS_UNSUPPORTED, "config.json: model_type = \"%s\": not supported (supported: %s)", type,
                  sk__family_names());
  if (st == SK_STATUS_OK) {
    snprintf(family, family_size, "%s", type);
    d->family = family;
    st = f->describe(c, d);
  }
  cJSON_Delete(c);
  return st;
}

static sk_status compile(sk__model_builder *b, const sk_model_config *cfg, void (*build)(sk__model_builder *),
                         sk_program **out) {
  build(b);
  sk_status st = b->st;
  if (st == SK_STATUS_OK) {
    sk_compile_config cc = {.struct_size = sizeof cc, .team = cfg->team, .executor = cfg->executor,
                            .profile = cfg->profile != 0, .numerics = cfg->numerics};
    st = sk_compile(b->g, &cc, out);
  }
  sk_graph_destroy(b->g);
  b->g = NULL;
  return st;
}

static sk_status index_io(sk_model *m) {
  SK_RETURN_IF_ERROR(sk_program_find(m->body, SK_IO_INPUT, "ids", &m->body_ids));
  SK_RETURN_IF_ERROR(sk_program_find(m->body, SK_IO_INPUT, "positions", &m->body_positions));
  SK_RETURN_IF_ERROR(sk_program_find(m->body, SK_IO_OUTPUT, "hidden", &m->body_hidden));
  SK_RETURN_IF_ERROR(sk_program_find(m->head, SK_IO_INPUT, "hidden", &m->head_hidden));
  SK_RETURN_IF_ERROR(sk_program_find(m->head, SK_IO_OUTPUT, "logits", &m->head_logits));
  for (int i = 0; i < m->n_caches; i++)
    SK_RETURN_IF_ERROR(sk_program_find(m->body, SK_IO_INPUT, m->caches[i].name, &m->caches[i].input));
  return SK_STATUS_OK;
}

static void about(sk_model *m) {
  const sk__decoder *d = &m->d;
  int n = snprintf(m->about, sizeof m->about, "%s: %lld layers, hidden %lld, %lld q / %lld kv heads of %lld",
                   m->family, (long long)d->layers, (long long)d->hidden, (long long)d->heads,
                   (long long)d->kv_heads, (long long)d->head_dim);
  if (d->moe.experts && n > 0 && (size_t)n < sizeof m->about)
    n += snprintf(m->about + n, sizeof m->about - n, ", %lld experts (top %lld, intermediate %lld)",
                  (long long)d->moe.experts, (long long)d->moe.top_k, (long long)d->moe.inter);
  if (n > 0 && (size_t)n < sizeof m->about)
    snprintf(m->about + n, sizeof m->about - n, ", vocab %lld, %s%s", (long long)d->vocab, sk_dtype_name(d->dtype),
             m->w8a8 ? ", w8a8" : "");
}

sk_status sk_model_create(const sk_model_config *cfg, sk_model **model_out) {
  sk__clear_error();
  if (!model_out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create: model_out is NULL");
  *model_out = NULL;
  if (!cfg || !cfg->config_json || !cfg->weight)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create: %s is NULL",
                    !cfg ? "cfg" : !cfg->config_json ? "cfg->config_json" : "cfg->weight");
  if (cfg->struct_size != 0 && cfg->struct_size != sizeof *cfg)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create: cfg->struct_size %zu: expected %zu or 0",
                    cfg->struct_size, sizeof *cfg);
  if (cfg->max_tokens < 0 || cfg->max_tokens > (1 << 16) || cfg->max_context < 0 || cfg->max_context > (1 << 24))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create: max_tokens %lld / max_context %lld: expected "
                    "0 (the default) or in [1, 65536] / [1, 16777216]", (long long)cfg->max_tokens,
                    (long long)cfg->max_context);
  const bool w8a8 = cfg->quantize && strcmp(cfg->quantize, "w8a8") == 0;
  if (cfg->quantize && *cfg->quantize && !w8a8)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create: quantize \"%s\": expected NULL, \"\" or \"w8a8\"",
                    cfg->quantize);
  sk_model *m = calloc(1, sizeof *m);
  if (!m) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_create: out of memory");
  m->w8a8 = w8a8;
  sk_status st = sk__model_describe(cfg->config_json, &m->d, m->family, sizeof m->family);
  if (st == SK_STATUS_OK) st = sk__model_weight_dtype(cfg->weight, cfg->weight_user, &m->d.dtype);
  if (st == SK_STATUS_OK) {
    m->max_tokens = cfg->max_tokens ? cfg->max_tokens : DEFAULT_MAX_TOKENS;
    m->max_context = cfg->max_context ? cfg->max_context
                     : m->d.max_positions < DEFAULT_MAX_CONTEXT ? m->d.max_positions : DEFAULT_MAX_CONTEXT;
    m->caches = calloc((size_t)(2 * m->d.layers), sizeof *m->caches);
    if (!m->caches) st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_create: out of memory");
    sk__model_builder b = {.d = &m->d, .weight = cfg->weight, .weight_user = cfg->weight_user,
                           .max_tokens = m->max_tokens, .max_context = m->max_context, .options = cfg->options,
                           .caches = m->caches, .w8a8 = w8a8, .store = &m->store};
    if (st == SK_STATUS_OK) st = compile(&b, cfg, sk__build_body, &m->body);
    m->n_caches = b.n_caches;
    if (st == SK_STATUS_OK) st = compile(&b, cfg, sk__build_head, &m->head);
    m->weight_bytes = b.weight_bytes;
    free(b.scratch);
    sk__weight_store_page_out(&m->store); /* packed now: one copy stays resident */
  }
  if (st == SK_STATUS_OK) st = index_io(m);
  if (st != SK_STATUS_OK) {
    sk_model_destroy(m);
    return st;
  }
  about(m);
  *model_out = m;
  return SK_STATUS_OK;
}

sk_status sk_model_write_profile(sk_model *m, const char *dir) {
  sk__clear_error();
  if (!m || !dir) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_write_profile: %s is NULL", m ? "dir" : "model");
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "sk_model_write_profile: %s: %s", dir, strerror(errno));
  const char *names[] = {"body", "head"};
  sk_program *programs[] = {m->body, m->head};
  for (int i = 0; i < 2; i++) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_write_profile: dir: too long");
    sk_status st = sk_program_write_profile(programs[i], path);
    if (st != SK_STATUS_OK) return sk__fail_within(st, "sk_model_write_profile: the %s", names[i]);
  }
  return SK_STATUS_OK;
}

void sk_model_destroy(sk_model *m) {
  if (!m) return;
  sk_program_destroy(m->body);
  sk_program_destroy(m->head);
  sk__weight_store_release(&m->store);
  free(m->caches);
  free(m);
}

sk_status sk_model_get_info(const sk_model *m, sk_model_info *info) {
  sk__clear_error();
  if (!m || !info) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_get_info: %s is NULL", m ? "info_out" : "model");
  const sk__decoder *d = &m->d;
  *info = (sk_model_info){.family = m->family, .about = m->about, .dtype = d->dtype, .vocab = d->vocab,
                          .hidden = d->hidden, .layers = d->layers, .max_tokens = m->max_tokens,
                          .max_context = m->max_context, .weight_bytes = m->weight_bytes,
                          .experts = d->moe.experts, .experts_per_token = d->moe.experts ? d->moe.top_k : 0};
  for (int i = 0; i < m->n_caches; i++) info->cache_bytes += m->caches[i].bytes;
  return SK_STATUS_OK;
}

/* ---- sequences ---- */

sk_status sk_model_seq_create(sk_model *m, sk_model_seq **seq_out) {
  sk__clear_error();
  if (!m || !seq_out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_seq_create: %s is NULL", m ? "seq_out" : "model");
  *seq_out = NULL;
  const sk__decoder *d = &m->d;
  sk_model_seq *s = calloc(1, sizeof *s);
  if (!s) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_seq_create: out of memory");
  s->model = m;
  s->caches = calloc((size_t)m->n_caches + 1, sizeof *s->caches);
  s->ids = sk__aligned_alloc((size_t)m->max_tokens * sizeof *s->ids);
  s->positions = sk__aligned_alloc((size_t)m->max_tokens * sizeof *s->positions);
  s->hidden = sk__aligned_alloc((size_t)(m->max_tokens * d->hidden) * sk_dtype_size(d->dtype));
  sk_status st = s->caches && s->ids && s->positions && s->hidden ? SK_STATUS_OK
                 : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_seq_create: out of memory");
  /* The cache streams through attention every step: huge pages where offered. */
  for (int i = 0; st == SK_STATUS_OK && i < m->n_caches; i++) {
    s->caches[i] = sk__alloc_streamed(m->caches[i].bytes);
    if (!s->caches[i])
      st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_seq_create: the KV cache %s (%zu bytes)", m->caches[i].name,
                    m->caches[i].bytes);
  }
  if (st == SK_STATUS_OK) st = sk_run_context_create(m->body, &s->body);
  if (st == SK_STATUS_OK) st = sk_run_context_create(m->head, &s->head);
  for (int i = 0; st == SK_STATUS_OK && i < m->n_caches; i++)
    st = sk_run_context_bind(s->body, SK_IO_INPUT, m->caches[i].input, s->caches[i], m->caches[i].bytes);
  if (st != SK_STATUS_OK) {
    sk_model_seq_destroy(s);
    return st;
  }
  *seq_out = s;
  return SK_STATUS_OK;
}

void sk_model_seq_destroy(sk_model_seq *s) {
  if (!s) return;
  sk_run_context_destroy(s->body);
  sk_run_context_destroy(s->head);
  for (int i = 0; s->caches && i < s->model->n_caches; i++) sk__aligned_free(s->caches[i]);
  free(s->caches);
  sk__aligned_free(s->ids);
  sk__aligned_free(s->positions);
  sk__aligned_free(s->hidden);
  free(s);
}

int64_t sk_model_seq_length(const sk_model_seq *s) { return s ? s->length : 0; }

sk_status sk_model_seq_truncate(sk_model_seq *s, int64_t length) {
  sk__clear_error();
  if (!s) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_seq_truncate: seq is NULL");
  if (length < 0 || length > s->length)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_seq_truncate: length %lld: expected 0..%lld (the sequence's)",
                    (long long)length, (long long)s->length);
  s->length = length; /* rows past it are written again before any token reads them */
  return SK_STATUS_OK;
}

/* One chunk of c tokens at ids; logits of its rows [from, c) to out. */
static sk_status run_chunk(sk_model_seq *s, sk_team *team, const int32_t *ids, int64_t c, int64_t from, float *out) {
  const sk_model *m = s->model;
  const size_t row = (size_t)m->d.hidden * sk_dtype_size(m->d.dtype);
  memcpy(s->ids, ids, (size_t)c * sizeof *ids);
  for (int64_t t = 0; t < c; t++) s->positions[t] = (int32_t)(s->length + t);
  SK_RETURN_IF_ERROR(sk_run_context_bind(s->body, SK_IO_INPUT, m->body_ids, s->ids, (size_t)c * sizeof *s->ids));
  SK_RETURN_IF_ERROR(
      sk_run_context_bind(s->body, SK_IO_INPUT, m->body_positions, s->positions, (size_t)c * sizeof *s->positions));
  SK_RETURN_IF_ERROR(sk_run_context_bind(s->body, SK_IO_OUTPUT, m->body_hidden, s->hidden, (size_t)c * row));
  SK_RETURN_IF_ERROR(sk_run_context_run(s->body, team));
  s->length += c;
  if (from >= c) return SK_STATUS_OK;
  SK_RETURN_IF_ERROR(sk_run_context_bind(s->head, SK_IO_INPUT, m->head_hidden, (char *)s->hidden + (size_t)from * row,
                          (size_t)(c - from) * row));
  SK_RETURN_IF_ERROR(sk_run_context_bind(s->head, SK_IO_OUTPUT, m->head_logits, out,
                          (size_t)((c - from) * m->d.vocab) * sizeof(float)));
  return sk_run_context_run(s->head, team);
}

sk_status sk_model_forward(sk_model_seq *s, sk_team *team, const int32_t *ids, int64_t n, float *logits,
                           int64_t n_logits) {
  sk__clear_error();
  if (!s || (!ids && n > 0) || n < 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_forward: %s", !s ? "seq is NULL" : n < 0 ? "n < 0" : "ids is NULL");
  const sk_model *m = s->model;
  if (n_logits < 0 || n_logits > n || (n_logits > 0 && !logits))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_forward: n_logits %lld: expected 0..%lld (n)%s",
                    (long long)n_logits, (long long)n, n_logits > 0 && !logits ? " with logits non-NULL" : "");
  if (n > m->max_context - s->length)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_forward: %lld tokens after %lld: past the sequence's "
                    "max_context %lld", (long long)n, (long long)s->length, (long long)m->max_context);
  for (int64_t t = 0; t < n; t++)
    if (ids[t] < 0 || ids[t] >= m->d.vocab)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_forward: ids[%lld] = %d: outside the vocabulary [0, %lld)",
                      (long long)t, ids[t], (long long)m->d.vocab);
  const int64_t first_logit = n - n_logits;
  for (int64_t t0 = 0; t0 < n; t0 += m->max_tokens) {
    const int64_t c = n - t0 < m->max_tokens ? n - t0 : m->max_tokens;
    const int64_t from = first_logit > t0 ? first_logit - t0 : 0;
    float *out = logits ? logits + (t0 + from - first_logit) * m->d.vocab : NULL;
    sk_status st = run_chunk(s, team, ids + t0, c, from < c ? from : c, out);
    if (st != SK_STATUS_OK) return st;
  }
  return SK_STATUS_OK;
}
