"""PyTorch eager on transformers' own Qwen3-MoE sparse block at the size of
`sk bench moe-layer:qwen3-30b-a3b` (H 2048, 128 experts, top-8, expert
intermediate 768, bf16), for the times beside sk's. Optional: needs
`pip install transformers` (not in the test venv).

    python3 bench/peers/peer_moe_layer.py [--threads 2] [--tokens 1,4,16] [--experts 128] [--iters 15]

The block has its own random weights (uniform +-0.03, as sk's moe-layer
draws them), so times compare and outputs do not: the same weights in both
is the checkpoint loading still to come. Prints the median of --iters calls
after 3 warm-up calls per token count.
"""

import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", default="1,4,16")
    ap.add_argument("--experts", type=int, default=128)
    ap.add_argument("--iters", type=int, default=15)
    a = ap.parse_args()
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe import modeling_qwen3_moe as qwen3

    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    cfg = Qwen3MoeConfig(hidden_size=2048, num_experts=a.experts, num_experts_per_tok=8, moe_intermediate_size=768,
                         norm_topk_prob=True)
    block = qwen3.Qwen3MoeSparseMoeBlock(cfg).to(torch.bfloat16).eval()
    for p in block.parameters():
        torch.nn.init.uniform_(p, -0.03, 0.03)
    for t in (int(v) for v in a.tokens.split(",")):
        x = (torch.rand(1, t, 2048) * 2 - 1).to(torch.bfloat16)
        times = []
        with torch.no_grad():
            for _ in range(3):
                block(x)
            for _ in range(a.iters):
                t0 = time.perf_counter()
                block(x)
                times.append(time.perf_counter() - t0)
        times.sort()
        print(f"qwen3-30b-a3b T={t} experts={a.experts} threads={a.threads}: torch eager median "
              f"{times[len(times) // 2] * 1e3:.2f} ms (torch {torch.__version__})")


if __name__ == "__main__":
    main()
