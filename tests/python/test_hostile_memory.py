"""Memory the library would write or read wrongly, refused or made right
(issue 34, items 4, 5 and 7): a bound tensor that lost its memory, an
output over read-only memory, torch's lazy negative bit, and byte counts a
run of another path left behind. Each crash case runs in a subprocess, so
a regression fails the test instead of killing the suite."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch
from _forking import in_fork
from conftest import assert_bitwise

import superkernel as sk
from superkernel import buffers, scope
from superkernel.dtypes import to_dtype

F32 = to_dtype("fp32")


def _add_program(n=4, team=None):
    g = sk.Graph()
    x = g.add_input("x", "fp32", (n,))
    y = g.add_input("y", "fp32", (n,))
    (z,) = g.add_op("add", {"x": x, "y": y})
    g.mark_output(z, "z")
    return g.compile(team, executor="eager")


def _child(code, timeout=120):
    """Runs code in a fresh interpreter with this one's package and library;
    the CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )


# ---- item 4: a bound tensor that lost its memory ------------------------------


_BOUND_CHILD = """
import torch, superkernel as sk

def program(n):
    g = sk.Graph()
    x = g.add_input("x", "fp32", (n,))
    y = g.add_input("y", "fp32", (n,))
    (z,) = g.add_op("add", {"x": x, "y": y})
    g.mark_output(z, "z")
    return g.compile(executor="eager")

def case(how):
    n = 1 << 14
    p = program(n)
    a, b, out = torch.ones(n), torch.full((n,), 2.0), torch.empty(n)
    ctx = p.run_context()
    ctx.bind("input", 0, a)
    ctx.bind("input", 1, b)
    ctx.bind("output", 0, out)
    ctx.run()
    assert bool((out == 3).all())
    if how == "resize_":
        out.resize_(0)
        out.resize_(n * 64)  # new memory: the context's pointer dangles
        kind, index, victim = "output", 0, out
    elif how == "set_":
        a.set_(torch.zeros(n).untyped_storage())  # another storage: the old one is freed
        kind, index, victim = "input", 0, a
    elif how == "shrink":
        b.resize_(2)  # fewer bytes than the binding says
        kind, index, victim = "input", 1, b
    else:  # rebinding another index must not refresh the recorded pointer of this one
        a.resize_(0)
        a.resize_(n * 64)
        ctx.bind("input", 1, b)
        kind, index, victim = "input", 0, a
    try:
        for _ in range(10):
            ctx.run()
        print(how, "ran")
    except sk.InvalidStateError as e:
        print(how, "refused:", e)
    victim.resize_(n)
    ctx.bind(kind, index, victim)  # bound again: the context runs
    ctx.run()
    print(how, "rebound ran")

for how in ("resize_", "set_", "shrink", "rebind-other"):
    case(how)
"""


def test_bound_tensor_that_lost_its_memory_is_refused_at_run():
    """What the issue saw: the run after resize_ / set_ wrote into freed
    memory (SIGSEGV or heap corruption); in a child, so that a regression
    fails here instead of killing the suite."""
    r = _child(_BOUND_CHILD)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    for how, name in (("resize_", "output z"), ("set_", "input x"), ("shrink", "input y"), ("rebind-other", "input x")):
        assert f"{how} refused: RunContext.run: the tensor bound as {name} no longer holds the memory" in r.stdout, (
            r.stdout
        )
        assert f"{how} rebound ran" in r.stdout


# ---- item 5: outputs over read-only memory --------------------------------------

_READ_ONLY_CHILD = """
import mmap, sys, numpy as np, torch, superkernel as sk
path = sys.argv[1]
with open(path, "wb") as f:
    f.write(bytes(4 * 4096))
how = sys.argv[2]
n = 1024 if how == "view" else 4096
g = sk.Graph()
x = g.add_input("x", "fp32", (n,))
(y,) = g.add_op("square", {"x": x})
g.mark_output(y, "y")
p = g.compile(executor="eager")
f = open(path, "rb")
m = mmap.mmap(f.fileno(), 4 * 4096, access=mmap.ACCESS_READ)
if how == "frombuffer":
    import warnings
    warnings.simplefilter("ignore")  # torch warns that the buffer is not writable, and would write it
    out = torch.frombuffer(m, dtype=torch.float32)
elif how == "from_numpy":
    import warnings
    warnings.simplefilter("ignore")
    out = torch.from_numpy(np.frombuffer(m, dtype=np.float32))
else:  # a view of the second half: the probe looks at the view's own bytes
    import warnings
    warnings.simplefilter("ignore")
    out = torch.frombuffer(m, dtype=torch.float32)[3072:]  # the last page
for call in ("run", "bind"):
    try:
        if call == "run":
            p.run(torch.ones(out.numel()), outputs=[out])
        else:
            p.run_context().bind("output", 0, out)
        print(call, "wrote")
    except ValueError as e:
        print(call, "refused:", e)
print("data intact", bool((torch.frombuffer(m, dtype=torch.uint8) == 0).all()))
"""


@pytest.mark.parametrize("how", ["frombuffer", "from_numpy", "view"])
def test_output_over_read_only_mmap_is_refused_not_a_crash(tmp_path, how):
    code = _READ_ONLY_CHILD.replace("sys.argv[1]", repr(str(tmp_path / "ro.bin"))).replace("sys.argv[2]", repr(how))
    r = _child(code)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "run refused: output y: the tensor's memory is read-only" in r.stdout, r.stdout
    assert "bind refused: output y: the tensor's memory is read-only" in r.stdout, r.stdout
    assert "data intact True" in r.stdout


def test_writable_outputs_of_every_origin_still_run(tmp_path):
    """Memory torch did not allocate but that is writable (from_numpy, a
    writable shared mmap, a file mapping) runs, its data written; the probe
    leaves other bytes as they were."""
    import mmap

    p = _add_program(1024)
    a = torch.arange(1024, dtype=torch.float32)
    path = tmp_path / "rw.bin"
    path.write_bytes(bytes(4096))
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 4096)
        outs = [torch.from_numpy(np.full(1024, 7, np.float32)), torch.frombuffer(m, dtype=torch.float32),
                torch.from_file(str(path), shared=False, size=1024), torch.empty(1024).share_memory_()]
        for out in outs:
            p.run(a, a, outputs=[out])
            assert torch.equal(out, 2 * a)
        del outs
        m.close()


def test_read_only_probe_works_in_a_forked_child():
    """The probe's pipe is per process: a child after fork makes its own
    (a shared one would mix two processes' bytes), and a fork while another
    thread holds the probe's lock does not leave the child waiting."""
    r = _child(
        """
        import os, numpy as np, torch, superkernel as sk
        from superkernel import buffers
        g = sk.Graph()
        x = g.add_input("x", "fp32", (4,))
        (y,) = g.add_op("square", {"x": x})
        g.mark_output(y, "y")
        p = g.compile(executor="eager")
        out = torch.from_numpy(np.zeros(4, "float32"))
        p.run(torch.full((4,), 3.0), outputs=[out])  # the parent's pipe exists
        buffers._PROBE.lock.acquire()  # as if another thread were probing at the fork
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                out2 = torch.from_numpy(np.zeros(4, "float32"))
                p.run(torch.full((4,), 5.0), outputs=[out2])  # probes: the lock and a pipe of its own
                ok = buffers._PROBE.pid == os.getpid() and out2.tolist() == [25.0] * 4
            finally:
                os._exit(0 if ok else 3)
        buffers._PROBE.lock.release()
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        p.run(torch.full((4,), 2.0), outputs=[out])
        print("parent", out.tolist())
        """,
        timeout=60,
    )
    assert r.returncode == 0, (r.stdout, r.stderr[-2000:])
    assert "child 0" in r.stdout and "parent [4.0, 4.0, 4.0, 4.0]" in r.stdout, r.stdout


def _probed():
    """An output the probe looks at (torch did not allocate its memory)."""
    return torch.from_numpy(np.zeros(16, np.float32))


def test_fork_child_probe_never_closes_its_own_files_on_the_parents_pipe_numbers(tmp_path):
    """A child that closed the inherited descriptors and opened its own
    files on the same numbers (daemonizing) keeps them: the inherited pipe
    is closed at the fork, not later by number."""
    buffers.check_buffer(_probed(), "output y", F32, (16,), True)  # the parent's pipe exists
    r, w = buffers._PROBE.fds

    def child():
        closed = [_closed(fd) for fd in (r, w)]  # the inherited pipe, closed at the fork
        with open(tmp_path / "log", "wb") as log:
            for fd in (r, w):
                os.dup2(log.fileno(), fd)  # the child's own file on the pipe's numbers
            buffers.check_buffer(_probed(), "output y", F32, (16,), True)  # the child's first probe
            for fd in (r, w):
                os.write(fd, b"mine ")
            for fd in (r, w):
                os.close(fd)
        return closed, buffers._PROBE.pid == os.getpid()

    assert in_fork(child) == ([True, True], True)
    assert (tmp_path / "log").read_bytes() == b"mine mine "
    assert buffers._PROBE.fds == (r, w)  # the parent's own pipe, still in use
    buffers.check_buffer(_probed(), "output y", F32, (16,), True)


def _closed(fd):
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_probe_drops_a_byte_an_interrupted_probe_left_in_the_pipe():
    """A probe interrupted between its write and its read leaves a byte in
    the pipe; the next probe read it back into its own output."""
    out = _probed()
    buffers.check_buffer(out, "output y", F32, (16,), True)
    os.write(buffers._PROBE.fds[1], b"\x7f")  # as the interrupted probe left it
    buffers.check_buffer(out, "output y", F32, (16,), True)
    assert torch.equal(out, torch.zeros(16)), out


# ---- numpy outputs over memory numpy did not allocate ---------------------------

_NUMPY_READ_ONLY_CHILD = """
import ctypes, numpy as np, superkernel as sk
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
page = libc.mmap(None, 4096, 1, 0x22, -1, 0)  # PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS
buf = (ctypes.c_float * 1024).from_address(page)
g = sk.Graph()
x = g.add_input("x", "fp32", (16,))
(y,) = g.add_op("square", {"x": x})
g.mark_output(y, "y")
p = g.compile(executor="eager")
outs = {
    "as_array": np.ctypeslib.as_array(buf)[:16],
    "frombuffer": np.frombuffer(buf, np.float32, count=16),
    "view_of_view": np.frombuffer(buf, np.float32).reshape(64, 16)[63][None][0],
}
for how, out in outs.items():
    print(how, "writeable", out.flags.writeable)  # numpy does not know
    for call in ("run", "bind"):
        try:
            if call == "run":
                p.run(np.ones(16, np.float32), outputs=[out])
            else:
                p.run_context().bind("output", 0, out)
            print(how, call, "wrote")
        except ValueError as e:
            print(how, call, "refused:", e)
"""


def test_numpy_output_over_read_only_memory_numpy_calls_writeable_is_refused():
    """numpy reports memory it was handed (ctypes, frombuffer) as writeable
    whatever its protection: the run died with SIGSEGV. In a child, so a
    regression fails here instead of killing the suite."""
    r = _child(_NUMPY_READ_ONLY_CHILD)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    for how in ("as_array", "frombuffer", "view_of_view"):
        assert f"{how} writeable True" in r.stdout, r.stdout
        for call in ("run", "bind"):
            assert f"{how} {call} refused: output y: the array's memory is read-only" in r.stdout, r.stdout


def test_numpy_outputs_of_numpy_memory_are_not_probed_and_foreign_writable_ones_run(monkeypatch):
    p = _add_program(16)
    a = np.arange(16, dtype=np.float32)
    probed = []
    real = buffers._check_writable
    monkeypatch.setattr(buffers, "_check_writable", lambda *args: probed.append(args[2]) or real(*args))
    own = np.zeros(16, np.float32)
    for out in (own, own[::1], own.reshape(4, 4).reshape(16)):  # numpy's heap, through views: no probe
        p.run(a, a, outputs=[out])
        assert (out == 2 * a).all()
    assert probed == []
    foreign = np.frombuffer(bytearray(64), np.float32)  # writable memory numpy did not allocate
    p.run(a, a, outputs=[foreign])
    assert (foreign == 2 * a).all() and probed == ["output z"]


def test_empty_read_only_outputs_are_accepted_as_torch_ones_are():
    """Nothing is written to a zero-size output: a read-only numpy one was
    refused where the torch tensor over the same memory ran."""
    g = sk.Graph()
    x = g.add_input("x", "fp32", (0,))
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    p = g.compile(executor="eager")
    out = np.zeros(0, np.float32)
    out.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of the read-only array
        as_torch = torch.from_numpy(out)
    for o in (out, as_torch):
        p.run(np.zeros(0, np.float32), outputs=[o])
        p.run_context().bind("output", 0, o)


# ---- item 7: torch's lazy negative / conjugate bits ---------------------------


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(8, 4, generator=torch.Generator().manual_seed(1)),
                                    requires_grad=False)

    def forward(self, x):
        with scope.super_kernel("s"):
            (y,) = torch.ops.superkernel.grouped_matmul([x], [self.w])
            return torch.square(y) + y


def test_export_resolves_the_negative_bit():
    model, x = _Scaled(), torch.rand(3, 8) - 0.5
    exported = sk.export(model, [x], compiler_config=sk.CompilerConfig(executor="eager"))
    lazy = torch._neg_view(x)
    assert lazy.is_neg()
    with torch.no_grad():
        want = model(-x)
    assert_bitwise(exported(lazy), want)
    assert lazy.is_neg()  # the caller's tensor is left as it was


def test_low_level_api_refuses_lazy_bits_by_name():
    p = _add_program()
    lazy = torch._neg_view(torch.ones(4))
    with pytest.raises(ValueError, match="input x: tensor has a lazy negative bit"):
        p.run(lazy, torch.ones(4))
    with pytest.raises(ValueError, match="output z: tensor has a lazy negative bit"):
        p.run(torch.ones(4), torch.ones(4), outputs=[torch._neg_view(torch.empty(4))])
    with pytest.raises(ValueError, match="input y: tensor has a lazy negative bit"):
        p.run_context().bind("input", 1, lazy)
    g = sk.Graph()
    with pytest.raises(ValueError, match="constant c: tensor has a lazy negative bit"):
        g.add_constant("c", lazy)


# ---- Program.run / run_into never use stale byte counts -----------------------


def test_run_into_between_run_pointers_calls_leaves_no_stale_byte_counts():
    """_run_pointers skips rewriting the byte counts when the token count is
    the one it last wrote; a run_into in between writes its own, so the next
    _run_pointers must write them again (else it runs T=2 rows' worth)."""
    g = sk.Graph()
    g.set_max_tokens(8)
    x = g.add_input("x", "fp32", (None, 4))
    (y,) = g.add_op("square", {"x": x})
    g.mark_output(y, "y")
    p = g.compile(executor="eager")
    a5 = np.arange(20, dtype=np.float32).reshape(5, 4)
    out5 = np.zeros((5, 4), np.float32)
    p._run_pointers([a5.ctypes.data], [out5.ctypes.data], tokens=5)
    assert (out5 == a5 * a5).all()
    a2, out2 = np.ones((2, 4), np.float32), np.empty((2, 4), np.float32)
    p.run_into([a2], [out2])  # 2 tokens: its own byte counts
    out5[:] = 0
    p._run_pointers([a5.ctypes.data], [out5.ctypes.data], tokens=5)
    assert (out5 == a5 * a5).all(), out5
