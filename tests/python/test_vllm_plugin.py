"""superkernel.vllm, the vLLM plugin (python/superkernel/vllm.py).

Without vLLM (make test): the plugin does nothing unless SUPERKERNEL_VLLM=1,
says once that vLLM is missing, and on a stand-in of vLLM's CPU experts
class (its two methods, its config's fields) takes the layers it supports —
their outputs against a plain torch reference of the experts, a token's
output the same bits alone and in a batch — and leaves the others on the
class's own methods.

With vLLM (its environment: bench/vllm/make_venv.sh, then
`build/vllm-venv/bin/python -m pytest tests/python/test_vllm_plugin.py`):
vllm.LLM on tiny random Qwen3-MoE and Mixtral checkpoints gives the same
greedy tokens with and without the plugin (their log-probabilities within
bf16's tolerance), the plugin's line in the log says it ran, and tensor
parallelism over two processes runs with it on."""

import json
import logging
import os
import subprocess
import sys
import types

import pytest
import torch

from superkernel import vllm as plugin

HERE = os.path.dirname(os.path.abspath(__file__))


def _have_vllm():
    try:
        import vllm  # noqa: F401
    except Exception:
        return False
    return True


# ---- the plugin's logic, on a stand-in of vLLM's experts class ----------------


def _config(**over):
    cfg = dict(moe_parallel_config=types.SimpleNamespace(use_ep=False), activation=types.SimpleNamespace(value="silu"),
               has_bias=False, swiglu_limit=None, swiglu_alpha=None, swiglu_beta=None, is_lora_enabled=False,
               in_dtype=torch.bfloat16, experts_per_token=2)
    cfg.update(over)
    return types.SimpleNamespace(**cfg)


def _stand_in(int8=False, only_here=False):
    """A fresh class with vLLM's CPU experts' two methods (each records its call)."""

    class Experts:
        def __init__(self, cfg):
            self.moe_config, self.calls = cfg, []

        def process_weights_after_loading(self, layer):
            self.calls.append("vllm process")

        def apply(self, output, hidden_states, w1, w2, topk_weights, topk_ids, activation, global_num_experts,
                  expert_map, a1q_scale, a2_scale, workspace13, workspace2, expert_tokens_meta,
                  apply_router_weight_on_input):
            self.calls.append("vllm apply")

    plugin._patch(Experts, int8=int8, only_here=only_here)
    return Experts


def _layer(e=4, h=64, i=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    w13 = torch.nn.Parameter((torch.randn(e, 2 * i, h, generator=g) * 0.2).bfloat16(), requires_grad=False)
    w2 = torch.nn.Parameter((torch.randn(e, h, i, generator=g) * 0.2).bfloat16(), requires_grad=False)
    return types.SimpleNamespace(w13_weight=w13, w2_weight=w2)


def _routing(t, e, k, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(t)]).to(torch.int32)
    w = torch.softmax(torch.randn(t, k, generator=g), -1)
    return ids, w


def _apply(experts, layer, x, ids, w, on_input=False):
    out = torch.empty_like(x)
    experts.apply(out, x, layer.w13_weight, layer.w2_weight, w, ids, None, 0, None, None, None, None, None, None,
                  on_input)
    return out


def _reference(layer, x, ids, w):
    """The experts in fp32 from the same bf16 numbers (vLLM's w13: gate rows, then up)."""
    w13, w2 = layer.w13_weight.float(), layer.w2_weight.float()
    i = w2.shape[-1]
    y = torch.zeros(x.shape, dtype=torch.float32)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            gu = w13[e] @ x[t].float()
            y[t] += w[t, j] * (w2[e] @ (torch.nn.functional.silu(gu[:i]) * gu[i:]))
    return y


def test_nothing_happens_without_the_variable(monkeypatch):
    monkeypatch.delenv(plugin.ENV, raising=False)
    assert not plugin.enabled()
    assert plugin.register() is None
    for value in ("1", "true", "ON"):
        monkeypatch.setenv(plugin.ENV, value)
        assert plugin.enabled()
    monkeypatch.setenv(plugin.ENV, "0")
    assert not plugin.enabled()


@pytest.mark.skipif(_have_vllm(), reason="vLLM is installed: its absence cannot be tested here")
def test_without_vllm_it_says_so_once(monkeypatch, caplog):
    monkeypatch.setenv(plugin.ENV, "1")
    plugin._said.clear()
    with caplog.at_level(logging.INFO, logger="vllm.superkernel"):
        plugin.register()
        plugin.register()
    lines = [r.getMessage() for r in caplog.records if "not found" in r.getMessage()]
    assert len(lines) == 1 and "vLLM's own path" in lines[0], lines


def test_a_supported_layer_runs_on_the_library():
    Experts = _stand_in()
    experts, layer = Experts(_config()), _layer()
    experts.process_weights_after_loading(layer)
    assert experts.calls == [] and experts._superkernel is not None  # vLLM's repacking skipped
    x = (torch.randn(9, 64, generator=torch.Generator().manual_seed(2))).bfloat16()
    ids, w = _routing(9, 4, 2)
    got = _apply(experts, layer, x, ids, w)
    assert experts.calls == [] and got.dtype == torch.bfloat16
    want = _reference(layer, x, ids, w)
    assert (got.float() - want).abs().max() <= 0.02 * want.abs().max(), (got, want)
    # a token's output is the same bits alone and in a batch
    alone = _apply(experts, layer, x[3:4].clone(), ids[3:4].clone(), w[3:4].clone())
    assert torch.equal(alone.view(torch.int16), got[3:4].view(torch.int16))
    # vLLM already scaled the input (top-1 apply_router_weight_on_input): weights of 1
    ones = _apply(experts, layer, x, ids, w, on_input=True)
    assert torch.equal(ones.view(torch.int16), _apply(experts, layer, x, ids, torch.ones_like(w)).view(torch.int16))
    assert _apply(experts, layer, x[:0], ids[:0], w[:0]).shape == (0, 64)


def test_expert_parallel_ranks_run_their_own_experts():
    """Expert parallelism: the rank holds 4 of the router's 8 experts (vLLM's
    round-robin placement, rank 1: global 1, 3, 5, 7); its output is the sum
    over the pairs routed to them, the others add nothing, and the two
    ranks' outputs add up to the whole layer's."""
    g = torch.Generator().manual_seed(5)
    whole = _layer(e=8, seed=3)
    x = torch.randn(11, 64, generator=g).bfloat16()
    ids, w = _routing(11, 8, 3, seed=4)
    mine = {0: [0, 2, 4, 6], 1: [1, 3, 5, 7]}
    outputs = []
    Experts = _stand_in()
    for rank in (0, 1):
        expert_map = torch.full((8,), -1, dtype=torch.int32)
        expert_map[mine[rank]] = torch.arange(4, dtype=torch.int32)
        layer = types.SimpleNamespace(w13_weight=torch.nn.Parameter(whole.w13_weight[mine[rank]].clone(), False),
                                      w2_weight=torch.nn.Parameter(whole.w2_weight[mine[rank]].clone(), False),
                                      expert_map=expert_map)
        experts = Experts(_config(moe_parallel_config=types.SimpleNamespace(use_ep=True), experts_per_token=3))
        experts.process_weights_after_loading(layer)
        assert experts.calls == [] and experts._superkernel is not None
        out = torch.empty_like(x)  # vLLM hands apply the global ids and its expert_map
        experts.apply(out, x, None, None, w, ids, None, 8, expert_map, None, None, None, None, None, False)
        here = torch.isin(ids, torch.tensor(mine[rank]))
        want = _reference(whole, x, ids, w * here)  # only this rank's pairs
        assert (out.float() - want).abs().max() <= 0.02 * want.abs().max(), (rank, out, want)
        # without the map in apply (None), the one of the layer at load
        again = torch.empty_like(x)
        experts.apply(again, x, None, None, w, ids, None, 8, None, None, None, None, None, None, False)
        assert torch.equal(again.view(torch.int16), out.view(torch.int16))
        outputs.append(out.float())
    full = _reference(whole, x, ids, w)
    assert (outputs[0] + outputs[1] - full).abs().max() <= 0.02 * full.abs().max()


def _int8_layer(e=4, h=64, i=32, seed=0):
    """vLLM's W8A8 layer: int8 weights [E, out, in], fp32 scales [E, out, 1]."""
    g = torch.Generator().manual_seed(seed)
    w13 = torch.randint(-127, 128, (e, 2 * i, h), generator=g, dtype=torch.int8)
    w2 = torch.randint(-127, 128, (e, h, i), generator=g, dtype=torch.int8)
    s13 = torch.rand(e, 2 * i, 1, generator=g) * 2e-3 + 1e-3
    s2 = torch.rand(e, h, 1, generator=g) * 2e-3 + 1e-3
    p = lambda t: torch.nn.Parameter(t, requires_grad=False)  # noqa: E731
    return types.SimpleNamespace(w13_weight=p(w13), w2_weight=p(w2), w13_weight_scale=p(s13), w2_weight_scale=p(s2))


def _int8_reference(layer, x, ids, w):
    """W8A8 in fp32: each row to int8 (amax / 127), int8 products summed
    exactly, dequantized; SwiGLU; its rows to int8 again; the down product."""
    def quant(v):
        s = v.abs().amax(-1, keepdim=True).clamp_min(1e-30) / 127
        return torch.round(v / s).clamp(-127, 127), s

    w13, w2 = layer.w13_weight.double(), layer.w2_weight.double()
    s13, s2 = layer.w13_weight_scale.double()[..., 0], layer.w2_weight_scale.double()[..., 0]
    i = w2.shape[-1]
    y = torch.zeros(x.shape, dtype=torch.float64)
    xq, xs = quant(x.double())
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            gu = (w13[e] @ xq[t]) * xs[t] * s13[e]
            a = torch.nn.functional.silu(gu[:i]) * gu[i:]
            aq, as_ = quant(a)
            y[t] += float(w[t, j]) * ((w2[e] @ aq) * as_ * s2[e])
    return y


def test_an_int8_layer_runs_on_the_library():
    """vLLM's W8A8 int8 experts: the program's output against W8A8 in fp32,
    vLLM's parameters left as views of the same values, a token's output
    the same bits alone and in a batch, expert parallelism's ids mapped."""
    Experts = _stand_in(int8=True)
    experts, layer = Experts(_config()), _int8_layer()
    w13, w2 = layer.w13_weight.clone(), layer.w2_weight.clone()
    experts.process_weights_after_loading(layer)
    assert experts.calls == [] and experts._superkernel is not None
    assert torch.equal(layer.w13_weight, w13) and torch.equal(layer.w2_weight, w2)  # the same values, in place
    x = torch.randn(9, 64, generator=torch.Generator().manual_seed(2)).bfloat16()
    ids, w = _routing(9, 4, 2)
    got = _apply(experts, layer, x, ids, w)
    want = _int8_reference(layer, x, ids, w)
    assert got.dtype == torch.bfloat16 and (got.double() - want).abs().max() <= 0.02 * want.abs().max(), (got, want)
    alone = _apply(experts, layer, x[3:4].clone(), ids[3:4].clone(), w[3:4].clone())
    assert torch.equal(alone.view(torch.int16), got[3:4].view(torch.int16))
    # expert parallelism: this rank holds global experts 4..7 as its 0..3
    ep = Experts(_config(moe_parallel_config=types.SimpleNamespace(use_ep=True)))
    layer_ep = _int8_layer()
    layer_ep.expert_map = torch.tensor([-1, -1, -1, -1, 0, 1, 2, 3], dtype=torch.int32)
    ep.process_weights_after_loading(layer_ep)
    out = torch.empty_like(x)
    ep.apply(out, x, None, None, w, ids + 4, None, 8, layer_ep.expert_map, None, None, None, None, None, False)
    assert torch.equal(out.view(torch.int16), got.view(torch.int16))  # every pair here: the same bits


def test_an_int8_layer_the_library_refuses():
    """Where vLLM has a kernel of its own the layer keeps it; where it has
    none (no AMX), the load fails with the reason, never while serving."""
    layer = _int8_layer()
    layer.w2_weight_scale = None
    Experts = _stand_in(int8=True)
    experts = Experts(_config())
    experts.process_weights_after_loading(layer)
    assert experts.calls == ["vllm process"]
    Only = _stand_in(int8=True, only_here=True)
    with pytest.raises(RuntimeError, match="no int8 MoE kernel for this CPU"):
        Only(_config()).process_weights_after_loading(layer)


@pytest.mark.parametrize("change, reason", [
    (dict(moe_parallel_config=types.SimpleNamespace(use_ep=True)), "expert parallelism"),
    (dict(activation=types.SimpleNamespace(value="gelu")), "activation"),
    (dict(has_bias=True), "biases"),
    (dict(swiglu_limit=7.0), "clamped"),
    (dict(is_lora_enabled=True), "LoRA"),
])
def test_an_unsupported_layer_keeps_vllms_path(change, reason, caplog):
    Experts = _stand_in()
    experts, layer = Experts(_config(**change)), _layer()
    plugin._said.clear()
    with caplog.at_level(logging.INFO, logger="vllm.superkernel"):
        experts.process_weights_after_loading(layer)
    assert experts.calls == ["vllm process"] and getattr(experts, "_superkernel", None) is None
    assert any(reason in r.getMessage() and "keeps vLLM's path" in r.getMessage() for r in caplog.records)
    x = torch.zeros(2, 64, dtype=torch.bfloat16)
    _apply(experts, layer, x, *_routing(2, 4, 2))
    assert experts.calls == ["vllm process", "vllm apply"]


@pytest.mark.parametrize("environ, own, want", [
    ({"GOMP_CPU_AFFINITY": "0 1"}, {0}, [0, 1]),  # what vLLM sets with torch's libgomp preloaded
    ({"GOMP_CPU_AFFINITY": "4-7"}, {5}, [5, 4]),  # the caller's CPU first (it is OpenMP thread 0)
    ({"GOMP_CPU_AFFINITY": "0-6:2,9"}, {2}, [2, 0]),  # the first threads' CPUs
    ({"KMP_AFFINITY": "granularity=fine,explicit,proclist=[8,9]"}, {0, 1}, [8, 9]),  # Intel's OpenMP
    ({"OMP_PLACES": "{2,3}"}, {3}, [3, 2]),  # any other OpenMP: one place of the rank's CPUs
    ({"OMP_PLACES": "{0:2}"}, {0}, [0, 1]),
    ({"OMP_PLACES": "{0},{1}"}, {0}, [0, 1]),
    ({"OMP_PLACES": "cores"}, {0}, None),  # abstract names: not ours to resolve
    ({"GOMP_CPU_AFFINITY": "0"}, {0}, None),  # fewer CPUs than threads
    ({"GOMP_CPU_AFFINITY": "zero one"}, {0}, None),
    ({}, {0}, None),  # VLLM_CPU_OMP_THREADS_BIND=nobind: nothing set
])
def test_the_ranks_cpus_come_from_vllms_binding(environ, own, want):
    assert plugin._rank_cpus(2, environ, own) == want


def test_the_team_sits_beside_vllms_threads(monkeypatch):
    """With vLLM's binding in the environment, the layers' programs run on a
    team placed on those CPUs (worker c beside OpenMP thread c), not on the
    CPU the calling thread is bound to."""
    cpus = sorted(os.sched_getaffinity(0))
    threads = torch.get_num_threads()
    if len(cpus) < threads:
        pytest.skip(f"SKIPPED: {len(cpus)} CPUs for {threads} torch threads")
    monkeypatch.setenv("GOMP_CPU_AFFINITY", " ".join(map(str, cpus[:threads])))
    Experts = _stand_in()
    experts, layer = Experts(_config()), _layer()
    experts.process_weights_after_loading(layer)
    team = experts._superkernel.program.team
    assert team._cpus is not None and sorted(team._cpus) == cpus[:threads], team
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(2)).bfloat16()
    ids, w = _routing(3, 4, 2)
    want = _reference(layer, x, ids, w)  # bf16 against fp32: as test_a_supported_layer_runs_on_the_library
    assert (_apply(experts, layer, x, ids, w).float() - want).abs().max() <= 0.02 * want.abs().max()
    monkeypatch.delenv("GOMP_CPU_AFFINITY")
    assert plugin._team()._cpus is None  # no binding known: the shared team of torch's size


def test_workers_started_later_wait_passively():
    environ = {}
    plugin._passive_workers(environ)
    assert environ == {"OMP_WAIT_POLICY": "PASSIVE"}
    for chosen in ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "10000"}, {"KMP_BLOCKTIME": "5"}):
        environ = dict(chosen)
        plugin._passive_workers(environ)
        assert environ == chosen  # the user's choice stays


def test_mismatched_or_other_weights_keep_vllms_path():
    Experts = _stand_in()
    for layer in (types.SimpleNamespace(w13_weight=torch.zeros(4, 64, 64), w2_weight=torch.zeros(4, 64, 16)),
                  types.SimpleNamespace(w13_weight=torch.zeros(4, 64, 64, dtype=torch.int8),
                                        w2_weight=torch.zeros(4, 64, 32, dtype=torch.int8))):
        experts = Experts(_config())
        experts.process_weights_after_loading(layer)
        assert experts.calls == ["vllm process"]


# ---- vLLM itself --------------------------------------------------------------

needs_vllm = pytest.mark.skipif(not _have_vllm(), reason="SKIPPED: vLLM is not installed (its environment: "
                                "bench/vllm/make_venv.sh, then build/vllm-venv/bin/python -m pytest this file)")


def _checkpoint(family, path):
    transformers = pytest.importorskip("transformers")
    # head_dim 32 and sizes in multiples of 32: what vLLM's CPU attention and AMX experts take
    common = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                  head_dim=32, max_position_embeddings=512, tie_word_embeddings=False)
    if family == "qwen3_moe":
        cfg = transformers.Qwen3MoeConfig(**common, intermediate_size=128, moe_intermediate_size=32, num_experts=4,
                                          num_experts_per_tok=2, norm_topk_prob=True)
        cls = transformers.Qwen3MoeForCausalLM
    else:
        cfg = transformers.MixtralConfig(**common, intermediate_size=64, num_local_experts=4, num_experts_per_tok=2)
        cls = transformers.MixtralForCausalLM
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():  # larger weights than the init's: logits that rank tokens clearly
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.mul_(4.0)
    model.to(torch.bfloat16).save_pretrained(path)
    return str(path)


def _int8_checkpoint(path):
    """The tiny Qwen3-MoE with its experts in compressed-tensors' W8A8 int8
    (bench/vllm/make_w8a8.py), and the same weights dequantized to bf16:
    (int8 dir, bf16 dir)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "vllm"))
    import make_w8a8

    src = _checkpoint("qwen3_moe", path / "bf16")
    make_w8a8.convert(src, str(path / "w8a8"), str(path / "dequantized"))
    return str(path / "w8a8"), str(path / "dequantized")


def _generate(model, tokens, plugin_on, tp=1, ep=False):
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", PYTHONUNBUFFERED="1")
    env.pop(plugin.ENV, None)
    if plugin_on:
        env[plugin.ENV] = "1"
    if tp > 1:  # one NUMA node: each rank's cores named (vLLM binds one node a rank by itself)
        cpus = sorted(os.sched_getaffinity(0))
        per = len(cpus) // tp
        env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(",".join(map(str, cpus[r * per:(r + 1) * per])) for r in range(tp))
    args = [sys.executable, os.path.join(HERE, "vllm_generate.py"), model, str(tokens), str(tp)] + ["ep"] * ep
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    assert r.returncode == 0 and lines, f"exit {r.returncode}:\n{r.stderr[-4000:]}"
    return json.loads(lines[0][len("RESULT "):]), r.stdout + r.stderr  # (vLLM logs to stdout)


def _close(got, want, near_tie=0.0):
    """The same greedy ids, and each token's log-probability within 5% (the
    two paths round the experts' intermediate sums to bf16 differently, and
    the differences add up over the layers: 2.4% measured). near_tie: a
    sequence may part from want's where want's token led the next one by
    at most this much (the paths' rounding may rank a near tie otherwise;
    after it the sequences differ and are not compared)."""
    for g, w in zip(got, want):
        for n, (a, b) in enumerate(zip(g["ids"], w["ids"])):
            if a != b:
                assert w["margins"][n] <= near_tie, (n, g, w)
                break
            assert abs(g["logprobs"][n] - w["logprobs"][n]) <= 0.05 * max(1.0, abs(w["logprobs"][n])), (n, g, w)


@needs_vllm
@pytest.mark.parametrize("family", ["qwen3_moe", "mixtral"])
def test_vllm_gives_the_same_tokens_with_the_plugin(family, tmp_path):
    model = _checkpoint(family, tmp_path / family)
    want, off_log = _generate(model, 16, plugin_on=False)
    got, on_log = _generate(model, 16, plugin_on=True)
    assert "run on superkernel" in on_log and "run on superkernel" not in off_log, on_log[-3000:]
    _close(got, want)


@needs_vllm
def test_vllm_tensor_parallel_runs_with_the_plugin(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("SKIPPED: tensor parallelism 2 needs 2 CPUs")
    model = _checkpoint("qwen3_moe", tmp_path / "qwen3_moe")
    want, _ = _generate(model, 8, plugin_on=False, tp=2)
    got, log = _generate(model, 8, plugin_on=True, tp=2)
    assert log.count("run on superkernel") == 2, log[-3000:]  # one line from each rank
    _close(got, want)


@needs_vllm
def test_vllm_expert_parallel_runs_with_the_plugin(tmp_path):
    """Expert parallelism over two ranks: each runs its 2 of the 4 experts
    on the library; the tokens are those of tensor parallelism without it."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("SKIPPED: expert parallelism over 2 ranks needs 2 CPUs")
    model = _checkpoint("qwen3_moe", tmp_path / "qwen3_moe")
    want, _ = _generate(model, 8, plugin_on=False, tp=2)
    got, log = _generate(model, 8, plugin_on=True, tp=2, ep=True)
    assert log.count("run on superkernel") == 2 and "keeps vLLM's path" not in log, log[-3000:]
    # the ranks' sums are added in another order than tensor parallelism's
    _close(got, want, near_tie=0.05)


@needs_vllm
def test_vllm_runs_int8_experts_with_the_plugin(tmp_path):
    """A compressed-tensors W8A8 int8 checkpoint (vLLM's CPUExpertsInt8; on
    a CPU without AMX vLLM has no kernel for it and the plugin's is the
    only one) gives the greedy tokens of the same weights dequantized to
    bf16 (the activations' int8 rounding within the tolerance)."""
    int8, bf16 = _int8_checkpoint(tmp_path)
    want, _ = _generate(bf16, 16, plugin_on=False)
    got, log = _generate(int8, 16, plugin_on=True)
    assert "CPUExpertsInt8 run on superkernel" in log and "keeps vLLM's path" not in log, log[-3000:]
    _close(got, want)
