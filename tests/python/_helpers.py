"""Helpers shared by the Python tests of the torch ops, the compat layer and
custom kernels (a module, not a conftest: import it as `_helpers`)."""

import os
import subprocess
import sys

import torch

import superkernel

_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def bits_equal(a, b):
    """Same dtype, same shape, same bytes (NaN payloads included)."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    view = _INT_VIEW.get(a.dtype)
    if view is not None:
        return torch.equal(a.contiguous().view(view), b.contiguous().view(view))
    return torch.equal(a, b)


def assert_bits_equal(got, want, what):
    got, want = list(got), list(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"{what}: output {i}: dtype {g.dtype}, expected {w.dtype}"
        assert tuple(g.shape) == tuple(w.shape), f"{what}: output {i}: shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        if not bits_equal(g, w):
            diff = (g.to(torch.float64) - w.to(torch.float64)).abs()
            raise AssertionError(f"{what}: output {i} differs bitwise (max abs diff {diff.max().item()})")


def as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def reference_outputs(op, slots, attrs, executor="reference", team=None):
    """Runs op once through a one-op superkernel.Graph compiled for executor
    (the library's plain reference implementation by default): slots
    {name: tensor or [tensors]} in the op's slot order, attrs {library
    attribute name: value}. Returns the outputs (torch tensors)."""
    with superkernel.Graph() as g:
        values, inputs = {}, []
        for name, v in slots.items():
            tensors = as_list(v)
            vals = [g.add_input(f"{name}_{i}", t.dtype, t.shape) for i, t in enumerate(tensors)]
            values[name] = vals if isinstance(v, (list, tuple)) else vals[0]
            inputs += tensors
        outs = g.add_op(op, values, attrs)
        for i, out in enumerate(outs):
            g.mark_output(out, f"out{i}")
        program = g.compile(team, executor=executor)
    try:
        return program.run(*inputs)
    finally:
        program.close()


def compile_c(source_text, directory, name="libuser.so"):
    """Builds a user's kernel library: cc -shared -fPIC -O2 against
    superkernel.h; returns the path."""
    include = superkernel.custom.include_dir()
    assert include is not None, "superkernel.h not found (superkernel.custom.include_dir())"
    src = os.path.join(directory, name.replace(".so", ".c"))
    with open(src, "w") as f:
        f.write(source_text)
    out = os.path.join(directory, name)
    cmd = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-I", include, src, "-o", out, "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise RuntimeError(f"cc failed: {' '.join(cmd)}")
    return out


def rss_bytes():
    """Resident set size of this process (/proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
