"""transformers' experts module, its own grouped_mm against
experts_implementation="superkernel", on a MoE layer of a real model's size
(random bf16 weights): medians of interleaved rounds, the ratio, and the
resident bytes (the module's experts, and the process after the library
has packed them and moved torch's copy to a file: one copy in memory).

    PYTHONPATH=python SUPERKERNEL_LIBRARY=build/lib/libsuperkernel.so \\
        .venv/bin/python bench/python/hf_experts.py --threads 2 --tokens 1,4,16,128

Defaults: Qwen3-30B-A3B's layer (128 experts, H 2048, I 768, top-8).
"""

import argparse
import statistics
import time

import torch

import superkernel  # noqa: F401  registers "superkernel"
import transformers
from superkernel import hf_experts
from transformers.integrations.moe import grouped_mm_experts_forward, use_experts_implementation


def experts_module(e, h, inter):
    @use_experts_implementation
    class Experts(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.num_experts = e
            self.gate_up_proj = torch.nn.Parameter((torch.randn(e, 2 * inter, h) * 0.02).to(torch.bfloat16))
            self.down_proj = torch.nn.Parameter((torch.randn(e, h, inter) * 0.02).to(torch.bfloat16))
            self.act_fn = torch.nn.SiLU()

    cfg = transformers.PretrainedConfig()
    cfg._experts_implementation = "grouped_mm"
    return Experts(cfg).requires_grad_(False)


def resident_bytes():
    """This process's resident memory (anonymous + file-backed pages)."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return sum(int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssFile", "RssShmem"))


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", default="1,4,16,128")
    ap.add_argument("--experts", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--inter", type=int, default=768)
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    before = resident_bytes()
    m = experts_module(a.experts, a.hidden, a.inter)
    with_module = resident_bytes()
    print(f"experts {a.experts} x [{2 * a.inter}, {a.hidden}] + [{a.hidden}, {a.inter}] bf16, top-{a.top_k}, "
          f"{a.threads} threads; ms, medians of {a.rounds} interleaved rounds")
    print(f"{'T':>6} {'grouped_mm':>11} {'superkernel':>12} {'ratio':>7}")
    for t in (int(x) for x in a.tokens.split(",")):
        x = (torch.randn(t, a.hidden) * 0.5).to(torch.bfloat16)
        w, idx = torch.topk(torch.softmax(torch.randn(t, a.experts), -1), a.top_k)
        w = (w / w.sum(-1, keepdim=True)).to(torch.bfloat16)
        n = 10 if t <= 16 else 3
        runs = {"grouped_mm": [], "superkernel": []}
        with torch.no_grad():
            hf_experts.experts_forward(m, x, idx, w)  # the first call compiles
            if t == int(a.tokens.split(",")[0]):
                compiled = resident_bytes()
            # grouped_mm reads torch's copy, which the library moved to a
            # file: its pages come back here, not in the timed rounds.
            grouped_mm_experts_forward(m, x, idx, w)
            for _ in range(a.rounds):
                runs["grouped_mm"] += timed(lambda: grouped_mm_experts_forward(m, x, idx, w), n)
                runs["superkernel"] += timed(lambda: hf_experts.experts_forward(m, x, idx, w), n)
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{t:>6} {med['grouped_mm']:>11.2f} {med['superkernel']:>12.2f} {med['grouped_mm'] / med['superkernel']:>7.2f}")
    st = hf_experts._programs[m].program.stats
    gb = 1e-9
    print(f"experts {(m.gate_up_proj.nbytes + m.down_proj.nbytes) * gb:.2f} GB, packed {st['packed_bytes'] * gb:.2f} GB; "
          f"resident: the module {(with_module - before) * gb:.2f} GB, after compiling "
          f"{(compiled - before) * gb:.2f} GB, at the end {(resident_bytes() - before) * gb:.2f} GB (grouped_mm read "
          "torch's copy back)")


if __name__ == "__main__":
    main()
