"""One engine of the end-to-end benchmark, in a process of its own
(run_e2e.py starts one per engine and thread count; prints one JSON line).

    .venv/bin/python bench/e2e/engines.py --engine ENGINE --threads N CHECKPOINT

Engines: eager (transformers' grouped_mm experts, bf16), inductor (the same
under torch.compile), sk-experts (experts_implementation="superkernel"),
sk-optimize and sk-optimize-w8a8 (superkernel.optimize(whole_model=False):
each MoE block one super kernel), sk-whole, sk-whole-w8a8 and
sk-whole-amx (superkernel.optimize: the whole model in the library,
superkernel.Model, w8a8: every linear layer int8, amx: numerics="amx",
its bf16 products summed as AMX-BF16 does (docs/ops.md, "Numerics"); its
MoE share is not measured: the blocks are inside the library's programs),
fp32 (eager in fp32: the reference of the logits).

Measured: prefill of a P-token prompt from an empty cache, the last
token's logits only (logits_to_keep=1, as generate asks; tokens/s), and
greedy decode of G tokens from a one-token context, one token a step
(tokens/s), as llama-bench's pp and tg; R repetitions each. Then, with
forward hooks timing each MoE block, one more prefill and decode: the share
of the time spent in MoE blocks and the MoE time of a decode step (not for
inductor, which compiles the blocks away). The prompt's last logits and the
first 8 decoded tokens go into the JSON for the comparison against fp32.
"""

import argparse
import json
import statistics
import sys
import time

if any(a.startswith("sk-") for a in sys.argv):
    import superkernel  # noqa: F401  (before torch: its OpenMP workers then wait passively, superkernel/_omp.py)
import torch  # noqa: E402
import transformers  # noqa: E402

ENGINES = ("eager", "inductor", "sk-experts", "sk-optimize", "sk-optimize-w8a8", "sk-whole", "sk-whole-w8a8", "sk-whole-amx",
           "fp32")


def load(checkpoint, engine):
    import superkernel

    impl = "superkernel" if engine == "sk-experts" else "grouped_mm"
    dtype = torch.float32 if engine == "fp32" else torch.bfloat16
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype,
                                                              experts_implementation=impl).eval()
    report = None
    if engine.startswith("sk-optimize"):  # the per-block path: each MoE block one super kernel
        report = superkernel.optimize(model, quantize="w8a8" if engine.endswith("w8a8") else None, whole_model=False)
    if engine.startswith("sk-whole"):  # the whole model in the library (superkernel.Model)
        report = superkernel.optimize(model, max_context=1024, quantize="w8a8" if engine.endswith("w8a8") else None,
                                      numerics="amx" if engine.endswith("-amx") else None)
    if engine == "inductor":
        model.forward = torch.compile(model.forward, dynamic=True)
    return model, report


def moe_blocks(model):
    from superkernel.moe_optimize import OptimizedMoE

    return [m for m in model.modules()
            if isinstance(m, OptimizedMoE) or hasattr(getattr(m, "experts", None), "gate_up_proj")]


class MoETimer:
    """Forward hooks adding up the time spent inside the MoE blocks."""

    def __init__(self, model):
        self.seconds, self._t0, self._handles = 0.0, 0.0, []
        for block in moe_blocks(model):
            self._handles.append(block.register_forward_pre_hook(self._enter))
            self._handles.append(block.register_forward_hook(self._exit))

    def _enter(self, *_):
        self._t0 = time.perf_counter()

    def _exit(self, *_):
        self.seconds += time.perf_counter() - self._t0

    def remove(self):
        for h in self._handles:
            h.remove()


def prefill(model, ids):
    cache = transformers.DynamicCache(config=model.config)
    t0 = time.perf_counter()
    # logits_to_keep=1: the last token's logits only, as generate() and llama-bench's pp do
    logits = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1]
    return time.perf_counter() - t0, logits.float()


def decode(model, first, steps):
    cache = transformers.DynamicCache(config=model.config)
    tok, tokens = first.view(1, 1), []
    t0 = time.perf_counter()
    for _ in range(steps):
        logits = model(input_ids=tok, cache=cache, use_cache=True).logits[0, -1]
        tok = logits.argmax().view(1, 1)
        tokens.append(int(tok))
    return time.perf_counter() - t0, tokens


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--engine", choices=ENGINES, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    model, report = load(a.checkpoint, a.engine)
    load_s = time.perf_counter() - t0
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (1, a.prompt), generator=g)
    out = {"engine": a.engine, "threads": a.threads, "load_s": load_s,
           "report": repr(report) if report is not None else None}
    with torch.no_grad():
        prefill(model, ids)  # warm: compiles (Inductor: at these shapes), first-call costs
        decode(model, ids[0, 0], 4)
        pp, tg = [], []
        for _ in range(a.reps):
            s, logits = prefill(model, ids)
            pp.append(a.prompt / s)
            s, tokens = decode(model, ids[0, 0], a.gen)
            tg.append(a.gen / s)
        out.update(pp=spread(pp), tg=spread(tg), tokens=tokens[:8], logits=logits.tolist())
        if a.engine != "inductor" and not a.engine.startswith("sk-whole"):  # sk-whole: no torch MoE blocks to time
            timer = MoETimer(model)
            s, _ = prefill(model, ids)
            out["moe_share_prefill"] = timer.seconds / s
            timer.seconds = 0.0
            steps = min(a.gen, 16)
            s, _ = decode(model, ids[0, 0], steps)
            out["moe_share_decode"] = timer.seconds / s
            out["moe_decode_ms_per_step"] = timer.seconds / steps * 1e3
            timer.remove()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
