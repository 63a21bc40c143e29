/* OLMoE: attention whose q and k are RMS-normed over the whole projection
 * (q_norm [heads * head_dim], k_norm [kv_heads * head_dim], before the
 * split into heads: transformers' OlmoeAttention), then in every layer a
 * MoE block (softmax router, top-k, norm_topk_prob). clip_qkv is refused. */
#include "core/error.h"
#include "model/family.h"

static sk_status describe(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__describe_llama_like(c, d));
  SK_RETURN_IF_ERROR(sk__describe_moe(c, d, "intermediate_size", false));
  d->qk_norm_full = true;
  double clip;
  SK_RETURN_IF_ERROR(sk__cfg_float(c, "clip_qkv", 0.0, 0.0, 1e30, &clip));
  if (clip != 0.0)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: clip_qkv = %g: not supported (null only)", clip);
  return SK_STATUS_OK;
}

const sk__family sk__family_olmoe = {"olmoe", describe};
