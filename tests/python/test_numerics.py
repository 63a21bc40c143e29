"""numerics= in the package (docs/ops.md, "Numerics"): Graph.compile,
Model and optimize take "default" or "amx" (None: $SK_NUMERICS, else
default) and name the contract in use; under "amx" bf16 products follow
AMX-BF16's sums on every executor (TDPBF16PS where the CPU has it, its
emulation elsewhere), a whole model's rows stay their own, and a bad name
is an error naming it."""

import pytest
import torch
import transformers

import superkernel
from superkernel import Graph
from superkernel.errors import InvalidArgumentError

from test_whole_model import COMMON, _prompts


def _linear(numerics, executor="default"):
    """y = x @ w.T in bf16 for x [1, 4] and w = ones [1, 4]."""
    g = Graph()
    x = g.add_input("x", "bf16", [1, 4])
    (y,) = g.add_op("linear", {"x": x, "weight": g.add_constant("w", torch.ones(1, 4, dtype=torch.bfloat16))})
    g.mark_output(y, "y")
    return g.compile(executor=executor, numerics=numerics)


# x = [2^24, 1, -2^24, 1]: the default contract's one chain gives 0 (each 1
# is lost against 2^24), the AMX contract's even and odd chains 0 + 2.
X = torch.tensor([[2.0**24, 1.0, -(2.0**24), 1.0]], dtype=torch.bfloat16)


@pytest.mark.parametrize("executor", ["eager", "reference", "jit"])
def test_the_contracts_differ_as_defined(executor):
    for numerics, want in ((None, 0.0), ("default", 0.0), ("amx", 2.0)):
        prog = _linear(numerics, executor)
        assert prog.numerics == (numerics or "default") and prog.stats["numerics"] == prog.numerics
        assert f"numerics {prog.numerics}" in prog.describe()
        (y,) = prog.run({"x": X})
        assert float(y[0, 0]) == want, (executor, numerics)


def test_the_environment_decides_when_unset(monkeypatch):
    monkeypatch.setenv("SK_NUMERICS", "amx")
    assert _linear(None).numerics == "amx"
    assert _linear("default").numerics == "default"  # an explicit choice wins
    monkeypatch.setenv("SK_NUMERICS", "fast")
    with pytest.raises(InvalidArgumentError, match="SK_NUMERICS=fast"):
        _linear(None)


@pytest.mark.parametrize("bad", ["AMX", "fp32", 2, True])
def test_bad_names_are_refused(bad):
    with pytest.raises(InvalidArgumentError, match="numerics"):
        _linear(bad)
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**COMMON)).eval()
    with pytest.raises(InvalidArgumentError, match="numerics"):
        superkernel.optimize(hf, numerics=bad)


@pytest.mark.parametrize("kind", ["qwen3_moe", "llama"])
def test_a_whole_model_under_amx(kind):
    """optimize(numerics="amx"): the model runs whole under the contract;
    its logits are near the default contract's (both are exact sums of
    the same bf16 products, rounded differently), and a padded row of a
    batch gives the bits it gives alone."""
    from test_whole_model import _model

    hf = _model(kind, torch.bfloat16)
    ids, mask = _prompts()
    base = superkernel.Model(hf.config, hf.state_dict(), max_context=32, numerics="default")
    amx = superkernel.Model(hf.config, hf.state_dict(), max_context=32, numerics="amx")
    want = base.sequence().forward(ids[0]).float()
    got = amx.sequence().forward(ids[0]).float()
    assert got.shape == want.shape
    assert (got - want).abs().max() <= 0.05 * want.abs().max()
    report = superkernel.optimize(hf, max_context=32, numerics="amx")
    assert [name for name, _ in report.replaced] == ["(whole model)"], report
    out = hf.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False)
    alone = hf.generate(ids[1:, 3:], max_new_tokens=6, do_sample=False)
    assert torch.equal(out[1, 3:], alone[0])
