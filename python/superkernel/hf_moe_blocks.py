"""Which of transformers' MoE blocks the library can run as one op, and how.

`describe(block)` reads a block (a module with a router `gate` and an
`experts` module of transformers' experts interface) and returns a
`BlockSpec` of its maths, or the reason it cannot:

- the router's forward must be, word for word, one of the routers below
  (transformers' modular models copy these into many families: Qwen2/3-MoE,
  OLMoE, FlexOlmo, GLM-4-MoE, ... share them); its maths is then known:

    softmax       Qwen3-MoE's: logits = linear(x, W) in x's dtype, softmax in
                  fp32, top-k, renormalized when norm_topk_prob, the weights
                  rounded to the logits' dtype
    softmax_fp32w Mixtral's: the same, always renormalized, fp32 weights
    deepseek_v2   fp32 logits, softmax, greedy or group-limited (max per
                  group) top-k, times routed_scaling_factor
    sigmoid       DeepSeek-V3's: fp32 logits, sigmoid, correction bias, the
                  top-2 sum of each group, renormalized (+1e-20), times
                  routed_scaling_factor

- the block's forward must be one of the known blocks (the experts alone,
  or plus DeepSeek's shared-experts MLP added to the output, or plus
  Qwen2-MoE's shared expert scaled by sigmoid(shared_expert_gate(x))), and
  its experts module one that hf_experts can run (SiLU gate, no
  post-expert norm, ...).

Matching code rather than class names is what makes a renamed copy of a
known router count (and a changed one not): the maths is the code's.
"""

import functools
import inspect
import textwrap

_ROUTERS = {  # kind: (module, class) of the reference router
    "softmax": ("qwen3_moe", "Qwen3MoeTopKRouter"),
    "softmax_fp32w": ("mixtral", "MixtralTopKRouter"),
    "deepseek_v2": ("deepseek_v2", "DeepseekV2TopkRouter"),
    "sigmoid": ("deepseek_v3", "DeepseekV3TopkRouter"),
}
_BLOCKS = {  # (module, class): its shared experts' module name, "" for none
    ("qwen3_moe", "Qwen3MoeSparseMoeBlock"): "",
    ("olmoe", "OlmoeSparseMoeBlock"): "",
    ("mixtral", "MixtralSparseMoeBlock"): "",
    ("deepseek_v3", "DeepseekV3MoE"): "shared_experts",
    ("qwen2_moe", "Qwen2MoeSparseMoeBlock"): "shared_expert",  # times sigmoid(shared_expert_gate(x))
}
_GATED = {"shared_expert"}  # the shared experts whose output a sigmoid gate scales
_SHARED_MLP = ("deepseek_v3", "DeepseekV3MLP")


class BlockSpec:
    """A block's maths: its router, its experts module, its shared MLP."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


@functools.lru_cache(maxsize=None)
def _reference_source(module, cls):
    import importlib

    try:
        mod = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
        return _source(getattr(mod, cls).forward)
    except Exception:  # an older or newer transformers without it: nothing matches it
        return None


@functools.lru_cache(maxsize=None)
def _source(fn):
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None


def _matches(obj, ref):
    src = _source(type(obj).forward)
    return src is not None and src == _reference_source(*ref)


def _router_spec(gate, experts_count, hidden):
    """The router's maths as a dict, or a reason string."""
    kind = next((k for k, ref in _ROUTERS.items() if _matches(gate, ref)), None)
    if kind is None:
        return f"router {type(gate).__name__}: its code is none of the routers the library implements"
    weight = getattr(gate, "weight", None)
    if weight is None or tuple(weight.shape) != (experts_count, hidden):
        return f"router {type(gate).__name__}: a weight of shape [{experts_count}, {hidden}] expected"
    spec = {"kind": kind, "k": int(gate.top_k), "weight": weight, "logits_fp32": kind in ("deepseek_v2", "sigmoid"),
            "renorm": True, "scaling": 1.0, "groups": 1, "k_group": 1, "bias": None, "cast_weights": kind == "softmax"}
    if kind == "softmax":
        spec["renorm"] = bool(gate.norm_topk_prob)
    elif kind == "deepseek_v2":
        spec["renorm"], spec["scaling"] = False, float(gate.routed_scaling_factor)
        if gate.topk_method == "group_limited_greedy":
            spec["groups"], spec["k_group"] = int(gate.num_group), int(gate.topk_group)
        elif gate.topk_method != "greedy":
            return f"router {type(gate).__name__}: topk_method {gate.topk_method!r}"
    elif kind == "sigmoid":
        if not gate.norm_topk_prob:  # the library's sigmoid gating always renormalizes
            return f"router {type(gate).__name__}: sigmoid scores without norm_topk_prob are not supported"
        spec["scaling"], spec["bias"] = float(gate.routed_scaling_factor), gate.e_score_correction_bias
        spec["groups"], spec["k_group"] = int(gate.num_group), int(gate.topk_group)
        if experts_count // spec["groups"] <= 2 and spec["groups"] > 1:
            return f"router {type(gate).__name__}: groups of at most 2 experts"
    if not 1 <= spec["k"] <= experts_count:
        return f"router {type(gate).__name__}: top_k {spec['k']} of {experts_count} experts"
    return spec


def _shared_spec(mlp, hidden):
    """(gate, up, down) Linear modules of a shared-experts MLP, or a reason."""
    if not _matches(mlp, _SHARED_MLP):
        return f"shared experts {type(mlp).__name__}: its code is not DeepSeek's gate/up/down MLP"
    if type(mlp.act_fn).__name__ not in ("SiLU", "SiLUActivation"):
        return f"shared experts: activation {type(mlp.act_fn).__name__} (the library runs SiLU)"
    lins = (mlp.gate_proj, mlp.up_proj, mlp.down_proj)
    if any(type(m).__name__ != "Linear" for m in lins):
        return "shared experts: projections that are not nn.Linear"
    if any(m.bias is not None for m in lins):
        return "shared experts with biases are not supported"
    if mlp.gate_proj.in_features != hidden:
        return "shared experts of another hidden size"
    return lins


def describe(block, x_example=None):
    """A BlockSpec of block, or a string saying why the library cannot run it."""
    import torch

    from . import hf_experts

    experts, gate = getattr(block, "experts", None), getattr(block, "gate", None)
    if experts is None or not hasattr(experts, "gate_up_proj"):
        return "not a MoE block of transformers' experts interface"
    if gate is None:
        return f"block {type(block).__name__}: no router named gate"
    shared_block = next((s for ref, s in _BLOCKS.items() if _matches(block, ref)), None)
    if shared_block is None:
        return f"block {type(block).__name__}: its forward is none of the MoE blocks the library implements"
    weight = experts.gate_up_proj
    probe = x_example if x_example is not None else torch.empty(0, weight.shape[-1], dtype=weight.dtype)
    reason = hf_experts._unsupported(experts, probe, gradients=False)
    if reason is not None:
        return f"experts {type(experts).__name__}: {reason}"
    transposed = bool(getattr(experts, "is_transposed", False))
    e = weight.shape[0]
    hidden = experts.down_proj.shape[-1 if transposed else -2]
    inter = weight.shape[-1 if transposed else -2] // 2
    router = _router_spec(gate, e, hidden)
    if isinstance(router, str):
        return router
    shared, gated = None, shared_block in _GATED
    if shared_block:
        shared = _shared_spec(getattr(block, shared_block), hidden)
        if isinstance(shared, str):
            return shared
        gate_lin = getattr(block, "shared_expert_gate", None) if gated else None
        if gated and (type(gate_lin).__name__ != "Linear" or gate_lin.bias is not None
                      or tuple(gate_lin.weight.shape) != (1, hidden)):
            return "shared expert gate: an nn.Linear(hidden, 1) without bias expected"
    return BlockSpec(block=block, experts=experts, router=router, shared=shared, hidden=hidden, inter=inter,
                     experts_count=e, transposed=transposed, has_bias=bool(getattr(experts, "has_bias", False)),
                     dtype=weight.dtype, shared_inter=shared[0].out_features if shared else 0,
                     shared_name=shared_block, shared_gate=gated)
