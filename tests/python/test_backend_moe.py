"""The backend on stock MoE blocks (superkernel/backend/moe.py): a
super-kernel scope around one of transformers' MoE blocks, compiled with
backend="superkernel", runs it as superkernel.optimize's fused layer (the
same bits as an optimized copy of the model), without changing the model;
work around the block in the scope is still partitioned; a block the
library cannot run is left to the partitioner as before."""

import warnings

import pytest
import torch

import superkernel
from superkernel.scope import super_kernel

transformers = pytest.importorskip("transformers")
from hf_tiny import tiny  # noqa: E402


class Scoped(torch.nn.Module):
    def __init__(self, block, scale=None):
        super().__init__()
        self.block, self.scale = block, scale

    def forward(self, x):
        with super_kernel("moe"):
            y = self.block(x)
            if self.scale is not None:
                y = y * self.scale + x
        return y


def fused_nodes(backend):
    return [n for g in backend.graphs() for n in g.gm.graph.nodes if "moe_block" in str(n.target)]


@pytest.mark.parametrize("family", ["qwen3", "deepseek_v3", "mixtral"])
def test_scoped_block_runs_as_the_fused_layer(family):
    model, optimized = tiny(family), tiny(family)
    superkernel.optimize(optimized, whole_model=False)
    block = model.model.layers[1].mlp
    cls = type(block)
    x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(4))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # no split scope, no fallback
        got = torch.compile(Scoped(block), backend=superkernel.get_backend(), fullgraph=True)(x)
        want = optimized.model.layers[1].mlp(x)
        eager = block(x)
    assert torch.equal(got, want)
    torch.testing.assert_close(got, eager, rtol=1e-4, atol=1e-5)
    assert type(model.model.layers[1].mlp) is cls  # the model is not changed


def test_work_around_the_block_is_still_partitioned():
    model, optimized = tiny("qwen3"), tiny("qwen3")
    superkernel.optimize(optimized, whole_model=False)
    x = torch.randn(1, 3, 64)
    b = superkernel.get_backend()
    with torch.no_grad():
        got = torch.compile(Scoped(model.model.layers[0].mlp, 2.0), backend=b, fullgraph=True)(x)
        want = optimized.model.layers[0].mlp(x) * 2.0 + x
    assert torch.equal(got, want)
    assert len(b.programs()) == 1  # the mul and add: one library program
    assert len(fused_nodes(b)) == 1


def test_a_block_the_library_cannot_run_is_partitioned_as_before():
    model = tiny("qwen3")
    block = model.model.layers[0].mlp

    class ChangedRouter(type(block.gate)):
        def forward(self, hidden_states):  # code the library does not know: its maths is not Qwen3's for sure
            return super().forward(hidden_states)

    block.gate.__class__ = ChangedRouter
    x = torch.randn(1, 4, 64)
    b = superkernel.get_backend()
    with torch.no_grad(), pytest.warns(UserWarning, match="splits the scope"):
        got = torch.compile(Scoped(block), backend=b, fullgraph=True)(x)
    torch.testing.assert_close(got, block(x), rtol=1e-4, atol=1e-5)
    assert not fused_nodes(b)
