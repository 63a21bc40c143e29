"""A MoE block under each numerics contract against PyTorch eager, in one
run: transformers' Qwen3-MoE sparse block (Qwen3-30B-A3B's layer: 128
experts, H 2048, I 768, top-8; random bf16 weights) run by torch eager
(its experts on grouped_mm) and by superkernel.optimize's per-block path
compiled with numerics="default" (the exact one-chain contract) and
"amx" (AMX-BF16's sums: its rate where the CPU has it; docs/ops.md,
"Numerics"). Medians of interleaved rounds (a warm call, then a batch
timed), the ratios, and how far each contract's output is from eager's.

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        .venv/bin/python bench/python/moe_numerics.py --threads 2 --tokens 128,512
"""

import argparse
import copy
import statistics
import time

import superkernel  # before torch: the library's OpenMP wait policy (superkernel/_omp.py)
import torch
import transformers
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

PAUSE_S = 0.05


class Holder(torch.nn.Module):
    """A module holding the block, for optimize's per-block path."""

    def __init__(self, block):
        super().__init__()
        self.mlp = block

    def forward(self, x):
        return self.mlp(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", default="128,512")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--experts", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = transformers.Qwen3MoeConfig(hidden_size=2048, moe_intermediate_size=768, num_experts=args.experts,
                                      num_experts_per_tok=8, norm_topk_prob=True)
    cfg._experts_implementation = "grouped_mm"  # what a model's forward dispatches to (transformers 5)
    torch.manual_seed(0)
    eager = Qwen3MoeSparseMoeBlock(cfg).to(torch.bfloat16).eval().requires_grad_(False)
    for name, p in eager.named_parameters():  # the module leaves its parameters uninitialized
        # a router of distinct logits: near-ties would let bf16 rounding pick other experts
        p.normal_(0.0, 1.0 if name.startswith("gate") else 0.02)
    engines = {"eager": eager}
    for numerics in ("default", "amx"):
        holder = Holder(copy.deepcopy(eager))
        report = superkernel.optimize(holder, whole_model=False, num_threads=args.threads, numerics=numerics)
        assert report.replaced, report
        engines[f"sk {numerics}"] = holder
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {args.threads} threads; "
          f"Qwen3-MoE block: {args.experts} experts, H 2048, I 768, top-8, bf16; medians of {args.rounds} rounds "
          f"of {args.batch} calls after a warm one")
    print(f"{'tokens':>6} " + " ".join(f"{name + ' ms':>14}" for name in engines) +
          f" {'amx/default':>12} {'eager/amx':>10} {'|amx-eager|':>12} {'|default-eager|':>16}")
    for t in (int(v) for v in args.tokens.split(",")):
        x = (torch.randn(1, t, 2048) * 0.5).to(torch.bfloat16)
        times = {name: [] for name in engines}
        outs = {}
        with torch.no_grad():
            for r in range(args.rounds + 1):  # round 0: warm-up
                for name, mod in engines.items():
                    time.sleep(PAUSE_S)  # torch's OpenMP workers stop spinning before the next engine
                    outs[name] = mod(x)
                    t0 = time.perf_counter()
                    for _ in range(args.batch):
                        mod(x)
                    if r:
                        times[name].append((time.perf_counter() - t0) / args.batch * 1e3)
        med = {name: statistics.median(v) for name, v in times.items()}
        ref = outs["eager"].float()
        scale = ref.abs().max().item()
        err = {name: (outs[name].float() - ref).abs().max().item() / scale for name in engines}
        print(f"{t:>6} " + " ".join(f"{med[name]:>14.2f}" for name in engines) +
              f" {med['sk default'] / med['sk amx']:>12.2f} {med['eager'] / med['sk amx']:>10.2f}"
              f" {err['sk amx']:>12.2e} {err['sk default']:>16.2e}")


if __name__ == "__main__":
    main()
