"""superkernel.vllm: a vLLM plugin that runs vLLM's CPU MoE experts on the library.

    pip install superkernel[vllm]          # the entry point (vLLM itself: bench/vllm/make_venv.sh)
    SUPERKERNEL_VLLM=1 vllm serve MODEL    # or LLM(...) in a process with it set

vLLM loads the plugins of its ``vllm.general_plugins`` entry point group in
every process it starts (the front end, the engine core, each worker);
``register`` is ours. Without SUPERKERNEL_VLLM=1 in the environment it
changes nothing. With it, vLLM's CPU experts class
(``CPUUnquantizedExperts``, which its x86 AMX subclass inherits) runs each
MoE layer's experts as one library program: dispatch by the routing vLLM
computed (its ``topk_ids`` and ``topk_weights``), the gate/up grouped
matmul, SwiGLU, the down grouped matmul and the weighted combine, in one
scope (one super kernel), with a run-time token count (one program serves
prefill and decode; a token's output does not depend on its batch). The
program is the one ``experts_implementation="superkernel"`` builds
(hf_experts.py): its weights are vLLM's own ``w13_weight`` [E, 2I, H] and
``w2_weight`` [E, H, I], borrowed and packed once at load, after which
vLLM's copy moves to a file-backed mapping whose pages go back to the
kernel (one copy in memory: the packed one). vLLM's own repacking of those
weights is skipped for a layer the library takes.

W8A8 int8 (compressed-tensors' per-channel weights, per-token dynamic
activations: vLLM's ``CPUExpertsInt8``) runs the same way on the library's
int8 path (int8_experts.py): the int8 weights transposed once into the
library's [E, in, out] (the copy vLLM's parameters then view), the scales
vLLM loaded. vLLM's own kernel for that class needs AMX; on other x86 CPUs
vLLM has none and refuses such a model, so the plugin offers the class
there, and a layer the library cannot run is an error at load.

The programs of a worker's layers share one library team, placed beside
vLLM's OpenMP threads: vLLM binds thread c of a rank to one CPU (the
calling thread too), and the team's worker c is pinned to thread c's CPU
(_team), instead of inheriting the calling thread's one CPU. register()
also sets OMP_WAIT_POLICY=PASSIVE for the processes vLLM starts after it,
so that vLLM's threads do not spin on those CPUs between ops.

Under tensor parallelism each rank holds a slice of every expert's
intermediate dimension and runs it here; under expert parallelism
(enable_expert_parallel) each rank holds whole experts, a subset of the
router's, and its program runs the pairs routed to them (vLLM's expert_map
turns the router's ids into the rank's; a pair of another rank's expert
adds nothing here). vLLM's all-reduce stays vLLM's. A layer the library
does not run — an activation other than SiLU, biases, a clamped or scaled
SwiGLU, LoRA, a dtype other than bf16/fp16/fp32 (or int8 with per-channel
scales) — keeps vLLM's path, with one log line per reason: never an error
in the middle of serving. vLLM's other quantized MoE classes (FP8, MXFP4,
int4) are not touched.
"""

import logging
import os
import re
import threading

ENV = "SUPERKERNEL_VLLM"
# The most tokens one run of a layer's program takes (a step of more runs in
# chunks: rows are independent, the same bits). Each layer's program holds
# scratch for that many tokens' routed rows, and vLLM keeps every layer's
# program at once: 1024 tokens is about 60 MB a Qwen3-30B-A3B layer by the
# rows' sizes (4096: about 240 MB, 2 GB for 8 layers; with a 4 GiB KV cache
# that ran a 23 GiB machine out of memory at a batch of 64).
MAX_TOKENS = 1024
_said = set()  # log lines already written (one per reason a process)
_lock = threading.Lock()


def enabled():
    """Whether SUPERKERNEL_VLLM asks for the plugin (1, true, yes, on)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _say_once(text, level=logging.INFO):
    with _lock:
        if text in _said:
            return
        _said.add(text)
    # Under vLLM's logger, whose handler vLLM sets up in each process; made
    # when first used, once vLLM's logger exists (a child made earlier may
    # stay attached to the root logger, which drops INFO lines).
    logging.getLogger("vllm.superkernel").log(level, "superkernel.vllm: %s", text)


class _Weights:
    """vLLM's expert parameters under the names hf_experts' program reads
    (transformers' fused layout, which is vLLM's: gate rows first)."""

    has_bias = False
    is_transposed = False

    def __init__(self, layer):
        self.gate_up_proj = layer.w13_weight
        self.down_proj = layer.w2_weight


def _id_ranges(text, sep):
    """CPU numbers of "a", "a-b" and "a-b:stride" items split by sep (None:
    whitespace too), in order; None when an item is anything else."""
    out = []
    for item in (text.replace(",", " ").split() if sep is None else text.split(sep)):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+)(?::(\d+))?)?\s*", item)
        if not m:
            return None
        lo, hi, step = int(m[1]), int(m[2] or m[1]), int(m[3] or 1)
        if hi < lo or step < 1:
            return None
        out += range(lo, hi + 1, step)
    return out


def _omp_places(text):
    """OMP_PLACES' CPUs in order: places "{a,b:len:stride,...}" separated by
    commas (vLLM writes one place of the rank's CPUs); None for abstract names."""
    places = re.findall(r"\{([^}]*)\}", text)
    if not places or re.sub(r"\{[^}]*\}", "", text).strip(", ") != "":
        return None
    out = []
    for place in places:
        for item in place.split(","):
            m = re.fullmatch(r"\s*(\d+)(?::(\d+)(?::(-?\d+))?)?\s*", item)
            if not m:
                return None
            start, length, stride = int(m[1]), int(m[2] or 1), int(m[3] or 1)
            out += [start + k * stride for k in range(length)]
    return out


def _rank_cpus(threads, environ=None, own=None):
    """The CPUs vLLM bound this rank's OpenMP threads to, one a thread, the
    calling thread's first: from what its OMPProcessManager sets for the
    worker (GOMP_CPU_AFFINITY with torch's libgomp preloaded, KMP_AFFINITY's
    proclist with Intel's, else OMP_PLACES). None when none is set or
    readable (VLLM_CPU_OMP_THREADS_BIND=nobind), or it has fewer CPUs than
    threads. own: the calling thread's affinity mask."""
    environ = os.environ if environ is None else environ
    cpus = None
    if environ.get("GOMP_CPU_AFFINITY"):
        cpus = _id_ranges(environ["GOMP_CPU_AFFINITY"], None)
    elif "proclist=[" in environ.get("KMP_AFFINITY", ""):
        cpus = _id_ranges(environ["KMP_AFFINITY"].split("proclist=[", 1)[1].split("]", 1)[0], ",")
    elif environ.get("OMP_PLACES"):
        cpus = _omp_places(environ["OMP_PLACES"])
    if cpus is None:
        return None
    cpus = list(dict.fromkeys(cpus))[:threads]  # OpenMP thread i on the i-th (repeats wrap: not ours to place)
    if len(cpus) < threads:
        return None
    own = os.sched_getaffinity(0) if own is None else own
    if len(own) == 1 and next(iter(own)) in cpus:  # the caller is OpenMP thread 0, bound to its CPU
        cpus.remove(next(iter(own)))
        cpus.insert(0, next(iter(own)))
    return cpus


def _team():
    """The team the layers' programs run on: placed beside vLLM's OpenMP
    threads, worker c pinned to the CPU of thread c. vLLM binds the calling
    thread to one CPU, and a worker would otherwise inherit that CPU."""
    import torch

    from .team import shared_team

    threads = torch.get_num_threads()
    cpus = _rank_cpus(threads)
    if cpus is None:
        _say_once("the CPUs of vLLM's OpenMP threads are not known (no GOMP_CPU_AFFINITY, KMP_AFFINITY proclist "
                  "or OMP_PLACES): the library's team is not placed beside them")
    return shared_team(threads, cpus)


def _unsupported(experts, layer, int8=False):
    """Why the library cannot run this layer's experts, or None (int8:
    vLLM's W8A8 class, int8 weights with one scale per output channel)."""
    import torch

    cfg = experts.moe_config
    if getattr(experts, "_use_zentorch", False):
        return "zentorch runs it"
    if cfg.moe_parallel_config.use_ep and getattr(layer, "expert_map", None) is None:
        return "expert parallelism without an expert map (which of the router's experts this rank holds)"
    if str(getattr(cfg.activation, "value", cfg.activation)).lower() != "silu":
        return f"activation {cfg.activation} (the library runs SiLU: SwiGLU)"
    if cfg.has_bias or getattr(layer, "w13_bias", None) is not None:
        return "expert biases"
    if any(getattr(cfg, n, None) is not None for n in ("swiglu_limit", "swiglu_alpha", "swiglu_beta")):
        return "a clamped or scaled SwiGLU"
    if getattr(cfg, "is_lora_enabled", False):
        return "LoRA"
    w13, w2 = getattr(layer, "w13_weight", None), getattr(layer, "w2_weight", None)
    if w13 is None or w2 is None or w13.dim() != 3 or w2.dim() != 3:
        return "weights not in the [E, 2I, H] / [E, H, I] layout"
    e, two_i, h = w13.shape
    if tuple(w2.shape) != (e, h, two_i // 2) or two_i % 2:
        return f"w13 {tuple(w13.shape)} and w2 {tuple(w2.shape)} do not match"
    if e > 1024:
        return f"{e} experts (the library's grouped_matmul takes at most 1024)"
    if int8:
        if w13.dtype != torch.int8 or w2.dtype != torch.int8:
            return f"int8 experts' weights of dtype {w13.dtype}/{w2.dtype}"
        s13, s2 = getattr(layer, "w13_weight_scale", None), getattr(layer, "w2_weight_scale", None)
        if s13 is None or s2 is None or s13.numel() != e * two_i or s2.numel() != e * h:
            return "int8 weights without one scale per output channel (w13_weight_scale, w2_weight_scale)"
        if cfg.in_dtype not in (torch.float32, torch.float16, torch.bfloat16):
            return f"activations of dtype {cfg.in_dtype}"
    elif w13.dtype not in (torch.float32, torch.float16, torch.bfloat16) or w2.dtype != w13.dtype:
        return f"weights of dtype {w13.dtype}/{w2.dtype}"
    if w13.device.type != "cpu" or not w13.is_contiguous() or not w2.is_contiguous():
        return "weights not dense on the CPU"
    return None


def _take(experts, layer, int8=False):
    """The library's program for the layer, or None (vLLM keeps it)."""
    import torch

    from . import hf_experts, int8_experts

    reason = _unsupported(experts, layer, int8)
    if reason is None:
        try:
            cfg = experts.moe_config
            w_dtype = torch.float32  # vLLM's CPU router gives fp32 top-k weights
            # Expert parallelism: the rank's experts are a subset of the
            # router's; apply maps the router's ids to this rank's (vLLM's
            # expert_map), the others to the program's "elsewhere" id.
            ep = bool(cfg.moe_parallel_config.use_ep)
            if not int8:
                return hf_experts._ExpertsProgram(_Weights(layer), cfg.in_dtype, cfg.experts_per_token, w_dtype,
                                                  watch_versions=False, max_tokens=MAX_TOKENS, team=_team(),
                                                  elsewhere_id=ep)
            program = int8_experts.Int8ExpertsProgram(
                layer.w13_weight, layer.w13_weight_scale, layer.w2_weight, layer.w2_weight_scale, cfg.in_dtype,
                cfg.experts_per_token, w_dtype, MAX_TOKENS, team=_team(), elsewhere_id=ep)
            # vLLM's parameters become views of the program's file-backed
            # copy (same shapes and values): one copy in memory, the packed one
            layer.w13_weight.data, layer.w2_weight.data = program.w13, program.w2
            return program
        except Exception as exc:  # whatever the library refuses: vLLM's path, never an error while serving
            reason = f"the library refused it: {exc}"
    _say_once(f"{type(experts).__name__} keeps vLLM's path: {reason}")
    return None


def _local_ids(topk_ids, expert_map, local_experts):
    """The router's expert ids as this rank's (expert parallelism): vLLM's
    expert_map gives each global id's local one, -1 for another rank's
    expert, which becomes local_experts (the program's "elsewhere" id:
    routed nowhere, nothing added; the other ranks add theirs and vLLM's
    all-reduce sums them)."""
    import torch

    local = expert_map.to(topk_ids.device)[topk_ids.long()]
    return torch.where(local < 0, local_experts, local).to(torch.int32)


def _patch(cls, int8=False, only_here=False):
    """Routes cls's weight preparation and apply through the library (int8:
    vLLM's W8A8 class; only_here: vLLM has no kernel of its own for it on
    this CPU, so a layer the library refuses is an error at load)."""
    if getattr(cls, "_superkernel_patched", False):
        return
    original_process = cls.process_weights_after_loading
    original_apply = cls.apply

    def process_weights_after_loading(self, layer):
        program = _take(self, layer, int8)
        if program is None and only_here:
            raise RuntimeError(f"superkernel.vllm: the library cannot run this {type(self).__name__} layer (the log "
                               "says why), and vLLM has no int8 MoE kernel for this CPU (its own needs AMX)")
        if program is None:
            return original_process(self, layer)
        # the weights stay in vLLM's layout (no padding, no prepacking): the program reads them
        self._superkernel = program
        self._superkernel_map = getattr(layer, "expert_map", None) if program.elsewhere_id else None
        _say_once(f"MoE experts of {type(self).__name__} run on superkernel (one super kernel a layer)")

    def apply(self, output, hidden_states, w1, w2, topk_weights, topk_ids, activation, global_num_experts,
              expert_map, a1q_scale, a2_scale, workspace13, workspace2, expert_tokens_meta,
              apply_router_weight_on_input):
        program = getattr(self, "_superkernel", None)
        if program is None:
            return original_apply(self, output, hidden_states, w1, w2, topk_weights, topk_ids, activation,
                                  global_num_experts, expert_map, a1q_scale, a2_scale, workspace13, workspace2,
                                  expert_tokens_meta, apply_router_weight_on_input)
        if hidden_states.shape[0] == 0:
            return
        # apply_router_weight_on_input (top-1 only): vLLM already scaled the input
        weights = topk_weights.float()
        if apply_router_weight_on_input:
            weights = weights.new_ones(weights.shape)
        if program.elsewhere_id:
            topk_ids = _local_ids(topk_ids, expert_map if expert_map is not None else self._superkernel_map,
                                  program.experts)
        output.copy_(program(hidden_states, topk_ids, weights))

    cls.process_weights_after_loading = process_weights_after_loading
    cls.apply = apply
    cls._superkernel_patched = True


def register():
    """vLLM's general plugin entry point: patches its CPU MoE experts when
    SUPERKERNEL_VLLM=1 (every vLLM process calls it; it patches once)."""
    if not enabled():
        return
    try:
        from vllm.platforms import current_platform

        if not current_platform.is_cpu():
            _say_once(f"platform {type(current_platform).__name__} is not vLLM's CPU platform: vLLM's own path")
            return
        from vllm.model_executor.layers.fused_moe.experts import cpu_moe
    except Exception as exc:  # another vLLM layout: nothing patched, vLLM runs as it is
        _say_once(f"vLLM's CPU MoE experts were not found ({exc}): vLLM's own path", logging.WARNING)
        return
    _patch(cpu_moe.CPUUnquantizedExperts)
    int8 = getattr(cpu_moe, "CPUExpertsInt8", None)
    if int8 is not None:
        # vLLM's W8A8 int8 experts need AMX; elsewhere vLLM has no CPU
        # kernel for them and refuses the model. The library runs them on
        # any x86 CPU (VNNI, or AVX2), so the class is offered here too.
        only_here = not int8._supports_current_device() and _is_x86()
        if only_here:
            int8._supports_current_device = staticmethod(lambda: True)
        _patch(int8, int8=True, only_here=only_here)
    _passive_workers()


def _is_x86():
    import platform

    return platform.machine().lower() in ("x86_64", "amd64")


def _passive_workers(environ=None):
    """OMP_WAIT_POLICY=PASSIVE for the processes vLLM starts after this one
    (its engine core and workers read it when their OpenMP runtime loads),
    unless the user chose a wait policy or spin count. After each of its
    ops, vLLM's OpenMP thread c otherwise spins for milliseconds on the CPU
    where the library's worker c runs the next MoE layer (BENCHMARKS.md,
    "vLLM with the plugin": 8.0 against 10.4 tokens/s at one request;
    vLLM's own layers are no slower passive)."""
    environ = os.environ if environ is None else environ
    if not any(environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")):
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
