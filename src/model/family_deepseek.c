/* DeepSeek-V2 and -V3 (transformers' DeepseekV2/V3ForCausalLM): latent
 * attention (MLA: q_lora_rank, kv_lora_rank, qk_nope / qk_rope / v head
 * dims; the scores' scale qk_head_dim^-0.5 times YaRN's mscale^2), the
 * first first_k_dense_replace layers a dense MLP, the others MoE with
 * n_shared_experts shared experts. Routers, as transformers computes them
 * (logits from fp32 x and weight):
 *   deepseek_v2  softmax, topk_method "greedy", no renormalization, the
 *                weights times routed_scaling_factor
 *   deepseek_v3  sigmoid, + e_score_correction_bias for the choice, the
 *                best topk_group of n_group groups (by their top-2 sum),
 *                norm_topk_prob, routed_scaling_factor
 * RoPE on the rope dims: interleaved pairs (V2's complex rotation, V3's
 * rope_interleave) or, for V3 with rope_interleave false, rotate_half. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "model/family.h"

static sk_status mla(const cJSON *c, sk__decoder *d) {
  sk__mla *m = &d->mla_dims;
  d->mla = true;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "q_lora_rank", 0, 0, 1 << 16, &m->q_lora_rank));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "kv_lora_rank", SK__REQUIRED, 16, 1 << 16, &m->kv_lora_rank));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "qk_nope_head_dim", SK__REQUIRED, 1, 4096, &m->nope));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "qk_rope_head_dim", SK__REQUIRED, 16, 1024, &m->rope));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "v_head_dim", SK__REQUIRED, 1, 4096, &m->v_head_dim));
  if (m->kv_lora_rank % 16 || m->rope % 16)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: kv_lora_rank = %lld, qk_rope_head_dim = %lld: mla_attention "
                    "takes multiples of 16", (long long)m->kv_lora_rank, (long long)m->rope);
  d->kv_heads = 1, d->head_dim = m->rope; /* the rope dims are what rotary_embedding sees */
  /* transformers' yarn_apply_mscale: scaling * mscale^2 when YaRN gives mscale_all_dim */
  m->scale = 1.0 / sqrt((double)(m->nope + m->rope));
  const sk__rope *r = &d->rope;
  if (r->scaling_type != 0 && r->mscale_all_dim != 0.0 && r->factor > 1.0) {
    const double ms = 0.1 * r->mscale_all_dim * log(r->factor) + 1.0;
    m->scale *= ms * ms;
  }
  return SK_STATUS_OK;
}

static sk_status router(const cJSON *c, sk__decoder *d, bool v3) {
  sk__moe *m = &d->moe;
  m->router_fp32 = true;
  SK_RETURN_IF_ERROR(sk__cfg_float(c, "routed_scaling_factor", 1.0, 0.0, 1e6, &m->scaling));
  if (!v3) {
    SK_RETURN_IF_ERROR(sk__cfg_expect(c, "topk_method", "greedy"));
    m->renorm = false; /* V2's router does not renormalize, whatever norm_topk_prob says */
    return SK_STATUS_OK;
  }
  SK_RETURN_IF_ERROR(sk__cfg_expect(c, "topk_method", "noaux_tc"));
  SK_RETURN_IF_ERROR(sk__cfg_expect(c, "scoring_func", "sigmoid"));
  m->router = SK__ROUTER_SIGMOID_GROUPED;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "n_group", 1, 1, m->experts, &m->groups));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "topk_group", 1, 1, m->groups, &m->topk_group));
  if (m->experts % m->groups)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: n_group = %lld: expected a divisor of the %lld experts",
                    (long long)m->groups, (long long)m->experts);
  return SK_STATUS_OK;
}

static sk_status describe(const cJSON *c, sk__decoder *d) {
  const bool v3 = strcmp(d->family, "deepseek_v3") == 0;
  SK_RETURN_IF_ERROR(sk__describe_common(c, d));
  if (d->qkv_bias) return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: attention_bias = true: not supported");
  if (!d->moe_only) SK_RETURN_IF_ERROR(mla(c, d));
  bool interleave = true;
  if (v3) SK_RETURN_IF_ERROR(sk__cfg_bool(c, "rope_interleave", true, &interleave));
  d->rope.interleaved = interleave;
  /* the routed experts: n_routed_experts (transformers 4 and 5's DeepSeek configs) */
  int64_t experts = 0;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "n_routed_experts", 0, 0, 1 << 16, &experts));
  if (experts) {
    sk__moe *m = &d->moe;
    m->experts = experts;
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_experts_per_tok", SK__REQUIRED, 1, experts, &m->top_k));
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "moe_intermediate_size", SK__REQUIRED, 1, (int64_t)1 << 24, &m->inter));
    SK_RETURN_IF_ERROR(sk__cfg_bool(c, "norm_topk_prob", false, &m->renorm));
    int64_t shared, first_dense, freq;
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "n_shared_experts", 0, 0, 1 << 10, &shared));
    m->shared_inter = shared * m->inter;
    m->shared_prefix = "shared_experts";
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "first_k_dense_replace", 0, 0, d->layers, &first_dense));
    SK_RETURN_IF_ERROR(sk__cfg_int(c, "moe_layer_freq", 1, 1, d->layers, &freq));
    for (int64_t i = 0; i < d->layers; i++) d->moe_layer[i] = i >= first_dense && i % freq == 0;
    SK_RETURN_IF_ERROR(router(c, d, v3));
  }
  for (int64_t i = 0; i < d->layers; i++)
    if ((!d->moe.experts || !d->moe_layer[i]) && d->mlp_inter <= 0)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: intermediate_size: missing (the dense layers need it)");
  return SK_STATUS_OK;
}

const sk__family sk__family_deepseek = {"deepseek_v2 deepseek_v3", describe};
