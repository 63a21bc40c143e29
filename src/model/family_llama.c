/* The dense Llama-like decoders: Llama, Mistral, Qwen2, Qwen3. Every layer
 * is attention + a SwiGLU MLP (gate_proj, up_proj, down_proj); they differ
 * in biases (Llama's attention_bias on q/k/v/o, Qwen2's on q/k/v), Qwen3's
 * per-head q/k RMS norm and Mistral's sliding window. */
#include <string.h>

#include "core/error.h"
#include "model/family.h"

static sk_status window(const cJSON *c, sk__decoder *d) {
  bool use = true;
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "use_sliding_window", strcmp(d->family, "mistral") == 0, &use));
  if (!use) return SK_STATUS_OK;
  if (strcmp(d->family, "mistral") != 0)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: use_sliding_window = true: not supported for %s (its "
                    "window covers only the layers from max_window_layers on)", d->family);
  return sk__cfg_int(c, "sliding_window", 0, 1, (int64_t)1 << 40, &d->sliding_window);
}

static sk_status describe(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__describe_llama_like(c, d));
  if (d->mlp_inter <= 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: intermediate_size: missing (an integer >= 1 is required)");
  const bool qwen2 = strcmp(d->family, "qwen2") == 0;
  d->qk_norm = strcmp(d->family, "qwen3") == 0;
  d->o_bias = d->qkv_bias && !qwen2;
  d->qkv_bias = d->qkv_bias || qwen2;
  bool mlp_bias;
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "mlp_bias", false, &mlp_bias));
  if (mlp_bias) return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: mlp_bias = true: not supported");
  return window(c, d);
}

const sk__family sk__family_llama = {"llama mistral qwen2 qwen3", describe};
