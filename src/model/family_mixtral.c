/* Mixtral: Llama's attention (and Mistral's optional sliding window), then
 * in every layer a MoE block whose router renormalizes the top-k softmax
 * weights (as transformers' MixtralSparseMoeBlock: softmax, top-k, divided
 * by their sum); the experts' intermediate size is intermediate_size. Its
 * checkpoint files name the MoE block's weights as Mistral published them. */
#include "core/error.h"
#include "model/family.h"

static sk_status describe(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__describe_llama_like(c, d));
  SK_RETURN_IF_ERROR(sk__describe_moe(c, d, "intermediate_size", true));
  d->moe.renorm = true; /* Mixtral's router always renormalizes; it has no norm_topk_prob */
  d->moe.weights_rounded = false; /* and keeps the weights in fp32 */
  /* Mistral's published checkpoints: block_sparse_moe.gate, experts.J.w1 (gate), w3 (up), w2 (down) */
  d->moe.checkpoint_block = "block_sparse_moe";
  d->moe.checkpoint_proj[0] = "w1", d->moe.checkpoint_proj[1] = "w3", d->moe.checkpoint_proj[2] = "w2";
  return sk__cfg_int(c, "sliding_window", 0, 1, (int64_t)1 << 40, &d->sliding_window);
}

const sk__family sk__family_mixtral = {"mixtral", describe};
