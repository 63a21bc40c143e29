"""A bf16 MoE checkpoint's experts in compressed-tensors' W8A8 int8, for
vLLM (its CPUExpertsInt8: the plugin's int8 path) and the plugin's tests:

    python make_w8a8.py SRC_DIR DST_DIR [--dequantized DIR]

Each routed expert's gate/up/down weight becomes int8 with one fp32 scale
an output channel (symmetric: amax / 127; compressed-tensors'
"int-quantized" format, strategy "channel"), and config.json gets the
quantization_config that asks for int8 activations per token at run time.
Everything else (attention, norms, the router, the LM head) stays as it
was. --dequantized also writes the same model with those int8 weights
turned back into bf16 (scale * q): a bf16 model of the same weights, the
reference of the int8 one's tokens. Tensors are read one at a time from
the source's mapping."""

import argparse
import json
import os
import shutil

import torch
from safetensors import safe_open
from safetensors.torch import save_file

# the names of a routed expert's weights in transformers' per-expert layout
# (Qwen2/3-MoE, OLMoE: mlp.experts.N.gate_proj; Mixtral: block_sparse_moe.experts.N.w1)
_EXPERT_MARK = ".experts."
_TARGETS = r"re:.*\.experts\.\d+\..*"


def _is_expert_weight(key):
    return _EXPERT_MARK in key and key.endswith(".weight") and ".shared_expert" not in key


def quantize(w):
    """(int8 q [out, in], fp32 scale [out, 1]) of w [out, in]."""
    wf = w.float()
    scale = wf.abs().amax(1, keepdim=True).clamp_min(1e-8) / 127
    return torch.round(wf / scale).clamp_(-127, 127).to(torch.int8), scale


def convert(src, dst, dequantized=None):
    """Writes dst (and dequantized, when given) from the checkpoint in src."""
    outs = [d for d in (dst, dequantized) if d]
    for d in outs:
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(src):
            if not name.endswith(".safetensors") and os.path.isfile(os.path.join(src, name)):
                shutil.copyfile(os.path.join(src, name), os.path.join(d, name))
    count = 0
    for name in sorted(n for n in os.listdir(src) if n.endswith(".safetensors")):
        int8, plain = {}, {}
        with safe_open(os.path.join(src, name), "pt") as f:
            for key in f.keys():
                w = f.get_tensor(key)
                if _is_expert_weight(key) and w.dim() == 2:
                    q, scale = quantize(w)
                    int8[key], int8[key + "_scale"] = q, scale
                    if dequantized:
                        plain[key] = (q.float() * scale).to(w.dtype)
                    count += 1
                else:
                    int8[key] = w
                    if dequantized:
                        plain[key] = w
        save_file(int8, os.path.join(dst, name), metadata={"format": "pt"})
        if dequantized:
            save_file(plain, os.path.join(dequantized, name), metadata={"format": "pt"})
    if count == 0:
        raise SystemExit(f"make_w8a8.py: no expert weights ('{_EXPERT_MARK}N.*.weight') in {src}")
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(index):  # the weight map gains the scales, in the shard of their weight
        with open(index) as f:
            idx = json.load(f)
        idx["weight_map"].update({k + "_scale": v for k, v in list(idx["weight_map"].items()) if _is_expert_weight(k)})
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump(idx, f, indent=2)
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    args = {"num_bits": 8, "type": "int", "symmetric": True}
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "int-quantized", "ignore": [],
        "config_groups": {"experts": {"targets": [_TARGETS], "weights": dict(args, strategy="channel", dynamic=False),
                                      "input_activations": dict(args, strategy="token", dynamic=True)}}}
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--dequantized", help="also write the int8 weights dequantized to bf16 here")
    a = ap.parse_args()
    n = convert(a.src, a.dst, a.dequantized)
    print(f"{n} expert weights in int8 (W8A8, per channel): {a.dst}")


if __name__ == "__main__":
    main()
