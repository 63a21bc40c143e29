"""DeepSeek latent attention against PyTorch: the library's `mla_attention`
(absorbed form: every head reads the one latent row [c_kv, k_pe] per key,
kv_b_proj folded into query and output) against the decode step of
transformers' DeepseekV3Attention in its expanded form, on the same bf16
cache, at DeepSeek-V2-Lite's heads (16 heads, kv_lora_rank 512, rope 64,
nope 128, v 128).

Transformers' cache holds the expanded keys and values (kv_b_proj applied
to each row once, when it was written), so its step is SDPA over
k = [W_UK c_kv, k_pe] [1, 16, S, 192] and v = W_UV c_kv [1, 16, S, 128]:
here they are expanded from the library's latent cache once, before
timing, and the step is F.scaled_dot_product_attention (what its "sdpa"
attention calls) with the module's scaling. The library's step reads the
latent cache (S x 576 bf16) and kv_b_proj's weight; its kv_b_proj is a
graph constant (packed at compile), as in a model. Medians of interleaved
rounds, one decode query at the last row; torch/sk > 1: the library is
faster. The two do not give the same bits (torch's sums are its own).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        /work/main/.venv/bin/python bench/python/mla_torch.py --threads 2
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import superkernel
from superkernel import Graph, Team

H, R, P, N, V = 16, 512, 64, 128, 128
PAUSE_S = 0.02  # torch's OpenMP workers spin a while after an op, on the team's cores


def interleaved(rounds, *fns):
    """Each fn's median seconds over `rounds` rounds that run them in turn
    (a first round warms up), a pause before each call."""
    times = [[] for _ in fns]
    for r in range(rounds + 1):
        for fn, ts in zip(fns, times):
            time.sleep(PAUSE_S)
            t0 = time.perf_counter()
            fn()
            if r:
                ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--ctx", type=int, default=4096)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = args.ctx
    gen = torch.Generator().manual_seed(0)
    q_nope = torch.randn(1, H, N, generator=gen).to(torch.bfloat16)
    q_pe = torch.randn(1, H, P, generator=gen).to(torch.bfloat16)
    cache = torch.randn(s, 1, R + P, generator=gen).to(torch.bfloat16)
    w = (torch.randn(H * (N + V), R, generator=gen) / R**0.5).to(torch.bfloat16)
    pos = torch.tensor([s - 1], dtype=torch.int64)
    scale = 1.0 / (N + P) ** 0.5

    g = Graph()
    ins = [g.add_input("q_nope", "bf16", [1, H, N]), g.add_input("q_pe", "bf16", [1, H, P]),
           g.add_input("latent_cache", "bf16", [s, 1, R + P]), g.add_input("positions", "int64", [1])]
    wc = g.add_constant("kv_b_weight", w)
    (o,) = g.add_op("mla_attention", {"q_nope": ins[0], "q_pe": ins[1], "latent_cache": ins[2],
                                      "positions": ins[3], "kv_b_weight": wc}, {"scale": scale})
    g.mark_output(o, "o")
    team = Team(args.threads)
    prog = g.compile(team)
    o_sk = torch.empty(1, H, V, dtype=torch.bfloat16)

    # transformers' cache: keys and values expanded once per row, [1, H, S, *]
    kv = (cache[:, 0, :R] @ w.t()).view(s, H, N + V)
    k_nope, v = kv[..., :N], kv[..., N:]
    k = torch.cat([k_nope, cache[:, :, R:].expand(s, H, P)], dim=-1).permute(1, 0, 2).unsqueeze(0).contiguous()
    v = v.permute(1, 0, 2).unsqueeze(0).contiguous()
    q = torch.cat([q_nope, q_pe], dim=-1).permute(1, 0, 2).unsqueeze(0)

    out = {}
    tt, ts = interleaved(args.rounds, lambda: out.update(t=F.scaled_dot_product_attention(q, k, v, scale=scale)),
                         lambda: prog.run_into([q_nope, q_pe, cache, pos], [o_sk]))
    o_t = out["t"]
    err = (o_t[0].permute(1, 0, 2).float() - o_sk.float()).abs().max().item()
    print(f"torch {torch.__version__}, {args.threads} threads; superkernel {superkernel.__version__}; bf16, "
          f"DeepSeek-V2-Lite MLA (H {H}, R {R}, P {P}, N {N}, V {V}), decode ctx {s}; medians of {args.rounds} "
          f"interleaved rounds")
    print(f"torch SDPA (expanded, {(k.numel() + v.numel()) * 2 / 2**20:.0f} MiB cache) {tt * 1e3:.3f} ms, "
          f"sk mla_attention (latent, {cache.numel() * 2 / 2**20:.1f} MiB cache) {ts * 1e3:.3f} ms, "
          f"torch/sk {tt / ts:.2f}, max |diff| {err:.3g}")


if __name__ == "__main__":
    main()
