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
program of the library, in one scope (one super kernel), like
`sk run moe-layer`. The program has a run-time token count: one program
serves prefill and decode, and a token's output does not depend on the
batch it is in. The op has a fake kernel, so `torch.compile` with any
backend compiles the rest of the model around it, and `superkernel.export`
runs it as it is.

quantize="w8a8": the routed experts' weights are quantized per output
channel when optimize runs (scale = max |w| / 127, q = rint(w / scale)
clipped to ±127, as `moe-layer:...:int8` does), the activations per row
at run time (moe_init_routing's dynamic int8); the int8 weights replace the
block's bf16 ones (the experts module is dropped). Without it the block's
own modules stay (state_dict and save_pretrained are unchanged) and the
program borrows their weights. Either way the experts are held once in
memory, packed; torch's copy moves to a file-backed mapping whose pages go
back to the kernel (_file_weights.py).

Inference only: a forward runs with gradients enabled too, but a backward
through an optimized block raises. A weight changed in
place or replaced is seen at the next call (the program is compiled again);
a write through `.data`, or to tensors made under torch.inference_mode(),
is not: call `module.invalidate()` after one.
"""

import sys
import weakref

import torch

from . import _file_weights, _fork, _omp, hf_experts, hf_moe_blocks, int8_experts
from . import torch_ops  # noqa: F401  (superkernel::not_differentiable; the namespace is defined first)
from .graph import Graph
from .team import shared_team

MAX_TOKENS = 4096  # one program's largest token count; more run in chunks
QUANTIZE = (None, "w8a8")
_layers = {}  # layer id -> weakref to its OptimizedMoE
_next_id = [0]
_lock = _fork.lock(sys.modules[__name__], "_lock")


def _take_over(model, quantize, options, max_context, num_threads, torch_threads, report, numerics=None, max_tokens=0):
    """None when the whole model now runs in the library, else why not."""
    from . import model as _model, whole_model as _whole

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
        if spec.shared:
            self.shared_experts = spec.block.shared_experts
        self.hidden, self.quantize, self.options = spec.hidden, quantize, options or ""
        self.about = spec.about() + (", w8a8 experts" if quantize else "") + (f", numerics {numerics}" if numerics else "")
        self._spec = spec
        self._dtype = spec.dtype  # x's and y's (w8a8: the dtype the block had)
        if quantize:
            up, up_scale = _quantize_channels(spec.experts.gate_up_proj, spec.transposed)
            down, down_scale = _quantize_channels(spec.experts.down_proj, spec.transposed)
            for name, t in (("w_up", up), ("w_up_scale", up_scale), ("w_down", down), ("w_down_scale", down_scale)):
                self.register_buffer(name, _file_weights.to_file(t))
        else:
            self.experts = spec.experts
            for name in ("gate_up_proj", "down_proj"):
                param = getattr(self.experts, name)
                param.data = _file_weights.to_file(param.data)
        spec.block = spec.experts = None  # the old block (w8a8: its bf16 experts) is not kept
        with _lock:
            self.layer = _next_id[0]
            _next_id[0] += 1
            _layers[self.layer] = weakref.ref(self)
        self._program, self._fingerprint = None, None
        self._compile()

    @property
    def dtype(self):
        """x's dtype: the experts' (it follows module.to(dtype) without w8a8)."""
        return self._dtype if self.quantize else self.experts.gate_up_proj.dtype

    def forward(self, hidden_states):
        return torch.ops.superkernel.moe_block(hidden_states, self.layer)

    def invalidate(self):
        """Forgets the program: the next call compiles it again."""
        self._program = None

    def _tensors(self):
        """What the program reads: (name, tensor) pairs."""
        out = [("gate", self.gate.weight)]
        if self._spec.router["bias"] is not None:
            out.append(("bias", self.gate.e_score_correction_bias))
        if self.quantize:
            out += [(n, getattr(self, n)) for n in ("w_up", "w_up_scale", "w_down", "w_down_scale")]
        else:
            out += [(n, getattr(self.experts, n, None)) for n in ("gate_up_proj", "down_proj", "gate_up_proj_bias",
                                                                  "down_proj_bias")]
        if self._spec.shared:
            out += [(f"shared_{p}", getattr(self.shared_experts, p).weight) for p in ("gate_proj", "up_proj",
                                                                                     "down_proj")]
        return [(n, t) for n, t in out if t is not None]

    def _current(self):
        return hf_experts.fingerprint(self._tensors())

    def _compile(self):
        fingerprint = self._current()
        hf_experts.warn_if_unversioned("superkernel.optimize's MoE block", "module.invalidate()", self._tensors())
        self._program = _build(self, dict(self._tensors()))
        self._fingerprint = fingerprint
        for name in ("w_up", "w_down") if self.quantize else ("gate_up_proj", "down_proj"):
            _file_weights.page_out(getattr(self if self.quantize else self.experts, name))

    def run(self, x):
        if x.shape[-1] != self.hidden or x.dtype != self.dtype:
            raise ValueError(f"superkernel.moe_block: x {tuple(x.shape)} {x.dtype}; expected [..., {self.hidden}] "
                             f"{self.dtype}")
        if self._program is None or self._fingerprint != self._current():
            with _lock:
                self._compile()
        rows = x.reshape(-1, self.hidden).contiguous()
        y = torch.empty_like(rows)
        for t0 in range(0, rows.shape[0], MAX_TOKENS):  # rows are independent: chunks give the same bits
            t1 = min(rows.shape[0], t0 + MAX_TOKENS)
            self._program._run_pointers([rows[t0:t1].data_ptr()], [y[t0:t1].data_ptr()], tokens=t1 - t0)
        return y.view(x.shape)


def _quantize_channels(w, transposed):
    """Per-output-channel int8 of experts' weights [E, N, K] (transformers'
    layout; [E, K, N] when transposed): (q [E, K, N] int8, scale [E, N] fp32)."""
    wf = w.detach().float()
    if not transposed:
        wf = wf.transpose(1, 2)  # [E, K, N]
    amax = wf.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
    q = torch.round(wf / scale[:, None, :]).clamp_(-127, 127).to(torch.int8)
    return q.contiguous(), scale.contiguous()


def _build(m, t):
    """The block's program from the tensors t (name -> tensor)."""
    spec, r = m._spec, m._spec.router
    dt = m.dtype
    g = Graph()
    g.set_max_tokens(MAX_TOKENS)
    keep = []  # tensors the program borrows: alive as long as it is

    def const(name, tensor):
        tensor = tensor.detach().contiguous()
        keep.append(tensor)
        return g.add_constant(name, tensor, borrow=True)

    from .dtypes import to_dtype

    x = g.add_input("x", to_dtype(dt), (None, m.hidden))
    e = spec.experts_count
    with g.scope("moe", m.options):
        # Router: the logits as the router computes them (in x's dtype, or in
        # fp32), then the gating in fp32.
        if r["logits_fp32"]:
            (xf,) = g.add_op("cast", {"x": x}, {"dtype": to_dtype("fp32")})
            (logits,) = g.add_op("linear", {"x": xf, "weight": const("gate", t["gate"].float())})
        else:
            (lg,) = g.add_op("linear", {"x": x, "weight": const("gate", t["gate"].to(dt))})
            (logits,) = g.add_op("cast", {"x": lg}, {"dtype": to_dtype("fp32")})
        if r["kind"] in ("softmax", "softmax_fp32w"):
            weights, idx = g.add_op("moe_gating_topk_softmax", {"x": logits},
                                    {"k": r["k"], "renorm": int(r["renorm"])})[:2]
        else:
            bias = const("bias", t["bias"].float()) if r["bias"] is not None else None
            sigmoid = r["kind"] == "sigmoid"
            grouped = r["groups"] > 1 and r["k_group"] < r["groups"]
            weights, idx = g.add_op("moe_gating_topk", {"x": logits, "bias": bias}, {
                "k": r["k"], "k_group": r["k_group"] if grouped else 1, "group_count": r["groups"] if grouped else 1,
                "group_select_mode": int(sigmoid), "norm_type": int(sigmoid), "renorm": int(r["renorm"]),
                "routed_scaling_factor": r["scaling"], "eps": 1e-20})[:2]
        if r["cast_weights"]:
            (weights,) = g.add_op("cast", {"x": weights}, {"dtype": to_dtype(dt)})
        shared = None
        if spec.shared:
            (sg,) = g.add_op("linear", {"x": x, "weight": const("shared_gate", t["shared_gate_proj"])})
            (su,) = g.add_op("linear", {"x": x, "weight": const("shared_up", t["shared_up_proj"])})
            (sh,) = g.add_op("concat", {"x": [sg, su]}, {"dim": -1})
            (sa,) = g.add_op("swiglu", {"x": sh})
            (shared,) = g.add_op("linear", {"x": sa, "weight": const("shared_down", t["shared_down_proj"])})
        if m.quantize:
            names = ("w_up", "w_up_scale", "w_down", "w_down_scale")
            out, row_map = int8_experts.add_experts(g, x, idx, e, *(const(n, t[n]) for n in names),
                                                    out_dtype=to_dtype(dt))
        else:
            rows, row_map, ends, _ = g.add_op("moe_init_routing", {"x": x, "expert_idx": idx}, {"expert_num": e})
            mm = {"group_type": 0, "split_item": 3, "transpose_weight": 0 if spec.transposed else 1}
            bias_up = const("up_bias", t["gate_up_proj_bias"]) if "gate_up_proj_bias" in t else None
            bias_down = const("down_bias", t["down_proj_bias"]) if "down_proj_bias" in t else None
            (up,) = g.add_op("grouped_matmul", {"x": rows, "weight": const("gate_up", t["gate_up_proj"]),
                                                "bias": bias_up, "group_list": ends}, mm)
            (act,) = g.add_op("swiglu", {"x": up})
            (out,) = g.add_op("grouped_matmul", {"x": act, "weight": const("down", t["down_proj"]),
                                                 "bias": bias_down, "group_list": ends}, mm)
        (y,) = g.add_op("moe_finalize_routing", {"expanded_permuted_rows": out, "expanded_src_to_dst_row": row_map,
                                                 "skip2": shared, "scales": weights}, {"drop_pad_mode": 2})
    g.mark_output(y, "y")
    program = g.compile(shared_team(_omp.team_threads()), numerics=getattr(m, "numerics", None))
    program._keep = keep
    return program


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
