"""transformers' MoE experts as one super kernel: experts_implementation="superkernel".

transformers (5.x) runs the experts of its MoE families (Qwen2/3-MoE,
DeepSeek-V2/V3, Mixtral, OLMoE, ...) through ``ExpertsInterface``: a
registered function ``f(self, hidden_states [T, H], top_k_index [T, k],
top_k_weights [T, k]) -> [T, H]`` chosen by ``from_pretrained(...,
experts_implementation=KEY)``. ``import superkernel`` registers "superkernel"
there when transformers is importable.

Each experts module then runs as one library program: dispatch by
top_k_index (moe_init_routing), the gate/up grouped matmul, SwiGLU, the down
grouped matmul and the weighted combine (moe_finalize_routing), in one scope.
The program has a run-time token count (one program serves prefill and
decode) and its expert weights are graph constants borrowed from the
module's parameters, read in transformers' ``[E, out, in]`` layout
(``transpose_weight``) and packed once; the parameters' data then moves to
a file-backed mapping whose pages go back to the kernel (_file_weights.py:
one copy of the experts in memory, the packed one); a parameter changed in place or
replaced (its version counter or its address) makes the next call compile
again. A token's output does not depend on the batch it is in. A write
through ``.data`` bumps no version counter, and tensors made under
``torch.inference_mode()`` keep none: after changing such weights in
place, call ``invalidate(module)`` (the next call compiles again).

A module the library cannot run (another activation or gate, a post-expert
norm, expert parallelism, gradients required) runs transformers' own
"grouped_mm" instead, with one warning per module class naming the reason:
never a wrong result, never an exception in the middle of ``generate``.
"""

import sys
import warnings
import weakref

from . import _fork, _omp

KEY = "superkernel"
# The largest token count one program runs at once; a call with more
# tokens runs in chunks of it (rows are independent: the same bits).
MAX_TOKENS = 4096

_warned = set()  # module classes already warned about
_lock = _fork.lock(sys.modules[__name__], "_lock")  # compiles of modules (programs are built once each)
_programs = weakref.WeakKeyDictionary()  # module -> _ExpertsProgram


def register():
    """Registers KEY in transformers' ExpertsInterface; False when
    transformers (or its interface) is not importable."""
    try:
        from transformers.integrations.moe import ExpertsInterface
    except Exception:  # no transformers, or one without the interface: nothing changes
        return False
    ExpertsInterface.register(KEY, experts_forward)
    return True


_MOE_MODULE = "transformers.integrations.moe"


class _AfterImport:
    """A meta path finder that calls `callback()` right after the module
    `name` is imported (once), so `import superkernel` imports neither
    transformers nor torch, and a later import of them still gets what
    superkernel registers there (KEY in transformers' experts interface,
    before any model is built)."""

    def __init__(self, name, callback):
        self.name, self.callback = name, callback

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _AfterImport) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                real = spec.loader.exec_module

                def exec_module(module, _real=real):
                    _real(module)
                    sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
                    self.callback()

                spec.loader.exec_module = exec_module
                return spec
        return None


def after_import(name, callback):
    """callback() now if module `name` is imported already, else right
    after it is (a meta path finder, removed once it has run)."""
    if name in sys.modules:
        callback()
    elif not any(isinstance(f, _AfterImport) and (f.name, f.callback) == (name, callback) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, callback))


def install():
    """Registers KEY now when transformers' experts module is loaded,
    else when it is (import superkernel calls this)."""
    after_import(_MOE_MODULE, register)


def _fallback(module, reason, hidden_states, top_k_index, top_k_weights):
    from transformers.integrations.moe import grouped_mm_experts_forward

    cls = type(module)
    if cls not in _warned:
        _warned.add(cls)
        warnings.warn(
            f"superkernel: {cls.__name__} runs transformers' grouped_mm experts instead: {reason}",
            RuntimeWarning,
            stacklevel=3,
        )
    return grouped_mm_experts_forward(module, hidden_states, top_k_index, top_k_weights)


def _unsupported(module, hidden_states, gradients=True):
    """Why the library cannot run this module's experts, or None
    (gradients: whether the call's need for gradients counts)."""
    import torch
    from transformers.integrations.moe import _default_apply_gate

    if getattr(module, "_is_expert_parallel", False):
        return "expert parallelism"
    if getattr(module, "has_post_expert_norm", False):
        return "a norm after each expert"
    if not getattr(module, "has_gate", True):
        return "experts without a gate (an activation alone) are not supported yet"
    if getattr(type(module), "_apply_gate", _default_apply_gate) is not _default_apply_gate:
        return f"its own gate function {type(module).__name__}._apply_gate (e.g. a clamped SwiGLU)"
    act = getattr(module, "act_fn", None)
    if type(act).__name__ not in ("SiLU", "SiLUActivation"):
        return f"activation {type(act).__name__} (the library runs SiLU: SwiGLU)"
    weight = module.gate_up_proj
    if weight.shape[0] > 1024:
        return f"{weight.shape[0]} experts (the library's grouped_matmul takes at most 1024)"
    params = [getattr(module, n, None) for n in ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias")]
    if any(p is not None and not p.is_contiguous() for p in params):
        return "a parameter that is not contiguous"
    if weight.device.type != "cpu" or hidden_states.device.type != "cpu":
        return "tensors not on the CPU"
    if weight.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"weights of dtype {weight.dtype}"
    if module.down_proj.dtype != weight.dtype:
        return "gate/up and down weights of different dtypes"
    if gradients and torch.is_grad_enabled() and (weight.requires_grad or hidden_states.requires_grad):
        return "gradients are required (the library's ops have none)"
    return None


def fingerprint(named_tensors):
    """What a compiled program depends on: each (name, tensor)'s address,
    shape, dtype and version (in-place changes bump it). Shared with
    moe_optimize's fused blocks."""
    out = []
    for name, t in named_tensors:
        try:
            version = t._version
        except RuntimeError:  # an inference tensor keeps no version: its address only
            version = None
        out.append((name, t.data_ptr(), tuple(t.shape), t.dtype, version))
    return tuple(out)


_warned_inference = set()


def warn_if_unversioned(what, invalidate, named_tensors):
    """Warns once per `what` when a weight compiled in is an inference
    tensor: a change to it in place will not be seen (no version counter)."""
    names = [name for name, t in named_tensors if t is not None and t.is_inference()]
    if names and what not in _warned_inference:
        _warned_inference.add(what)
        warnings.warn(
            f"superkernel: {what}: weights made under torch.inference_mode() ({', '.join(names)}) keep no version "
            f"counter, so a change to them in place (load_state_dict, add_, copy_) is not seen: call {invalidate} "
            "after one, or build the model outside inference_mode",
            RuntimeWarning,
            stacklevel=3,
        )


def _fingerprint(module):
    names = ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias")
    return fingerprint((n, getattr(module, n)) for n in names if getattr(module, n, None) is not None)


class _ExpertsProgram:
    """One module's experts as a program of a run-time token count."""

    def __init__(self, module, x_dtype, top_k, w_dtype, watch_versions=True, max_tokens=MAX_TOKENS, team=None,
                 elsewhere_id=False):
        """elsewhere_id: the id one past the module's last expert means a
        pair whose expert is not here (vLLM's expert parallelism: another
        rank's expert); such pairs are routed nowhere and add nothing."""
        import torch

        from . import _file_weights
        from .dtypes import to_dtype
        from .graph import Graph
        from .team import shared_team

        # One copy in memory: the packed panels; torch's stays readable from
        # a file (_file_weights.py).
        for name in ("gate_up_proj", "down_proj"):
            param = getattr(module, name)
            param.data = _file_weights.to_file(param.data)
        self.fingerprint = _fingerprint(module)
        names = ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias")
        if watch_versions:  # (vLLM's plugin: weights loaded once, never changed in place)
            warn_if_unversioned(type(module).__name__, "superkernel.hf_experts.invalidate(module)",
                                [(n, getattr(module, n, None)) for n in names])
        self.x_dtype, self.top_k, self.w_dtype = x_dtype, top_k, w_dtype
        self.elsewhere_id = elsewhere_id
        transposed = getattr(module, "is_transposed", False)
        experts, hidden = module.gate_up_proj.shape[0], module.down_proj.shape[-1 if transposed else -2]
        self.hidden, self.experts = hidden, experts
        dt = to_dtype(module.gate_up_proj.dtype)
        g = Graph()
        self.max_tokens = max_tokens  # one run's rows; the scratch of a run scales with it
        g.set_max_tokens(max_tokens)
        x = g.add_input("x", dt, (None, hidden))
        idx = g.add_input("top_k_index", "int32", (None, top_k))
        weights = g.add_input("top_k_weights", to_dtype(w_dtype), (None, top_k))
        trans = 0 if transposed else 1
        # The parameters as they are (dense): borrowed, read transposed, packed once.
        self.keep = [module.gate_up_proj.detach(), module.down_proj.detach()]
        gate_up = g.add_constant("gate_up_proj", self.keep[0], borrow=True)
        down = g.add_constant("down_proj", self.keep[1], borrow=True)
        biases = [None, None]
        if getattr(module, "has_bias", False):
            self.keep += [module.gate_up_proj_bias.detach(), module.down_proj_bias.detach()]
            biases = [g.add_constant("gate_up_bias", self.keep[2], borrow=True),
                      g.add_constant("down_bias", self.keep[3], borrow=True)]
        mm = {"group_type": 0, "split_item": 3, "transpose_weight": trans}
        with g.scope("experts"):
            rows, row_map, ends, _ = g.add_op("moe_init_routing", {"x": x, "expert_idx": idx},
                                              routing_attrs(experts, elsewhere_id))
            (up,) = g.add_op("grouped_matmul", {"x": rows, "weight": gate_up, "bias": biases[0], "group_list": ends}, mm)
            # The default gate splits gate | up in halves whatever the layout
            # flag says (an interleaved layout comes with a gate of its own).
            (act,) = g.add_op("swiglu", {"x": up})
            (out,) = g.add_op("grouped_matmul", {"x": act, "weight": down, "bias": biases[1], "group_list": ends}, mm)
            (y,) = g.add_op(
                "moe_finalize_routing",
                {"expanded_permuted_rows": out, "expanded_src_to_dst_row": row_map, "scales": weights},
                {"drop_pad_mode": 2},
            )
        g.mark_output(y, "y")
        self.program = g.compile(team if team is not None else shared_team(_omp.team_threads()))
        for weight in self.keep[:2]:
            _file_weights.page_out(weight)
        self.torch_dtype = module.gate_up_proj.dtype

    def __call__(self, hidden_states, top_k_index, top_k_weights):
        return run_in_chunks(self, hidden_states, top_k_index, top_k_weights)


def routing_attrs(experts, elsewhere_id):
    """moe_init_routing's attributes for a module's experts; elsewhere_id:
    the id `experts` (one past the last) means another rank's expert, a
    pair routed nowhere (active_expert_range)."""
    if elsewhere_id:
        return {"expert_num": experts + 1, "active_expert_range": [0, experts]}
    return {"expert_num": experts}


def run_in_chunks(experts, hidden_states, top_k_index, top_k_weights):
    """experts.program (inputs x, top_k_index, top_k_weights; output y) on
    the tokens, in chunks of at most experts.max_tokens rows (rows are
    independent: the same bits): y [T, experts.hidden] of experts.torch_dtype."""
    import torch

    # dense, and with torch's lazy negative bit resolved: the library
    # reads memory, which holds the values before the negation
    x = hidden_states.to(experts.torch_dtype).resolve_neg().contiguous()
    idx = top_k_index.to(torch.int32).resolve_neg().contiguous()
    w = top_k_weights.resolve_neg().contiguous()
    tokens = x.shape[0]
    y = torch.empty(tokens, experts.hidden, dtype=experts.torch_dtype)
    for t0 in range(0, tokens, experts.max_tokens):
        t1 = min(tokens, t0 + experts.max_tokens)
        parts = (x[t0:t1], idx[t0:t1], w[t0:t1])
        experts.program._run_pointers([p.data_ptr() for p in parts], [y[t0:t1].data_ptr()], tokens=t1 - t0)
    return y


def invalidate(module=None):
    """Forgets the program of module (None: of every module): the next
    call compiles it again from its parameters as they are then."""
    with _lock:
        if module is None:
            _programs.clear()
        else:
            _programs.pop(module, None)


def _program_for(module, hidden_states, top_k_index, top_k_weights):
    """The module's program, compiled at its first call and again when a
    parameter or the call's dtypes changed."""
    import torch

    w_dtype = top_k_weights.dtype if top_k_weights.dtype == torch.float32 else module.gate_up_proj.dtype
    key = (hidden_states.dtype, top_k_index.shape[-1], w_dtype)
    with _lock:
        prog = _programs.get(module)
        if prog is None or prog.fingerprint != _fingerprint(module) or (prog.x_dtype, prog.top_k, prog.w_dtype) != key:
            prog = _programs[module] = _ExpertsProgram(module, *key)
    return prog


def experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """transformers' experts forward (ExpertsInterface) through the library."""
    import torch

    reason = _unsupported(self, hidden_states)
    if reason is not None:
        return _fallback(self, reason, hidden_states, top_k_index, top_k_weights)
    if hidden_states.shape[0] == 0:
        return torch.zeros_like(hidden_states)
    _omp.warn_if_spinning('experts_implementation="superkernel"')
    try:
        prog = _program_for(self, hidden_states, top_k_index, top_k_weights)
    except Exception as e:  # whatever the library refuses: never an exception in the middle of generate
        return _fallback(self, f"the library refused it: {e}", hidden_states, top_k_index, top_k_weights)
    w = top_k_weights if top_k_weights.dtype == prog.w_dtype else top_k_weights.to(prog.w_dtype)
    return prog(hidden_states, top_k_index, w).to(hidden_states.dtype)
