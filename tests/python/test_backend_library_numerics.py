"""The backend's opt-in mapping of ATen ops whose library contract is not
torch's bits (CompilerConfig(torch_bits=False); backend/translate.py,
backend/attention.py):

- F.scaled_dot_product_attention (AOTAutograd's
  _scaled_dot_product_flash_attention_for_cpu) runs as the library's
  attention: prefill (causal, torch's top-left mask, also against a longer
  k/v) and decode (T = 1 against a longer k/v), GQA or not, explicit scale,
  fp32 and bf16. The compiled result is bitwise
  torch.ops.superkernel.attention's on the same inputs, within
  test_attention.py's tolerance of a float64 sdpa, with eager's strides,
  and a program of the graph holds the attention node; the torch-side
  layout copies are the inputs' whose token-major view is not dense and,
  for the raw output, one to eager's strides (none for transformers'
  transpose-back epilogue, none for inputs made from [1, L, H, D]
  projections); transformers' attention core in a scope is one super
  kernel;
- softmax over the last dimension runs as the library's softmax (bitwise
  torch.ops.superkernel.softmax, within test_decoder_ops.py's tolerance);
- with torch_bits=True (the default) neither is mapped: eager's bits;
- what the library's attention does not compute (a mask, dropout, batch 2,
  a head dim not a multiple of 16, causal T > S, logsumexp read, q's head
  dim strided) and softmax over another dimension stay in torch: eager's
  bits;
- dynamic shapes (the specialized graphs), inference_mode, export;
- CompilerConfig(torch_bits=...) takes a bool only.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_bitwise

import superkernel
from superkernel.scope import super_kernel

sk = torch.ops.superkernel
GEN = torch.Generator().manual_seed(7)
# test_attention.py's: |got - want| <= ATOL + RTOL * |want| against float64 sdpa
ATTN_TOL = {torch.float32: (2e-5, 1e-4), torch.bfloat16: (1e-2, 1.6e-2)}
# test_decoder_ops.py's: softmax within 4 fp32 ulps (+1e-30), one ulp of bf16 (+1e-7)
SOFTMAX_TOL = {torch.float32: (4 * 2.0**-23, 1e-30), torch.bfloat16: (2.0**-7, 1e-7)}


def rand(shape, dtype, scale=2.0):
    return ((torch.rand(shape, generator=GEN, dtype=torch.float64) * 2 - 1) * scale).to(dtype)


def close(got, want, tol):
    rtol, atol = tol
    err = (got.double() - want.double()).abs()
    bad = err > atol + rtol * want.double().abs()
    assert not bad.any(), f"{int(bad.sum())} of {bad.numel()} off; worst {float(err.max()):.3g}"


def attn_close(got, want, dtype):
    atol, rtol = ATTN_TOL[dtype]
    close(got, want, (rtol, atol))


def compile_run(model, inputs, torch_bits, dynamic=False):
    b = superkernel.get_backend(superkernel.CompilerConfig(executor="interp", torch_bits=torch_bits))
    with torch.no_grad():
        want = model(*inputs)
        got = torch.compile(model, backend=b, fullgraph=True, dynamic=dynamic)(*inputs)
    return got, want, b


ATTENTION = torch.ops.superkernel.attention.default
SOFTMAX, MUL = torch.ops.aten._softmax.default, torch.ops.aten.mul.Tensor


def copies(b):
    """The aten.clone nodes of b's last graph before and after its library
    attention: the torch-side layout copies."""
    graph = b.graphs()[-1].plan.gm.graph
    (att,) = [n for n in graph.nodes if n.target == ATTENTION]
    after, stack = set(), [att]
    while stack:
        for u in stack.pop().users:
            if u not in after:
                after.add(u)
                stack.append(u)
    clones = [n for n in graph.nodes if n.target == torch.ops.aten.clone.default]
    return [n for n in clones if n not in after], [n for n in clones if n in after]


def in_programs(b):
    """The targets of the graph nodes that the programs of b's live graphs
    run (every specialization's)."""
    return {n.target for g in b.graphs() for seg in g.all_segments() for n in seg.nodes}


class Attention(torch.nn.Module):
    """sdpa, and transformers' epilogue (transpose back, reshape) or the
    raw [1, Hq, T, D] output."""

    def __init__(self, is_causal, epilogue="reshape", scale=None, gqa=True, dropout_p=0.0):
        super().__init__()
        self.is_causal, self.epilogue, self.scale, self.gqa, self.dropout_p = is_causal, epilogue, scale, gqa, dropout_p

    def forward(self, q, k, v, mask=None):
        o = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout_p, is_causal=self.is_causal, scale=self.scale,
            enable_gqa=self.gqa)
        if self.epilogue == "raw":
            return o
        if self.epilogue == "both":
            return o, o.transpose(1, 2).contiguous()
        return o.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1)


def library_attention(q, k, v, positions, scale=None):
    """torch.ops.superkernel.attention on the same inputs, in sdpa's layout."""
    kw = {} if scale is None else {"scale": scale}
    o = sk.attention(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), positions, **kw)
    return o.transpose(0, 1).unsqueeze(0)  # [1, Hq, T, D]


def float64_sdpa(q, k, v, positions, scale=None):
    """Token t attends keys 0 .. positions[t], in float64."""
    s = k.shape[2]
    mask = torch.arange(s)[None, :] <= positions[:, None]
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask, scale=scale,
                                          enable_gqa=True)


def inputs(hq, hkv, t, s, d, dtype):
    return rand((1, hq, t, d), dtype), rand((1, hkv, s, d), dtype), rand((1, hkv, s, d), dtype)


# (name, T, S, is_causal, positions): torch's causal mask is top-left
CASES = [
    ("prefill", 9, 9, True, lambda t, s: torch.arange(t)),
    ("prefill against a longer k/v", 5, 12, True, lambda t, s: torch.arange(t)),
    ("decode", 1, 12, False, lambda t, s: torch.full((t,), s - 1)),
    ("decode, causal (top-left: key 0 alone)", 1, 12, True, lambda t, s: torch.zeros(t, dtype=torch.int64)),
    ("every key, T > 1", 4, 7, False, lambda t, s: torch.full((t,), s - 1)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("hq,hkv,d", [(4, 2, 64), (4, 4, 32)])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sdpa_runs_as_the_librarys_attention(dtype, hq, hkv, d, case):
    _, t, s, is_causal, positions = case
    q, k, v = inputs(hq, hkv, t, s, d, dtype)
    pos = positions(t, s)
    for epilogue in ("reshape", "raw"):
        model = Attention(is_causal, epilogue, gqa=hq != hkv)
        got, want, b = compile_run(model, (q, k, v), torch_bits=False)
        lib = library_attention(q, k, v, pos)
        if epilogue == "reshape":
            lib = lib.transpose(1, 2).reshape(1, t, -1)
        assert_bitwise(got, lib)
        assert got.stride() == want.stride() or t == 1, (got.stride(), want.stride())
        assert got.is_contiguous() and want.is_contiguous()
        ref = float64_sdpa(q, k, v, pos)
        attn_close(got, ref if epilogue == "raw" else ref.transpose(1, 2).reshape(1, t, -1), dtype)
        assert ATTENTION in in_programs(b), b.graphs()[-1].plan.describe()
        before, after = copies(b)
        assert len(before) == (3 if t > 1 else 2)  # q [1, Hq, T, D] -> [T, Hq, D], k, v alike
        # transpose(1, 2).reshape: the library's output itself; raw: made dense as eager's
        assert len(after) == (1 if epilogue == "raw" and t > 1 else 0)
        # the default: torch's bits, nothing for the library
        got, want, b = compile_run(model, (q, k, v), torch_bits=True)
        assert_bitwise(got, want)
        assert b.programs() == []


def test_the_librarys_bits_are_not_torchs_here():
    """The fp32 prefill case: the library's output is not torch's bits (so
    the bitwise checks above tell the two apart), within the tolerance."""
    q, k, v = inputs(4, 2, 9, 9, 64, torch.float32)
    got, want, _ = compile_run(Attention(True), (q, k, v), torch_bits=False)
    assert not torch.equal(got, want)
    attn_close(got, want, torch.float32)


def test_sdpa_scale_and_both_epilogues():
    q, k, v = inputs(8, 2, 6, 6, 48, torch.float32)
    got, want, b = compile_run(Attention(True, "both", scale=0.3), (q, k, v), torch_bits=False)
    lib = library_attention(q, k, v, torch.arange(6), scale=0.3)
    assert_bitwise(got[0], lib)
    assert_bitwise(got[1], lib.transpose(1, 2).contiguous())
    assert [g.stride() for g in got] == [w.stride() for w in want]
    attn_close(got[0], float64_sdpa(q, k, v, torch.arange(6), scale=0.3), torch.float32)
    assert ATTENTION in in_programs(b)


class ProjectedAttention(torch.nn.Module):
    """transformers' layout: q, k, v transposed from [1, L, H, D] projections."""

    def forward(self, xq, xk, xv):
        t, s = xq.shape[1], xk.shape[1]
        q = xq.view(1, t, 4, 32).transpose(1, 2)
        k = xk.view(1, s, 2, 32).transpose(1, 2)
        v = xv.view(1, s, 2, 32).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return o, o.transpose(1, 2).reshape(1, t, -1)


def test_sdpa_of_projections_copies_nothing_in_torch():
    xq, xk, xv = rand((1, 7, 128), torch.bfloat16), rand((1, 7, 64), torch.bfloat16), rand((1, 7, 64), torch.bfloat16)
    got, want, b = compile_run(ProjectedAttention(), (xq, xk, xv), torch_bits=False)
    q, k, v = xq.view(1, 7, 4, 32)[0], xk.view(1, 7, 2, 32)[0], xv.view(1, 7, 2, 32)[0]
    lib = sk.attention(q, k, v, torch.arange(7))
    assert_bitwise(got, (lib.transpose(0, 1).unsqueeze(0), lib.reshape(1, 7, -1)))
    assert [g.stride() for g in got] == [w.stride() for w in want]  # torch's output is laid out as q
    attn_close(got[1], want[1], torch.bfloat16)
    assert ATTENTION in in_programs(b) and copies(b) == ([], [])


class ScopedLayer(torch.nn.Module):
    """transformers' attention core in a super-kernel scope."""

    def forward(self, xq, xk, xv):
        with super_kernel("attn"):
            q = xq.view(1, 5, 4, 32).transpose(1, 2)
            k = xk.view(1, 5, 1, 32).transpose(1, 2)
            v = xv.view(1, 5, 1, 32).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return o.transpose(1, 2).reshape(1, 5, -1) * 2


def test_scoped_attention_is_one_super_kernel():
    xq, xk, xv = rand((1, 5, 128), torch.float32), rand((1, 5, 32), torch.float32), rand((1, 5, 32), torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing runs in torch inside the scope: no split
        got, want, b = compile_run(ScopedLayer(), (xq, xk, xv), torch_bits=False)
    lib = sk.attention(xq.view(5, 4, 32), xk.view(5, 1, 32), xv.view(5, 1, 32), torch.arange(5))
    assert_bitwise(got, lib.reshape(1, 5, -1) * 2)
    attn_close(got, want, torch.float32)
    plan = b.graphs()[-1].plan
    assert [torch_nodes for _, torch_nodes in plan.stages] == [[]], plan.describe()
    (program,) = b.programs()
    assert program.stats["n_super_kernels"] == 1


class CachePrefix(torch.nn.Module):
    """k and v the first S rows of a longer head-major cache buffer."""

    def forward(self, q, k_buf, v_buf, s: int):
        return F.scaled_dot_product_attention(q, k_buf[:, :, :s], v_buf[:, :, :s])


def test_sdpa_against_a_cache_prefix():
    q, k_buf, v_buf = inputs(4, 4, 1, 16, 64, torch.float32)
    got, want, b = compile_run(CachePrefix(), (q, k_buf, v_buf, 11), torch_bits=False)
    assert_bitwise(got, library_attention(q, k_buf[:, :, :11], v_buf[:, :, :11], torch.tensor([10])))
    attn_close(got, want, torch.float32)
    assert ATTENTION in in_programs(b) and [len(c) for c in copies(b)] == [2, 0]  # k and v made token-major


def test_sdpa_under_inference_mode_and_dynamic_shapes():
    model = Attention(False)
    b = superkernel.get_backend(superkernel.CompilerConfig(executor="interp", torch_bits=False))
    compiled = torch.compile(model, backend=b, fullgraph=True, dynamic=True)
    with torch.inference_mode():
        for s in (9, 10, 13):
            q, k, v = inputs(4, 2, 1, s, 64, torch.bfloat16)
            got = compiled(q, k, v)
            assert_bitwise(got, library_attention(q, k, v, torch.tensor([s - 1])).transpose(1, 2).reshape(1, 1, -1))
    assert ATTENTION in in_programs(b)


class StridedHeadDim(torch.nn.Module):
    """q stored [1, T, D, H]: its head dim strided, which the flash kernel
    does not take (torch decomposes sdpa into bmm and softmax)."""

    def forward(self, q, k, v):
        q = q.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Flash(torch.nn.Module):
    """The ATen op itself, its logsumexp read."""

    def forward(self, q, k, v):
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)
        return out, lse


STAYS = {
    "float mask": (Attention(False), (1, 4, 6, 6, 64), lambda: (rand((6, 6), torch.float32),)),
    "bool mask": (Attention(False), (1, 4, 6, 6, 64), lambda: (torch.ones(6, 6, dtype=torch.bool).tril(),)),
    "dropout": (Attention(True, dropout_p=0.25), (1, 4, 6, 6, 64), lambda: ()),
    "batch 2": (Attention(True), (2, 4, 6, 6, 64), lambda: ()),
    "head dim 20": (Attention(True), (1, 4, 6, 6, 20), lambda: ()),
    "causal T > S": (Attention(True), (1, 4, 7, 5, 64), lambda: ()),
    "logsumexp read": (Flash(), (1, 4, 6, 6, 64), lambda: ()),
    "q's head dim strided": (StridedHeadDim(), (1, 4, 6, 6, 64), lambda: ()),
}


@pytest.mark.parametrize("name", list(STAYS))
def test_what_the_library_does_not_compute_stays_in_torch(name):
    model, (batch, h, t, s, d), extra = STAYS[name]
    q, k, v = rand((batch, h, t, d), torch.float32), rand((batch, h, s, d), torch.float32), rand(
        (batch, h, s, d), torch.float32)
    args = (q, k, v) + extra()
    torch.manual_seed(3)  # dropout: the same random numbers eager and compiled
    with torch.no_grad():
        want = model(*args)
    b = superkernel.get_backend(superkernel.CompilerConfig(executor="interp", torch_bits=False))
    torch.manual_seed(3)
    with torch.no_grad():
        got = torch.compile(model, backend=b, fullgraph=True)(*args)
    assert_bitwise(got, want)
    assert ATTENTION not in in_programs(b)


# ---- softmax ----------------------------------------------------------------


class Softmax(torch.nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, self.dim), F.softmax(x * 2, dim=self.dim)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softmax_runs_as_the_librarys(dtype):
    x = rand((3, 5, 37), dtype, 8.0)
    got, want, b = compile_run(Softmax(), (x,), torch_bits=False)
    assert_bitwise(got, (sk.softmax(x), sk.softmax(x * 2)))
    for g, w in zip(got, (torch.softmax(x.float(), -1), torch.softmax((x * 2).float(), -1))):
        close(g, w, SOFTMAX_TOL[dtype])
    assert SOFTMAX in in_programs(b)
    got, want, b = compile_run(Softmax(), (x,), torch_bits=True)
    assert_bitwise(got, want)
    assert SOFTMAX not in in_programs(b) and MUL in in_programs(b)  # x * 2 is exact: mapped


def test_softmax_over_another_dim_stays_in_torch():
    x = rand((6, 40), torch.float32, 8.0)
    got, want, b = compile_run(Softmax(dim=0), (x,), torch_bits=False)
    assert_bitwise(got, want)
    assert SOFTMAX not in in_programs(b)


def test_export_maps_softmax_with_torch_bits_false():
    x = rand((4, 50), torch.float32, 8.0)
    model = Softmax()
    exported = superkernel.export(model, [x], compiler_config=superkernel.CompilerConfig(torch_bits=False))
    assert_bitwise(exported(x), (sk.softmax(x), sk.softmax(x * 2)))
    assert exported.programs
    default = superkernel.export(model, [x])
    with torch.no_grad():
        assert_bitwise(default(x), model(x))


# ---- the setting ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_torch_bits_takes_a_bool(value):
    with pytest.raises(TypeError, match="CompilerConfig.torch_bits: expected a bool"):
        superkernel.CompilerConfig(torch_bits=value)
    config = superkernel.CompilerConfig()
    config.torch_bits = value
    with pytest.raises(TypeError, match="CompilerConfig.torch_bits"):
        superkernel.get_backend(config)


def test_torch_bits_default_and_repr():
    assert superkernel.CompilerConfig().torch_bits is True
    assert "torch_bits=False" in repr(superkernel.CompilerConfig(torch_bits=False))
