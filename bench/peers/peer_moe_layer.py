"""PyTorch (eager, optionally Inductor) on transformers' own MoE block, and
ggml as llama.cpp builds the layer, beside sk's super kernel, on the same
checkpoint weights and the same x, outputs compared. Optional: needs
transformers (python/requirements-test.txt); the ggml driver is built by
bench/peers/build_ggml.sh.

    # a one-layer checkpoint of a preset's size, random weights (save_pretrained)
    python3 bench/peers/peer_moe_layer.py make DIR [--preset qwen3-30b-a3b] [--experts N] [--dtype bf16]
    # for each T: sk run moe-layer:tT --weights DIR (jit) and the module of layer 0
    python3 bench/peers/peer_moe_layer.py run DIR [--sk build/bin/sk] [--threads 2] [--tokens 1,4,16]
                                                  [--iters 15] [--inductor] [--int8]
                                                  [--ggml PATH [--ggml-types bf16,q8_0]]

Presets (their config.json shapes; deepseek-v3 with --experts, default 32,
so it fits in memory): qwen3-30b-a3b, deepseek-v2-lite, deepseek-v3. The
weights are drawn N(0, 1/fan_in), so activations stay of unit size.

`run` writes x (bf16, uniform in [-1, 1)) to a scratch directory, runs
`sk run moe-layer:tT --weights DIR --inputs SCRATCH --executor jit` (the
weights stay constants: sk's own default; with --int8 also its w8a8 layer,
quantized on loading) and, with --ggml, the ggml driver on the same x;
then times the transformers module (x + block(x), as sk's layer adds the
residual) with torch.set_num_threads(--threads), median of --iters calls
after 3 warm-up calls (--experts-impl picks transformers' experts
implementation: eager loops over the experts hit, grouped_mm is torch's
grouped GEMM, transformers' default where torch has it). Printed per T:
the experts hit, each engine's median and its ratio to sk, and
d = max |y - y_ref| / max |y_ref| against the module run in fp32 (each
engine rounds its own bf16 intermediates; transformers' bf16 router also
rounds its logits, so its picks can differ at larger T), with whether
sk's routing agrees with the fp32 router.
"""

import argparse
import copy
import os
import re
import subprocess
import tempfile

import numpy as np
import torch

from common import time_each

PRESETS = {
    "qwen3-30b-a3b": ("qwen3_moe", dict(hidden_size=2048, num_experts=128, num_experts_per_tok=8,
                                        moe_intermediate_size=768, norm_topk_prob=True, intermediate_size=6144,
                                        num_attention_heads=32, num_key_value_heads=4, head_dim=128)),
    "deepseek-v2-lite": ("deepseek_v2", dict(hidden_size=2048, n_routed_experts=64, n_shared_experts=2,
                                             num_experts_per_tok=6, moe_intermediate_size=1408,
                                             intermediate_size=10944, num_attention_heads=16, kv_lora_rank=512,
                                             q_lora_rank=None, qk_rope_head_dim=64, qk_nope_head_dim=128,
                                             v_head_dim=128, first_k_dense_replace=0)),
    "deepseek-v3": ("deepseek_v3", dict(hidden_size=7168, n_routed_experts=32, n_shared_experts=1,
                                        num_experts_per_tok=8, moe_intermediate_size=2048, n_group=8, topk_group=4,
                                        routed_scaling_factor=2.5, intermediate_size=18432, num_attention_heads=8,
                                        kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64,
                                        qk_nope_head_dim=128, v_head_dim=128, first_k_dense_replace=0)),
}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make(a):
    import transformers
    family, kw = PRESETS[a.preset]
    kw = dict(kw, num_hidden_layers=1, vocab_size=32)
    if a.experts:
        kw["num_experts" if family == "qwen3_moe" else "n_routed_experts"] = a.experts
    names = {"qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM"),
             "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM"),
             "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM")}[family]
    torch.manual_seed(0)
    model = getattr(transformers, names[1])(getattr(transformers, names[0])(**kw))
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if "e_score_correction_bias" in name:
                p.copy_(torch.randn_like(p) * 0.1)
            elif ".mlp." in name:
                p.normal_(0.0, p.shape[-1] ** -0.5)
    model.to(DTYPES[a.dtype]).save_pretrained(a.dir)
    print(f"{a.dir}: {a.preset} ({family}), one layer, {a.dtype}")


def median_ms(fn, iters):
    """Median of iters calls after 3 warm-up calls (common.time_each), in ms."""
    return time_each({"fn": fn}, iters, 3)["fn"]["median_us"] / 1e3


def write_npy(path, x):
    """fp16 as '<f2'; bf16, which NumPy lacks, as its bits '<u2' (sk's convention)."""
    np.save(path, x.numpy() if x.dtype == torch.float16 else x.contiguous().view(torch.int16).numpy().view(np.uint16))


def sk_layer(a, t, scratch, suffix=""):
    """(median ms, y as float, expert_ends) of sk run moe-layer:tT[suffix] on scratch/moe_x.npy."""
    out = os.path.join(scratch, "out" + suffix.replace(":", "_"))
    r = subprocess.run([a.sk, "run", f"moe-layer:t{t}{suffix}", "--weights", a.dir, "--layer", str(a.layer), "--executor",
                        "jit", "--threads", str(a.threads), "--iters", str(a.iters + 1), "--inputs", scratch,
                        "--save-outputs", out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"sk run failed:\n{r.stderr}")
    ms = float(re.search(r"median ([0-9.]+) us", r.stdout).group(1)) / 1e3
    y = np.load(os.path.join(out, "y.npy"))
    y = torch.from_numpy(y.view(np.int16).copy()).view(torch.bfloat16).float() if y.dtype == np.uint16 else \
        torch.from_numpy(y.astype(np.float32))
    return ms, y, torch.from_numpy(np.load(os.path.join(out, "expert_ends.npy")))


def ggml_layer(a, t, scratch, x, kind):
    """(median ms, y) of the ggml driver with `kind` weights on x."""
    xf, yf = os.path.join(scratch, "x.f32"), os.path.join(scratch, "y.f32")
    x.float().numpy().tofile(xf)
    r = subprocess.run([a.ggml, a.dir, str(a.layer), kind, str(a.threads), str(a.iters), xf, yf], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"ggml_moe_layer failed:\n{r.stderr}")
    ms = float(re.search(r"median ([0-9.]+) us", r.stdout).group(1)) / 1e3
    return ms, torch.from_numpy(np.fromfile(yf, dtype=np.float32).reshape(t, -1))


def run(a):
    import transformers
    torch.set_num_threads(a.threads)
    extra = {"experts_implementation": a.experts_impl} if a.experts_impl else {}
    model = transformers.AutoModelForCausalLM.from_pretrained(a.dir, dtype="auto", **extra).eval()
    block = model.model.layers[a.layer].mlp
    dtype = model.dtype
    hidden = model.config.hidden_size
    compiled = torch.compile(block) if a.inductor else None
    # The judge of every engine's output: the same module in fp32 (a bf16
    # model computes its router in bf16, whose rounding flips near-tied
    # picks at larger T), so d says how far each engine is from the maths.
    reference = copy.deepcopy(block).float()
    ggml_kinds = [k for k in a.ggml_types.split(",") if k] if a.ggml else []
    print(f"checkpoint {a.dir} ({model.config.model_type}, {dtype}), {a.threads} threads, torch {torch.__version__}, "
          f"transformers {transformers.__version__}, experts_implementation {model.config._experts_implementation}")
    print("times in ms (medians); each peer's ratio to sk's jit of the same weight type (> 1: sk is faster); "
          "d = max |y - y_ref| / max |y_ref|, y_ref the module in fp32")
    for t in (int(v) for v in a.tokens.split(",")):
        torch.manual_seed(t)
        x = (torch.rand(t, hidden) * 2 - 1).to(dtype)
        cols = []
        with tempfile.TemporaryDirectory() as scratch:
            write_npy(os.path.join(scratch, "moe_x.npy"), x)
            sk_ms, y_sk, ends = sk_layer(a, t, scratch)
            sk8 = sk_layer(a, t, scratch, ":int8") if a.int8 else None
            ggml = {k: ggml_layer(a, t, scratch, x, k) for k in ggml_kinds}
        with torch.no_grad():
            y_torch = (x[None] + block(x[None]))[0].float()
            y_ref = x.float() + reference(x.float()[None])[0]
            _, _, idx = reference.gate(x.float())
            eager_ms = median_ms(lambda: block(x[None]), a.iters)
            ind_ms = median_ms(lambda: compiled(x[None]), a.iters) if compiled is not None else None
        counts = torch.bincount(idx.flatten(), minlength=ends.numel())

        def d(y):
            return ((y - y_ref).abs().max() / y_ref.abs().max()).item()

        cols.append(f"sk jit {sk_ms:.3f} (d {d(y_sk):.1e})")
        if sk8:
            cols.append(f"sk w8a8 {sk8[0]:.3f} (d {d(sk8[1]):.1e})")
        cols.append(f"torch eager {eager_ms:.3f} ({eager_ms / sk_ms:.2f}x, d {d(y_torch):.1e})")
        if ind_ms is not None:
            cols.append(f"inductor {ind_ms:.3f} ({ind_ms / sk_ms:.2f}x)")
        for k, (ms, y) in ggml.items():
            ref = sk8[0] if (k == "q8_0" and sk8) else sk_ms
            cols.append(f"ggml {k} {ms:.3f} ({ms / ref:.2f}x, d {d(y):.1e})")
        same = torch.equal(torch.cumsum(counts, 0), ends)
        print(f"T={t:<4} hit {int((counts > 0).sum()):>3}  " + "  ".join(cols) +
              f"  routing {'same' if same else 'DIFFERS'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="write a one-layer checkpoint of a preset's size")
    mk.add_argument("dir")
    mk.add_argument("--preset", choices=sorted(PRESETS), default="qwen3-30b-a3b")
    mk.add_argument("--experts", type=int, default=0, help="routed experts (default: the preset's; deepseek-v3 32)")
    mk.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    rn = sub.add_parser("run", help="time sk and PyTorch on the checkpoint")
    rn.add_argument("dir")
    rn.add_argument("--sk", default="build/bin/sk")
    rn.add_argument("--layer", type=int, default=0, help="the MoE layer (make's checkpoints: 0)")
    rn.add_argument("--threads", type=int, default=2)
    rn.add_argument("--tokens", default="1,4,16")
    rn.add_argument("--iters", type=int, default=15)
    rn.add_argument("--inductor", action="store_true", help="also torch.compile(block) (Inductor)")
    rn.add_argument("--int8", action="store_true", help="also sk's w8a8 layer (moe-layer:tT:int8, quantized on loading)")
    rn.add_argument("--ggml", help="the ggml driver (bench/peers/build_ggml.sh prints its path)")
    rn.add_argument("--ggml-types", default="bf16,q8_0", help="its weight types: f16, bf16, q8_0 (ratio: q8_0 to sk "
                    "w8a8 with --int8, else to sk's jit)")
    rn.add_argument("--experts-impl", choices=("eager", "grouped_mm", "batched_mm"),
                    help="transformers' experts_implementation (default: its own choice)")
    a = ap.parse_args()
    make(a) if a.cmd == "make" else run(a)


if __name__ == "__main__":
    main()
