"""superkernel.optimize(model): each MoE block of a transformers model as one super kernel.

    report = superkernel.optimize(model, quantize=None | "w8a8", options="")
    print(report)            # what was replaced, what was left and why

A model of a family the library builds whole (superkernel.model.families())
runs whole in the library instead (whole_model.py), w8a8 included; what
follows is the per-block path, for the others and with whole_model=False.

Every block that hf_moe_blocks.describe recognizes (its router, its experts
and its shared experts are maths the library has) is replaced by an
`OptimizedMoE` module whose forward is one torch op,
`torch.ops.superkernel.moe_block(x, layer)`: the gate, the routing, the
dispatch, the experts, the shared experts and the combine run as one
program of the library, in one scope (one super kernel). The library
builds it (`superkernel.MoEBlock`, sk_moe_block in superkernel_model.h)
with the builder of its whole models' MoE layers, from the block's
description and its weights: this module only translates one into the
other. The program has a run-time token count: one program serves
prefill and decode, and a token's output does not depend on the batch it
is in. The op has a fake kernel, so `torch.compile` with any backend
compiles the rest of the model around it, and `superkernel.export` runs it
as it is.

quantize="w8a8": the routed and shared experts' weights are quantized by
the library per output channel when optimize runs (scale = max |w| / 127,
q = rint(w / scale) clipped to ±127, as a whole model's w8a8), the
activations per row at run time. The block's own modules stay either way
(state_dict and save_pretrained are unchanged): the program borrows their
weights, or with w8a8 holds their int8 copies. The experts are held once
in memory, packed; torch's copy (and w8a8's int8 one) moves to a
file-backed mapping whose pages go back to the kernel (_file_weights.py).

Inference only: a forward runs with gradients enabled too, but a backward
through an optimized block raises. A weight changed in
place or replaced is seen at the next call (the program is compiled again);
a write through `.data`, or to tensors made under torch.inference_mode(),
is not: call `module.invalidate()` after one.
"""

import sys
import weakref

import torch

from . import _file_weights, _fork, _omp, hf_experts, hf_moe_blocks
from . import model as _model
from . import torch_ops  # noqa: F401  (superkernel::not_differentiable; the namespace is defined first)

MAX_TOKENS = 4096  # one program's largest token count; more run in chunks
QUANTIZE = (None, "w8a8")
_layers = {}  # layer id -> weakref to its OptimizedMoE
_next_id = [0]
_lock = _fork.lock(sys.modules[__name__], "_lock")


def _take_over(model, quantize, options, max_context, num_threads, torch_threads, report, numerics=None, max_tokens=0):
    """None when the whole model now runs in the library, else why not."""
    from . import whole_model as _whole

    config = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family is None or not hasattr(model, "generate"):
        return "not a transformers causal LM"
    if family not in [f.strip() for f in _model.families().split(",")]:
        return f"model_type {family!r}: the library builds {_model.families()} whole; its MoE blocks run fused"
    if getattr(model, "_superkernel_whole", None) is not None:
        report.left.append(("(whole model)", "already optimized"))
        return None
    try:
        whole = _whole.take_over(model, max_context, num_threads or _omp.team_threads(), options, quantize, numerics,
                                 max_tokens)
    except Exception as exc:  # whatever the library refuses: the model stays as it was
        return f"the library refused it: {exc}"
    report.replaced.append(("(whole model)", whole.about))
    # The model now runs on the library's team. torch still runs generate's
    # sampling between steps, and after each of its parallel ops libgomp's
    # workers spin for milliseconds on the cores the next step needs
    # (measured: 18 against 25 tokens/s decoding a Qwen3-MoE at 2 threads).
    if torch_threads is not None and torch.get_num_threads() != torch_threads:
        report.notes.append(f"torch.set_num_threads({torch_threads}) (was {torch.get_num_threads()}): the model runs "
                            "on the library's team; torch's OpenMP workers would spin on its cores")
        _omp.lower_torch_threads(torch_threads)
    return None


class Report:
    """What optimize replaced (name, description) and left (name, reason)."""

    def __init__(self):
        self.replaced, self.left, self.notes = [], [], []

    def __repr__(self):
        whole = any(name == "(whole model)" for name, _ in self.replaced)
        what = "the whole model" if whole else f"{len(self.replaced)} MoE blocks"
        lines = [f"superkernel.optimize: {what} replaced, {len(self.left)} left"]
        lines += [f"  replaced {name}: {about}" for name, about in self.replaced]
        lines += [f"  left     {name}: {why}" for name, why in self.left]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


@torch.library.custom_op("superkernel::moe_block", mutates_args=())
def moe_block(x: torch.Tensor, layer: int) -> torch.Tensor:
    """One optimized MoE block (layer: its OptimizedMoE's id) on x [..., H]."""
    ref = _layers.get(layer)
    module = ref() if ref is not None else None
    if module is None:
        raise RuntimeError(f"superkernel.moe_block: layer {layer} no longer exists")
    return module.run(x)


@moe_block.register_fake
def _moe_block_fake(x, layer):
    return torch.empty_like(x)


def _no_backward(ctx, grad):
    # raises when the backward runs (torch_grads.py), also where a compiler
    # (AOTAutograd) traces the backward ahead of time
    why = ("superkernel.optimize's MoE block runs inference only: it has no backward (train the model before "
           "optimize, or without it)")
    return torch.ops.superkernel.not_differentiable(grad, grad, "moe_block", "x", why), None


# A forward with gradients enabled runs (model(ids) outside torch.no_grad()
# works as it did); only a backward through the block raises.
moe_block.register_autograd(_no_backward, setup_context=lambda ctx, inputs, output: None)


class OptimizedMoE(torch.nn.Module):
    """A MoE block run as one super kernel (made by superkernel.optimize)."""

    def __init__(self, spec, quantize, options, numerics=None):
        super().__init__()
        self.numerics = numerics
        self.gate = spec.router_module
        if spec.shared:  # under the block's own names: state_dict keeps its keys
            setattr(self, spec.shared_name, getattr(spec.block, spec.shared_name))
            if spec.shared_gate:
                self.shared_expert_gate = spec.block.shared_expert_gate
        self.experts = spec.experts
        self.hidden, self.quantize, self.options = spec.hidden, quantize, options or ""
        self._spec = spec
        for name in ("gate_up_proj", "down_proj"):
            param = getattr(self.experts, name)
            param.data = _file_weights.to_file(param.data)
        spec.block = spec.experts = None  # the old block is not kept
        with _lock:
            self.layer = _next_id[0]
            _next_id[0] += 1
            _layers[self.layer] = weakref.ref(self)
        self._program, self._fingerprint = None, None
        self._compile()
        self.about = self._program.about + (f", numerics {numerics}" if numerics else "")

    @property
    def dtype(self):
        """x's dtype: the experts' (it follows module.to(dtype))."""
        return self.experts.gate_up_proj.dtype

    def forward(self, hidden_states):
        return torch.ops.superkernel.moe_block(hidden_states, self.layer)

    def invalidate(self):
        """Forgets the program: the next call compiles it again."""
        self._program = None

    def _tensors(self):
        """What the program reads, by the block's weight names (sk_moe_block's)."""
        out = {"gate.weight": self.gate.weight}
        if self._spec.router["bias"] is not None:
            out["gate.e_score_correction_bias"] = self.gate.e_score_correction_bias
        for name in ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias"):
            out[f"experts.{name}"] = getattr(self.experts, name, None)
        if self._spec.shared:
            name = self._spec.shared_name
            for p in ("gate_proj", "up_proj", "down_proj"):
                out[f"{name}.{p}.weight"] = getattr(getattr(self, name), p).weight
            if self._spec.shared_gate:
                out["shared_expert_gate.weight"] = self.shared_expert_gate.weight
        return {n: t for n, t in out.items() if t is not None}

    def _current(self):
        return hf_experts.fingerprint(list(self._tensors().items()))

    def _compile(self):
        fingerprint = self._current()
        tensors = self._tensors()
        hf_experts.warn_if_unversioned("superkernel.optimize's MoE block", "module.invalidate()",
                                       list(tensors.items()))
        self._program = _model.MoEBlock(_description(self._spec, self.dtype), tensors, max_tokens=MAX_TOKENS,
                                        num_threads=_omp.team_threads(), options=self.options,
                                        quantize=self.quantize, numerics=self.numerics)
        self._fingerprint = fingerprint
        for name in ("gate_up_proj", "down_proj"):
            _file_weights.page_out(getattr(self.experts, name))

    def run(self, x):
        if x.shape[-1] != self.hidden or x.dtype != self.dtype:
            raise ValueError(f"superkernel.moe_block: x {tuple(x.shape)} {x.dtype}; expected [..., {self.hidden}] "
                             f"{self.dtype}")
        if self._program is None or self._fingerprint != self._current():
            with _lock:
                self._compile()
        rows = x.reshape(-1, self.hidden).contiguous()
        return self._program.run_into(rows, torch.empty_like(rows)).view(x.shape)


def _description(spec, dtype):
    """The block's maths (hf_moe_blocks.describe's BlockSpec) as sk_moe_block's description."""
    r = spec.router
    return {
        "dtype": str(dtype).replace("torch.", ""), "hidden_size": spec.hidden, "num_experts": spec.experts_count,
        "num_experts_per_tok": r["k"], "moe_intermediate_size": spec.inter,
        "router": "sigmoid" if r["kind"] == "sigmoid" else "softmax", "norm_topk_prob": bool(r["renorm"]),
        "router_logits_fp32": bool(r["logits_fp32"]), "router_weights_rounded": bool(r["cast_weights"]),
        "n_group": r["groups"], "topk_group": r["k_group"],
        "routed_scaling_factor": float(r["scaling"]), "shared_intermediate_size": spec.shared_inter,
        "shared_prefix": spec.shared_name or "shared_experts", "shared_gate": bool(spec.shared_gate),
        "experts_transposed": bool(spec.transposed),
    }


def _blocks(model):
    """(name, module) of the candidate MoE blocks: modules with an
    `experts` module of transformers' experts interface (not inside
    another candidate)."""
    taken = []
    for name, mod in model.named_modules():
        if any(name.startswith(p + ".") for p in taken):
            continue
        if hasattr(getattr(mod, "experts", None), "gate_up_proj"):
            taken.append(name)
            yield name, mod


def optimize(model, quantize=None, options="", whole_model=True, max_context=0, num_threads=None, torch_threads=1,
             numerics=None, max_tokens=0):
    """Takes a transformers causal LM of a family the library builds over
    whole (whole_model.py: its forward runs in the library, generate()
    unchanged; max_context: each sequence's KV cache rows, 0: the config's
    max_position_embeddings up to 4096; max_tokens: the most tokens one
    program run takes, longer prompts run in chunks of it (the same bits),
    0: the library's 512; num_threads: the team, None:
    torch.get_num_threads(); quantize="w8a8": every linear layer int8, the
    LM head included; torch_threads: torch's intra-op threads once the
    model runs in the library, 1 by default so that torch's OpenMP workers
    do not spin on the team's cores, None: left as they are; the library's
    later default teams keep the count torch had before); otherwise, or with whole_model=False, replaces each
    MoE block the library can run by an OptimizedMoE (in place; w8a8: its
    routed experts int8). numerics: the programs' bf16 contract, None
    ($SK_NUMERICS, else "default"), "default" or "amx" (AMX-BF16's sums:
    its rate on CPUs that have it; docs/ops.md, "Numerics"). Returns a
    Report of what it replaced and left."""
    from .program import parse_numerics
    from .schema import validate_options

    parse_numerics(numerics, "superkernel.optimize")
    if quantize not in QUANTIZE:
        raise ValueError(f"superkernel.optimize: quantize={quantize!r}; expected None or 'w8a8'")
    if torch_threads is not None and (not isinstance(torch_threads, int) or isinstance(torch_threads, bool)
                                      or torch_threads < 1):
        raise ValueError(f"superkernel.optimize: torch_threads={torch_threads!r}; expected None or an int >= 1")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"superkernel.optimize: expected a torch.nn.Module, got {type(model).__name__}")
    if options:
        validate_options(options)
    report = Report()
    if whole_model:
        why = _take_over(model, quantize, options, max_context, num_threads, torch_threads, report, numerics, max_tokens)
        if why is None:
            return report
        report.left.append(("(whole model)", why))
    for name, block in list(_blocks(model)):
        if isinstance(block, OptimizedMoE):
            report.left.append((name, "already optimized"))
            continue
        spec = hf_moe_blocks.describe(block)
        if isinstance(spec, str):
            report.left.append((name, spec))
            continue
        spec.router_module = block.gate
        try:
            new = OptimizedMoE(spec, quantize, options, numerics)
        except Exception as exc:  # whatever the library refuses: the block stays as it was
            report.left.append((name, f"the library refused it: {exc}"))
            continue
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, new)
        report.replaced.append((name, new.about))
    if report.replaced:
        _omp.warn_if_spinning("optimize's per-block path")
    return report
