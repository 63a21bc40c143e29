/* Qwen3-MoE and Qwen2-MoE: Qwen3's attention (per-head q/k RMS norm) or
 * Qwen2's (q/k/v biases), then per layer a MoE block (softmax router
 * `mlp.gate`, top-k, norm_topk_prob, experts of SwiGLU; Qwen2-MoE adds a
 * shared expert `mlp.shared_expert` whose output is scaled by
 * sigmoid(x @ mlp.shared_expert_gate^T)) or, for mlp_only_layers and
 * layers off decoder_sparse_step, the dense MLP. */
#include <string.h>

#include "core/error.h"
#include "model/family.h"

static sk_status describe(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__describe_llama_like(c, d));
  SK_RETURN_IF_ERROR(sk__describe_moe(c, d, "moe_intermediate_size", false));
  const bool qwen2 = strcmp(d->family, "qwen2_moe") == 0;
  d->qk_norm = !qwen2;
  if (qwen2) {
    d->qkv_bias = true;
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "shared_expert_intermediate_size", 0, 0, (int64_t)1 << 24, &d->moe.shared_inter));
    d->moe.shared_prefix = "shared_expert";
    d->moe.shared_gate = true;
  }
  int64_t step;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "decoder_sparse_step", 1, 1, SK__MODEL_MAX_LAYERS, &step));
  for (int64_t i = 0; i < d->layers; i++) d->moe_layer[i] = (i + 1) % step == 0;
  const cJSON *dense = cJSON_GetObjectItemCaseSensitive(c, "mlp_only_layers");
  if (dense && !cJSON_IsNull(dense)) {
    if (!cJSON_IsArray(dense))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: mlp_only_layers: expected a list of layer indices");
    const cJSON *item;
    cJSON_ArrayForEach(item, dense) {
      const double v = item->valuedouble;
      if (!cJSON_IsNumber(item) || v != (double)(int64_t)v || v < 0 || v >= (double)d->layers)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: mlp_only_layers: expected layer indices in [0, %lld)",
                        (long long)d->layers);
      d->moe_layer[(int64_t)v] = false;
    }
  }
  bool any_dense = false;
  for (int64_t i = 0; i < d->layers; i++) any_dense |= !d->moe_layer[i];
  if (any_dense && d->mlp_inter <= 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: intermediate_size: missing (the dense layers need it)");
  bool window = false;
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "use_sliding_window", false, &window));
  if (window)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: use_sliding_window = true: not supported for %s", d->family);
  return SK_STATUS_OK;
}

const sk__family sk__family_qwen3_moe = {"qwen3_moe qwen2_moe", describe};
