/*
 * checkpoint.h — one MoE layer of a Hugging Face checkpoint directory
 * (config.json + *.safetensors) as the weights of the moe-layer model
 * (moe_layer.c): `sk run moe-layer --weights DIR --layer N`.
 *
 * Supported (config.json's model_type), with the tensors read from layer N
 * (P = "model.layers.N.mlp."):
 *   qwen3_moe    softmax gating (norm_topk_prob: renorm);
 *                P gate.weight, P experts.J.{gate,up,down}_proj.weight
 *   deepseek_v3  sigmoid gating over n_group groups (top-2 sum per group,
 *                topk_group kept), e_score_correction_bias, norm_topk_prob,
 *                routed_scaling_factor; n_shared_experts shared experts;
 *                P gate.weight, P gate.e_score_correction_bias,
 *                P experts.J.*, P shared_experts.{gate,up,down}_proj.weight
 *   deepseek_v2  softmax, topk_method "greedy", routed_scaling_factor 1,
 *                no top-k renormalisation (as transformers' module); shared
 *                experts as deepseek_v3
 * Experts stored fused (P experts.gate_up_proj [E, 2I, H] and
 * P experts.down_proj [E, H, I], transformers' in-memory layout) are read
 * too. Expert and shared weights may be fp32, fp16 or bf16; the gate and
 * bias any of them.
 *
 * What is converted (the layout our ops take, done once when filling):
 * the experts' gate/up pairs become one [H, 2I] matrix each (gate first,
 * as swiglu splits), down_proj [H, I] becomes [I, H], the gate widens to
 * fp32; dtypes convert exactly or round to nearest even; int8 (w8a8) rounds
 * each output channel to int8 with scale max|w| / 127. Only layer N's
 * tensors are read from the mapping.
 */
#ifndef SK_TOOLS_CHECKPOINT_H
#define SK_TOOLS_CHECKPOINT_H

#include "models.h"
#include "moe_layer.h"

typedef struct skm_checkpoint skm_checkpoint;

/* Opens DIR: reads DIR/config.json, maps every *.safetensors file, and
 * checks that layer `layer` (-1: the first MoE layer) is a MoE layer of a
 * supported config whose tensors are all there with the config's shapes.
 * Errors name what is wrong: no such directory or file, malformed JSON or
 * safetensors, an unsupported config (which key, which value), a dense
 * layer, a missing tensor, a wrong shape or dtype. */
sk_status skm_checkpoint_open(const char *dir, int layer, skm_checkpoint **out, char *msg, size_t msg_size);
void skm_checkpoint_close(skm_checkpoint *ck);

/* The layer as config.json describes it (t 16, dtype: the experts' when
 * fp16 or bf16, else bf16); preset "checkpoint", about a one-line summary. */
const skm_moe_layer *skm_checkpoint_layer(const skm_checkpoint *ck);

/* Writes the layer's weights, converted for m (its dtypes and its first
 * m->experts experts; built from skm_checkpoint_layer), into the same-named
 * tensors of values (skm_values of that model); moe_x is left as it is. */
sk_status skm_checkpoint_fill(const skm_checkpoint *ck, const skm_moe_layer *m, skm_io *values, char *msg,
                              size_t msg_size);

#endif
