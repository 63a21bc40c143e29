#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Deterministic: running it again rewrites the same files. The seeds only give
libFuzzer a start; run_fuzz.sh fuzzes a copy of them, so they never change
during a run. The byte layouts are those the targets read (fuzz/README.md).

    python3 fuzz/make_corpus.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def options():
    # scope string [NUL global default string]; strings from docs/options.md
    seeds = {
        "empty": b"",
        "sync": b"early-start=0:debug_sync_all=1",
        "quoted": b'"split-mode=8:preload-code=max"',
        "compile_options": b'compile-options="-O3,-march=native":profiling=1',
        "dcci": b"dcci-after-kernel-end=grouped_.*,quant_matmul:dcci-disable-on-kernel=grouped_matmul_v2",
        "empty_pairs": b"early-start=0::profiling=1:",
        "no_equals": b"early-start=0:verbose",
        "all": (b"dcci_disable_on_kernel=cast : dcci-after-kernel-end=quant_matmul:"
                b'dcci-before-kernel-start="grouped_.*, add":strict_scope_check=abort:'
                b"compile-options=-O2,-g:debug-aiv-num=5:debug-aic-num=3:debug-sync-all=1:"
                b"debug-dcci-all=1:split-mode=64:profiling=1:feed-sync-all=1:stream_fusion=1:"
                b"early-start=2:preload-code=max:func_align=4096"),
        "typo": b"early-strat=1",
        "denied_flag": b"compile-options=-O2,-o/tmp/x",
        "with_global": b"early-start=0\x00feed-sync-all=1:split-mode=2",
        "bad_global": b"profiling=1\x00debug_sync_all=9",
    }
    for name, data in seeds.items():
        write("fuzz_options", name, data)


# Op selectors of gen_op (fuzz_gen.h): byte % 16.
OPS = {"elementwise": 0, "cast": 3, "reshape": 4, "concat": 5, "grouped_matmul": 6, "moe_gating_topk": 8,
       "dequant_swiglu_quant": 10, "quant_matmul": 12, "custom": 14}


def graph(rng):
    # byte 0: hostility; then actions (byte % 16): 0-5 generated op, 6 raw
    # input, 7 raw op, 8 scope begin/end, 9 raw scope, 10 end scope, 11
    # stream / event, 12 raw output, 13 value info, 14 compile and run.
    for name, sel in OPS.items():
        body = bytes([0])
        for _ in range(3):
            body += bytes([0, sel]) + bytes(rng.randrange(256) for _ in range(20))
        body += bytes([14]) + bytes(rng.randrange(256) for _ in range(12))
        write("fuzz_graph", name, body)
    mixed = bytes([8])  # scopes, streams, raw calls, then compile
    for action in (8, 0, 11, 0, 7, 10, 6, 9, 12, 13, 14):
        mixed += bytes([action, rng.randrange(16)]) + bytes(rng.randrange(256) for _ in range(10))
    write("fuzz_graph", "mixed", mixed)


def exec_(rng):
    # byte 0: fill mode (% 5); byte 1: ops - 1 (% 10); per op one byte
    # (< 48: begin / end a scope, < 64: a stream step), the op selector and
    # the op's choices.
    for name, sel in OPS.items():
        body = bytes([0, 2])
        for _ in range(3):
            body += bytes([0xFF, sel]) + bytes(rng.randrange(256) for _ in range(24))
        write("fuzz_exec", name, body)
    for mode in range(5):
        body = bytes([mode, 6, 0x00])  # a scope with random options around the ops
        body += bytes(rng.randrange(256) for _ in range(120))
        write("fuzz_exec", "scoped_mode%d" % mode, body)


def tokens(rng):
    # fuzz_exec with a run-time token count (fuzz_tokens.h): byte 0 >= 168
    # (fill mode byte % 5), the maximum's byte, then as exec_; the token
    # counts and the wrong buffer sizes come from the bytes left at the end.
    for name, sel in OPS.items():
        for mode, max_byte in ((170, 3), (171, 200)):  # max 4; max 9
            body = bytes([mode, max_byte, 2])
            for _ in range(3):
                body += bytes([0xFF, sel]) + bytes(rng.randrange(256) for _ in range(24))
            body += bytes(rng.randrange(256) for _ in range(16))
            write("fuzz_exec", "tokens_%s_max%d" % (name, 4 if max_byte == 3 else 9), body)


def main():
    rng = random.Random(20240601)
    options()
    graph(rng)
    exec_(rng)
    tokens(random.Random(20261203))  # its own generator: the seeds above stay as they are


if __name__ == "__main__":
    main()
