"""superkernel.custom: a user's C kernel library, compiled here with cc,
registered from Python and used as torch.ops.superkernel.<name> and as a
graph op inside a scope next to built-in ops; errors are clear and leave
the process usable."""

import ctypes
import uuid

import numpy as np
import pytest
import torch
from _helpers import assert_bits_equal, compile_c
from torch._subclasses.fake_tensor import FakeTensorMode

import superkernel
from superkernel import custom

SOURCE = r"""
#include <math.h>
#include <string.h>
#include "superkernel.h"

static int64_t numel(sk_kernel_ctx *ctx, int i) {
  int rank;
  int64_t shape[SK_MAX_RANK], n = 1;
  if (sk_kernel_arg_info(ctx, i, NULL, &rank, shape) != SK_STATUS_OK) return 0;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* y = alpha * a + b, alpha = *(float *)user; args {a, b, y} */
void axpb(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const float *a = args[0], *b = args[1];
  float *y = args[2];
  float alpha = *(const float *)sk_kernel_user(ctx);
  int64_t n = numel(ctx, 0);
  for (int64_t i = n * block / n_blocks; i < n * (block + 1) / n_blocks; i++) y[i] = alpha * a[i] + b[i];
}

sk_status axpb_infer(const sk_dtype *dt, const int *rk, const int64_t *const *sh, size_t n_in, sk_dtype *odt,
                     int *ork, int64_t (*osh)[SK_MAX_RANK], size_t *n_out, void *user) {
  (void)user;
  if (n_in != 2) return SK_STATUS_INVALID_ARGUMENT;
  if (dt[0] != SK_FP32 || dt[1] != SK_FP32) return SK_STATUS_INVALID_DTYPE;
  if (rk[0] != rk[1] || memcmp(sh[0], sh[1], sizeof(int64_t) * (size_t)rk[0]) != 0) return SK_STATUS_INVALID_SHAPE;
  odt[0] = SK_FP32;
  ork[0] = rk[0];
  memcpy(osh[0], sh[0], sizeof(int64_t) * (size_t)rk[0]);
  *n_out = 1;
  return SK_STATUS_OK;
}

/* pos = max(x, 0), neg = min(x, 0): two outputs; args {x, pos, neg}; per-core workspace used as scratch */
void split_sign(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  const float *x = args[0];
  float *pos = args[1], *neg = args[2], *tmp = ws;
  int64_t n = numel(ctx, 0);
  for (int64_t i = n * block / n_blocks; i < n * (block + 1) / n_blocks; i++) {
    tmp[0] = x[i];
    pos[i] = tmp[0] > 0 ? tmp[0] : 0.0f;
    neg[i] = tmp[0] < 0 ? tmp[0] : 0.0f;
  }
}

sk_status split_sign_infer(const sk_dtype *dt, const int *rk, const int64_t *const *sh, size_t n_in,
                           sk_dtype *odt, int *ork, int64_t (*osh)[SK_MAX_RANK], size_t *n_out, void *user) {
  (void)user;
  if (n_in != 1 || dt[0] != SK_FP32) return SK_STATUS_INVALID_DTYPE;
  for (int o = 0; o < 2; o++) {
    odt[o] = SK_FP32;
    ork[o] = rk[0];
    memcpy(osh[o], sh[0], sizeof(int64_t) * (size_t)rk[0]);
  }
  *n_out = 2;
  return SK_STATUS_OK;
}

/* y = -x for int32, no infer: one output like x[0]; args {x, y} */
void negate_i32(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const int32_t *x = args[0];
  int32_t *y = args[1];
  int64_t n = numel(ctx, 0);
  for (int64_t i = n * block / n_blocks; i < n * (block + 1) / n_blocks; i++) y[i] = (int32_t)(0u - (uint32_t)x[i]);
}
"""

ALPHA = ctypes.c_float(1.5)


def unique(name):
    return f"{name}_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def libpath(tmp_path_factory):
    return compile_c(SOURCE, str(tmp_path_factory.mktemp("userlib")), "libtestkernels.so")


@pytest.fixture(scope="module")
def kernels(libpath):
    lib = custom.load_library(libpath)  # a CDLL works as well as a path
    return {
        "axpb": custom.register_kernel(lib, entry="axpb", name=unique("axpb"), block_count=5, n_params=3,
                                       infer="axpb_infer", user=ALPHA),
        "split_sign": custom.register_kernel(libpath, entry="split_sign", name=unique("split_sign"), type="VECTOR",
                                             block_count=3, n_params=3, workspace_bytes=64,
                                             infer="split_sign_infer"),
        "negate": custom.register_kernel(libpath, entry="negate_i32", name=unique("negate"), type="cube",
                                         block_count=4, n_params=2),
    }


GEN = torch.Generator().manual_seed(3)


def rand(*shape):
    return torch.rand(shape, generator=GEN) * 4 - 2


def test_eager_torch_op_equals_numpy(kernels):
    a, b = rand(7, 33), rand(7, 33)
    k = kernels["axpb"]
    op = getattr(torch.ops.superkernel, k.name)
    (y,) = op([a, b])
    want = np.float32(ALPHA.value) * a.numpy() + b.numpy()
    assert y.shape == a.shape and y.dtype == torch.float32
    assert np.array_equal(y.numpy(), want)
    assert torch.equal(k(a, b), y)  # the CustomKernel call form

    pos, neg = kernels["split_sign"](a)
    assert np.array_equal(pos.numpy(), np.maximum(a.numpy(), 0)) and np.array_equal(neg.numpy(), np.minimum(a.numpy(), 0))

    x = torch.tensor([[0, 1, -5], [2**31 - 1, -(2**31), 7]], dtype=torch.int32)
    assert torch.equal(kernels["negate"](x), torch.tensor([[0, -1, 5], [-(2**31 - 1), -(2**31), -7]], dtype=torch.int32))


def test_fake_mode_uses_the_c_infer(kernels):
    op = getattr(torch.ops.superkernel, kernels["split_sign"].name)
    with FakeTensorMode() as mode:
        pos, neg = op([mode.from_tensor(rand(4, 5))])
        assert (pos.shape, neg.shape, pos.dtype) == ((4, 5), (4, 5), torch.float32)
        with pytest.raises(superkernel.InvalidShapeError, match=kernels["axpb"].name):
            getattr(torch.ops.superkernel, kernels["axpb"].name)([mode.from_tensor(rand(3)), mode.from_tensor(rand(4))])
    with pytest.raises(superkernel.InvalidDtypeError, match="infer function rejected"):
        op([torch.ones(3, dtype=torch.float16)])


def scoped_graph(kernels, shape):
    """square -> axpb(sq, b) -> split_sign -> add(pos, neg) inside scope "sk";
    negate on an int input outside it."""
    g = superkernel.Graph()
    a = g.add_input("a", "fp32", shape)
    b = g.add_input("b", "fp32", shape)
    i = g.add_input("i", "int32", shape)
    with g.scope("sk"):
        (sq,) = g.add_op("square", {"x": a})
        (y,) = g.add_op(kernels["axpb"].name, {"x": [sq, b]})
        pos, neg = g.add_op(kernels["split_sign"].name, {"x": [y]})
        (s,) = g.add_op("mul", {"x": pos, "y": neg})
    (n,) = g.add_op(kernels["negate"].name, {"x": [i]})
    g.mark_output(s, "s")
    g.mark_output(y, "y")
    g.mark_output(n, "n")
    return g


@pytest.mark.parametrize("cores", [1, 2])
def test_graph_scope_executors_bitwise_equal(kernels, cores):
    shape = (37, 29)
    a, b = rand(*shape), rand(*shape)
    i = torch.randint(-1000, 1000, shape, generator=GEN, dtype=torch.int32)
    team = superkernel.Team(num_cores=cores, pin_threads=-1)
    g = scoped_graph(kernels, shape)
    results = {}
    for executor in ("reference", "eager", "interp", "jit"):
        program = g.compile(team, executor=executor)
        stats = program.stats
        if executor in ("interp", "jit"):
            assert stats["n_super_kernels"] == 1, program.describe()
            assert kernels["axpb"].name in program.describe()
        results[executor] = program.run(a, b, i)
        program.close()
    g.close()
    team.close()
    for executor in ("eager", "interp", "jit"):
        assert_bits_equal(results[executor], results["reference"], f"{executor} vs reference")
    y = np.float32(ALPHA.value) * (a.numpy() * a.numpy()) + b.numpy()
    assert np.array_equal(results["eager"][1].numpy(), y)
    assert np.array_equal(results["eager"][0].numpy(), np.maximum(y, 0) * np.minimum(y, 0))
    assert torch.equal(results["eager"][2], -i)


def test_unfusable_kernel_in_a_scope_still_computes(libpath):
    k = custom.register_kernel(libpath, entry="axpb", name=unique("axpb_unfusable"), block_count=2, n_params=3,
                               infer="axpb_infer", user=ALPHA, unfusable=True)
    a, b = rand(8, 8), rand(8, 8)
    g = superkernel.Graph()
    av, bv = g.add_input("a", "fp32", (8, 8)), g.add_input("b", "fp32", (8, 8))
    with g.scope("sk"):
        (sq,) = g.add_op("square", {"x": av})
        (y,) = g.add_op(k.name, {"x": [sq, bv]})
        (z,) = g.add_op("square", {"x": y})
    g.mark_output(z, "z")
    outs = [g.compile(None, executor=ex).run(a, b)[0] for ex in ("eager", "interp")]
    g.close()
    assert torch.equal(outs[0], outs[1])
    assert torch.equal(outs[0], torch.square(ALPHA.value * (a * a) + b))


# ---- errors: clear messages, the process stays usable


def still_usable(libpath):
    k = custom.register_kernel(libpath, entry="negate_i32", name=unique("negate_ok"), block_count=1, n_params=2)
    assert torch.equal(k(torch.tensor([3], dtype=torch.int32)), torch.tensor([-3], dtype=torch.int32))


def test_missing_symbols(libpath):
    with pytest.raises(superkernel.NotFoundError, match="entry symbol 'no_such_kernel' not found"):
        custom.register_kernel(libpath, entry="no_such_kernel", name=unique("missing"), n_params=2)
    with pytest.raises(superkernel.NotFoundError, match="infer symbol 'no_such_infer'"):
        custom.register_kernel(libpath, entry="axpb", name=unique("missing"), n_params=3, infer="no_such_infer")
    still_usable(libpath)


def test_missing_library(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.so"):
        custom.register_kernel(tmp_path / "nope.so", entry="x", name=unique("nolib"), n_params=1)
    (tmp_path / "bad.so").write_text("not an ELF file")
    with pytest.raises(OSError, match="cannot load library"):
        custom.register_kernel(tmp_path / "bad.so", entry="x", name=unique("badlib"), n_params=1)


@pytest.mark.parametrize(
    "fields,culprit",
    [
        ({"block_count": 0}, "block_count"),
        ({"block_count": 2**21}, "block_count"),
        ({"n_params": 300}, "n_params"),
        ({"n_params": -1}, "n_params"),
        ({"barriers_per_block": -1}, "barriers_per_block"),
    ],
)
def test_bad_fields_carry_the_library_message(libpath, fields, culprit):
    name = unique("bad")
    kw = {"block_count": 2, "n_params": 2}
    kw.update(fields)
    with pytest.raises(superkernel.SuperkernelError) as err:
        custom.register_kernel(libpath, entry="negate_i32", name=name, **kw)
    message = str(err.value)
    assert "sk_kernel_register" in message and name in message and culprit in message, message
    # the name was not taken: a correct registration under it works
    k = custom.register_kernel(libpath, entry="negate_i32", name=name, block_count=2, n_params=2)
    assert torch.equal(k(torch.tensor([1], dtype=torch.int32)), torch.tensor([-1], dtype=torch.int32))


def test_bad_type_and_name(libpath):
    with pytest.raises(superkernel.InvalidArgumentError, match="type 'tensor'"):
        custom.register_kernel(libpath, entry="negate_i32", name=unique("t"), type="tensor", n_params=2)
    with pytest.raises(superkernel.SuperkernelError, match="bad name!"):
        custom.register_kernel(libpath, entry="negate_i32", name="bad name!", n_params=2, torch_op=False)
    # '-' and '.' are kernel names for graphs, not torch op names
    dashed = unique("graph-only.v1")
    with pytest.raises(superkernel.InvalidArgumentError, match="not a torch op name"):
        custom.register_kernel(libpath, entry="negate_i32", name=dashed, n_params=2)
    k = custom.register_kernel(libpath, entry="negate_i32", name=dashed, n_params=2, torch_op=False)
    assert k.op is None and superkernel.op_schema(dashed).name == dashed
    still_usable(libpath)


def test_name_clashes(libpath, kernels):
    with pytest.raises(superkernel.InvalidArgumentError, match="already registered"):
        custom.register_kernel(libpath, entry="negate_i32", name=kernels["negate"].name, n_params=2)
    with pytest.raises(superkernel.SuperkernelError, match="square"):
        custom.register_kernel(libpath, entry="negate_i32", name="square", n_params=2)  # a built-in op
    with pytest.raises(superkernel.InvalidArgumentError, match="torch.ops.superkernel.trans_quant_param"):
        custom.register_kernel(libpath, entry="negate_i32", name="trans_quant_param", n_params=2)
    # built-ins untouched, the process usable
    assert torch.equal(torch.ops.superkernel.square(torch.tensor([4.0])), torch.tensor([16.0]))
    still_usable(libpath)


def test_wrong_inputs_at_run_time(kernels):
    op = getattr(torch.ops.superkernel, kernels["axpb"].name)
    with pytest.raises(superkernel.InvalidShapeError, match="infer function rejected"):
        op([rand(3), rand(4)])
    # a strided tensor is taken as torch ops take them (made dense first)
    a, b = rand(4, 3).t(), rand(3, 4)
    (y,) = op([a, b])
    (want,) = op([a.contiguous(), b])
    assert torch.equal(y, want)
    (y,) = op([torch.ones(2), torch.ones(2)])
    assert torch.equal(y, torch.full((2,), ALPHA.value + 1))


def test_n_params_not_matching_the_node(libpath):
    k = custom.register_kernel(libpath, entry="negate_i32", name=unique("negate3"), n_params=3)
    with pytest.raises(superkernel.InvalidArgumentError, match="takes 3 parameters"):
        k(torch.ones(3, dtype=torch.int32))
    still_usable(libpath)
