"""example06_custom_op_fusion — the seed's AOT "custom operator fusion"
example on the CPU (shared/spec/models.md, "Further examples").

A user writes a kernel in C (custom_kernel/user_kernels.c: pows, y = x^p),
builds it into a shared library of their own, registers it from Python
(superkernel.custom.register_kernel: entry and infer are C functions of that
library, handed to sk_kernel_register by address) and uses it as an op next
to the built-in ones:

    h = grouped_matmul([x], [w], bias=[b])[0]      built-in, CUBE
    p = pows(h)                                    the user's kernel, VECTOR
    y = square(p)                                  built-in, VECTOR

1. eagerly, through torch.ops.superkernel.* (each op its own launch);
2. fused: the three ops in one super-kernel scope "sk1", built with the
   low-level superkernel.Graph API and compiled for the interpreter and the
   JIT (and eagerly, as the baseline);
3. when the torch.compile backend is available (superkernel.get_backend),
   the model with a superkernel.scope.super_kernel("sk1") scope compiled
   by torch.compile.

Every result is checked bit for bit against the eager run, and pows against
running the kernel alone and against a numpy reference. Prints
`execute sample success`.

    python examples/python/example06_custom_op_fusion.py
"""

import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

import superkernel
from superkernel import custom

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "custom_kernel", "user_kernels.c")
EXPONENT = ctypes.c_float(3.0)  # read by every block through the user pointer; lives as long as the kernel


def build_user_library(directory):
    """cc -shared -fPIC -O2: the user's own library, outside superkernel."""
    include = custom.include_dir()
    if include is None:
        sys.exit("example06: superkernel.h not found (superkernel.custom.include_dir())")
    out = os.path.join(directory, "libuser_kernels.so")
    cmd = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-I", include, SOURCE, "-o", out, "-lm"]
    print("building the user library:", " ".join(cmd[:4]), "...", os.path.basename(out))
    subprocess.run(cmd, check=True)
    return out


def inputs():
    g = torch.Generator().manual_seed(6)
    x = (torch.rand(96, 64, generator=g) * 2 - 1).to(torch.float16)
    w = ((torch.rand(64, 80, generator=g) * 2 - 1) / 8).to(torch.float16)
    b = (torch.rand(80, generator=g) - 0.5).to(torch.float16)
    return x, w, b


def model(x, w, b):
    ops = torch.ops.superkernel
    (h,) = ops.grouped_matmul([x], [w], bias=[b])
    (p,) = ops.pows([h])
    return ops.square(p)


def fused_graph_programs(x, w, b, team):
    """The model as one scope of a superkernel.Graph; programs per executor."""
    g = superkernel.Graph()
    xv = g.add_input("x", "fp16", x.shape)
    wv = g.add_constant("w", w)
    bv = g.add_constant("b", b)
    with g.scope("sk1"):
        (h,) = g.add_op("grouped_matmul", {"x": [xv], "weight": [wv], "bias": [bv]})
        (p,) = g.add_op("pows", {"x": [h]})
        (y,) = g.add_op("square", {"x": p})
    g.mark_output(y, "y")
    programs = {ex: g.compile(team, executor=ex) for ex in ("eager", "interp", "jit")}
    g.close()
    return programs


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.int16), b.view(torch.int16))


def main():
    ok = True
    with tempfile.TemporaryDirectory(prefix="sk_example06_") as tmp:
        path = build_user_library(tmp)
        pows = custom.register_kernel(
            path, entry="pows_kernel", name="pows", type="vector", block_count=8, n_params=2,
            infer="pows_infer", user=EXPONENT,
        )
        print(f"registered {pows!r} from {os.path.basename(path)}: torch.ops.superkernel.pows")
        x, w, b = inputs()

        # 1. eager: every op its own launch.
        y_eager = model(x, w, b)
        (h,) = torch.ops.superkernel.grouped_matmul([x], [w], bias=[b])
        p_alone = pows(h)
        ref = np.power(h.float().numpy(), np.float32(EXPONENT.value)).astype(np.float16)
        close = np.allclose(p_alone.float().numpy(), ref.astype(np.float32), rtol=2e-3, atol=1e-6)
        print(f"1. eager: pows alone vs numpy x^{EXPONENT.value:g}: {'close' if close else 'DIFFERENT'}; "
              f"square(pows) vs the kernel alone: "
              f"{'bitwise equal' if same(y_eager, torch.ops.superkernel.square(p_alone)) else 'DIFFERENT'}")
        ok &= close and same(y_eager, torch.ops.superkernel.square(p_alone))

        # 2. one scope through the low-level Graph API.
        team = superkernel.Team(num_cores=min(4, os.cpu_count() or 1), pin_threads=-1)
        programs = fused_graph_programs(x, w, b, team)
        sub = [line.strip() for line in programs["interp"].describe().splitlines() if line.strip().startswith("sub ")]
        print("2. Graph scope sk1:", "; ".join(sub))
        for executor, program in programs.items():
            (y,) = program.run(x)
            equal = same(y, y_eager)
            stats = program.stats
            print(f"   {executor:6s}: {stats['n_steps']} launch(es), {stats['n_super_kernels']} super kernel(s), "
                  f"vs eager torch ops: {'bitwise equal' if equal else 'DIFFERENT'}")
            ok &= equal
        for program in programs.values():
            program.close()

        # 3. torch.compile with the superkernel backend, when it is there.
        try:
            get_backend = superkernel.get_backend
            scope = superkernel.scope
        except (ImportError, AttributeError) as e:
            print(f"3. torch.compile: skipped (the superkernel backend is not available: {e})")
        else:
            def scoped_model(x, w, b):
                with scope.super_kernel("sk1"):
                    return model(x, w, b)

            backend = "superkernel" if "superkernel" in torch._dynamo.list_backends() else get_backend()
            compiled = torch.compile(scoped_model, backend=backend, fullgraph=True, dynamic=False)
            equal = same(compiled(x, w, b), y_eager)
            print(f"3. torch.compile(backend=superkernel), scope sk1: vs eager: "
                  f"{'bitwise equal' if equal else 'DIFFERENT'}")
            ok &= equal
        team.close()
    if not ok:
        print("example06: results differ", file=sys.stderr)
        return 1
    print("execute sample success")
    return 0


if __name__ == "__main__":
    sys.exit(main())
