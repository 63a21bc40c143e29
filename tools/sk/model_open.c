/*
 * model_open.c — what `sk run model` and `sk bench model` share: a
 * checkpoint directory opened (superkernel_checkpoint.h), a team, the
 * model made on it, and their errors with the exit status they mean.
 */
#include <string.h>

#include "superkernel_checkpoint.h"
#include "sk.h"

/* Invalid input (the files, the config, the weights, the user's ids or
 * options) or a failure of the run itself. */
static int exit_for(sk_status st) {
  switch (st) {
    case SK_STATUS_INVALID_ARGUMENT:
    case SK_STATUS_INVALID_SHAPE:
    case SK_STATUS_INVALID_DTYPE:
    case SK_STATUS_INVALID_ATTRIBUTE:
    case SK_STATUS_NOT_FOUND:
    case SK_STATUS_UNSUPPORTED: return SK_EXIT_USAGE;
    default: return SK_EXIT_FAIL;
  }
}

int cli_model_open(const char *cmd, const char *dir, const cli_model_options *o, int64_t dflt_context, cli_model *m) {
  memset(m, 0, sizeof *m);
  m->dir = dir;
  char msg[2048];
  sk_status st = SK_STATUS_OK;
  if (o->quantize && strcmp(o->quantize, "w8a8") != 0) {
    fprintf(stderr, "sk %s: --quantize %s: expected w8a8\n", cmd, o->quantize);
    return SK_EXIT_USAGE;
  }
  if (o->options && sk_options_validate(o->options) != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: invalid --options: %s\n", cmd, sk_last_error());
    return SK_EXIT_USAGE;
  }
  st = sk_checkpoint_open(dir, &m->files);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: %s\n", cmd, sk_last_error());
    return exit_for(st);
  }
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = (int)o->threads};
  st = sk_team_create(&tc, &m->team);
  if (st != SK_STATUS_OK) {
    m->team = NULL;
    fprintf(stderr, "sk %s: creating a team of %ld cores: %s: %s\n", cmd, o->threads, sk_status_string(st),
            sk_last_error());
    cli_model_close(m);
    return exit_for(st);
  }
  sk_model_config cfg = {.struct_size = sizeof cfg, .max_tokens = o->max_tokens,
                         .max_context = o->max_context ? o->max_context : dflt_context, .team = m->team,
                         .executor = o->exec.given ? o->exec.executor : SK_EXECUTOR_DEFAULT, .options = o->options,
                         .quantize = o->quantize};
  st = sk_model_create_from_checkpoint(m->files, &cfg, &m->model);
  snprintf(msg, sizeof msg, "%s", st == SK_STATUS_OK ? "" : sk_last_error());
  sk_model_info info;
  if (st == SK_STATUS_OK && sk_model_get_info(m->model, &info) != SK_STATUS_OK) {
    st = SK_STATUS_INTERNAL;
    snprintf(msg, sizeof msg, "%s", sk_last_error());
  }
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: %s: %s\n", cmd, sk_status_string(st), msg);
    cli_model_close(m);
    return exit_for(st);
  }
  m->family = info.family, m->about = info.about, m->dtype = info.dtype, m->w8a8 = o->quantize != NULL;
  m->vocab = info.vocab, m->max_context = info.max_context;
  m->experts = info.experts, m->experts_per_token = info.experts_per_token;
  m->weight_bytes = info.weight_bytes, m->cache_bytes = info.cache_bytes;
  return SK_EXIT_OK;
}

void cli_model_close(cli_model *m) {
  sk_model_destroy(m->model); /* before the files: it borrows their mapping */
  sk_checkpoint_close(m->files);
  sk_team_destroy(m->team);
  m->model = NULL, m->files = NULL, m->team = NULL;
}

int cli_model_failed(const char *cmd, const cli_model *m, const char *what, sk_status st) {
  fprintf(stderr, "sk %s: %s (%s): %s: %s\n", cmd, what, m->dir, sk_status_string(st), sk_last_error());
  return exit_for(st);
}
