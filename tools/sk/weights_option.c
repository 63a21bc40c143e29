/*
 * weights_option.c — `--weights DIR [--layer N]`, shared by the commands
 * that build a model (run, bench, profile, plan, source): one MoE layer of a Hugging Face
 * checkpoint directory becomes the moe-layer model (tools/models/checkpoint.h).
 * While it is open, "moe-layer" and "moe-layer:[tN][:bf16|fp16|int8][:eN]"
 * name that layer, and sessions fill its weights from the checkpoint.
 */
#include <string.h>

#include "checkpoint.h"
#include "sk.h"

/* One per process: a command opens at most one checkpoint. */
static skm_checkpoint *open_checkpoint;

int cli_weights_option(const char *cmd, const char *synopsis, int argc, char **argv, int *i, cli_weights *w) {
  const char *val;
  int r = cli_option_value(cmd, synopsis, argc, argv, i, "--weights", &val);
  if (r > 0 && !*val) return cli_usage_error(cmd, synopsis, "--weights: empty directory name"), -1;
  if (r > 0) w->dir = val;
  if (r != 0) return r;
  r = cli_option_value(cmd, synopsis, argc, argv, i, "--layer", &val);
  if (r > 0 && !cli_parse_int(cmd, synopsis, "--layer", val, 0, 1 << 20, &w->layer)) return -1;
  if (r > 0) w->has_layer = true;
  return r;
}

int cli_weights_open(const char *cmd, const char *synopsis, const cli_weights *w) {
  if (!w->dir) {
    if (w->has_layer) return cli_usage_error(cmd, synopsis, "--layer needs --weights DIR (the checkpoint)");
    return SK_EXIT_OK;
  }
  char msg[1024];
  sk_status st = skm_checkpoint_open(w->dir, w->has_layer ? (int)w->layer : -1, &open_checkpoint, msg, sizeof msg);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: --weights: %s\n", cmd, msg);
    return SK_EXIT_FAIL;
  }
  skm_moe_use_checkpoint(skm_checkpoint_layer(open_checkpoint));
  return SK_EXIT_OK;
}

void cli_weights_close(void) {
  skm_moe_use_checkpoint(NULL);
  skm_checkpoint_close(open_checkpoint);
  open_checkpoint = NULL;
}

/* Whether model names the open checkpoint's layer (into *m). */
static bool names_checkpoint(const char *model, skm_moe_layer *m) {
  return open_checkpoint && skm_moe_parse(model, m) && strcmp(m->preset, "checkpoint") == 0;
}

int cli_weights_check_model(const char *cmd, const char *synopsis, const char *model) {
  skm_moe_layer m;
  if (open_checkpoint && !names_checkpoint(model, &m))
    return cli_usage_error(cmd, synopsis,
                           "with --weights the model is the checkpoint's layer: moe-layer[:tN][:bf16|fp16|int8][:eN], "
                           "not '%s'",
                           model);
  return SK_EXIT_OK;
}

int cli_weights_fill(const char *cmd, const char *model, skm_io *values) {
  skm_moe_layer m;
  if (!names_checkpoint(model, &m)) return SK_EXIT_OK;
  char msg[1024];
  if (skm_checkpoint_fill(open_checkpoint, &m, values, msg, sizeof msg) == SK_STATUS_OK) return SK_EXIT_OK;
  fprintf(stderr, "sk %s: %s\n", cmd, msg);
  return SK_EXIT_FAIL;
}
