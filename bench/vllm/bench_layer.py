"""One MoE layer's experts: vLLM's CPU kernel (torch.ops._C.cpu_fused_moe,
its weights prepacked for the ISA vLLM picks) against the plugin's program
(superkernel.vllm), on the same weights and routing, in vLLM's environment
(bench/vllm/make_venv.sh):

    build/vllm-venv/bin/python bench/vllm/bench_layer.py [--experts 128] [--hidden 2048]
        [--inter 768] [--top-k 8] [--tokens 1,16,128,2048] [--threads 2] [--reps 20]

The default is a Qwen3-30B-A3B layer. Both run on the calling thread and
torch's OpenMP threads, bound one a CPU as vLLM's worker binds them
(GOMP_CPU_AFFINITY is set before torch loads; the library's team sits
beside them, superkernel.vllm._team). Prints per token count the median
time of each and their ratio, from this one run, and checks that the two
outputs agree within bf16's tolerance.
"""

import argparse
import os
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--experts", type=int, default=128)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--inter", type=int, default=768)
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument("--tokens", default="1,16,128,2048")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    if "torch" in sys.modules or os.environ.get("GOMP_CPU_AFFINITY") is None:
        # OpenMP reads its binding when it loads: set it, then start again
        env = dict(os.environ, GOMP_CPU_AFFINITY=" ".join(str(c) for c in range(args.threads)),
                   OMP_NUM_THREADS=str(args.threads))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)

    import torch
    from vllm import _custom_ops as ops

    from superkernel import hf_experts
    from superkernel import vllm as plugin

    torch.manual_seed(0)
    e, h, i, k = args.experts, args.hidden, args.inter, args.top_k
    w13 = (torch.randn(e, 2 * i, h) * 0.02).to(torch.bfloat16)
    w2 = (torch.randn(e, h, i) * 0.02).to(torch.bfloat16)
    isa = "amx" if torch.cpu._is_amx_tile_supported() else "vec"
    p13, p2 = ops.cpu_prepack_moe_weight(w13, isa), ops.cpu_prepack_moe_weight(w2, isa)

    class Layer:
        w13_weight, w2_weight = w13.clone(), w2.clone()

    prog = hf_experts._ExpertsProgram(plugin._Weights(Layer), torch.bfloat16, k, torch.float32, watch_versions=False,
                                      max_tokens=plugin.MAX_TOKENS, team=plugin._team())
    print(f"experts {e}, hidden {h}, intermediate {i}, top-{k}; {args.threads} threads; vLLM's ISA {isa}; "
          f"team {prog.program.team!r}; SK_NUMERICS={os.environ.get('SK_NUMERICS', 'default')}")
    print("| tokens | vLLM ms | superkernel ms | ratio (vLLM / superkernel) | max abs diff |")
    print("|---:|---:|---:|---:|---:|")
    for n in [int(t) for t in args.tokens.split(",")]:
        x = torch.randn(n, h).to(torch.bfloat16)
        # a routing of its own each repetition: a layer's experts are not in
        # the cache when it runs (the next layer's weights are elsewhere)
        reps = max(3, args.reps if n <= 128 else args.reps // 4)
        ids = [torch.stack([torch.randperm(e)[:k] for _ in range(n)]).to(torch.int32) for _ in range(reps + 1)]
        wts = torch.softmax(torch.randn(n, k), -1)
        out = torch.empty(n, h, dtype=torch.bfloat16)

        def run_vllm(r):
            ops.cpu_fused_moe(out, x, p13, p2, None, None, wts, ids[r], "silu", isa)

        def run_sk(r):
            return prog(x, ids[r], wts)

        times = {}
        for name, fn in (("vllm", run_vllm), ("sk", run_sk)):
            fn(reps)
            ts = []
            for r in range(reps):
                t0 = time.perf_counter()
                fn(r)
                ts.append(time.perf_counter() - t0)
            times[name] = statistics.median(ts)
        run_vllm(0)
        diff = (out.float() - run_sk(0).float()).abs().max().item()
        print(f"| {n} | {times['vllm'] * 1e3:.2f} | {times['sk'] * 1e3:.2f} | {times['vllm'] / times['sk']:.2f} | "
              f"{diff:.2e} |")


if __name__ == "__main__":
    main()
