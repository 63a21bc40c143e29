"""The torch.compile backend "superkernel".

    model = torch.compile(model, backend="superkernel")                # defaults
    model = torch.compile(model, backend=superkernel.get_backend(
        superkernel.CompilerConfig(executor="jit", options="early-start=0")))

Dynamo hands the backend an FX graph; AOTAutograd (aot_module_simplified)
lowers it to ATen ops, and the forward compiler here partitions it
(partition.py): the nodes the library runs exactly as torch eager does
become library programs, one per stage of the graph, with their
super-kernel scopes; everything else runs in torch between them. So any
model compiles, with or without graph breaks, and compiled results equal
eager ones bit for bit (the torch.ops.superkernel.* eager kernels run the
same library code), NaNs aside: where an ATen op's eager result is a NaN
the compiled one is a NaN, but not always the same NaN (sign, payload).
torch's own NaN bits follow its code path, not a rule (its vectorized
fp32 -> bf16 conversion writes 0xffff for any NaN, its scalar one 0x7fc0;
of two NaN operands its add keeps the second's payload, the library the
first's). The superkernel ops' NaNs are the same bits eager and compiled.

Opt-in, CompilerConfig(torch_bits=False): the backend also maps ATen ops
to library ops whose exact contract is their own fixed-order arithmetic,
within docs/ops.md's tolerance of torch but not its bits: softmax over the
last dimension (translate.py) and F.scaled_dot_product_attention's cases
the library's attention computes (rewritten before partitioning,
attention.py; the layout changes around it copy in torch where a view is
not dense, a head-major KV cache at every call). Those results are then
the library's bits. With the default (True) nothing is mapped that is not
torch's bits.

Parameters and buffers (AOTAutograd's static inputs) that feed library ops
become constants of the programs, copied when a program is built (at the
first call): weights are packed once. They are treated as frozen; a change
to one in place (its version counter) or its replacement (its address) is
seen at the next call, which rebuilds the programs. A change made through
`.data` bypasses the version counter and is not seen. Tensors made under
torch.inference_mode() keep no version counter: they are run-time inputs
of the programs instead (read at every call, not packed).

Gradients: the library computes forward passes only. A graph compiled with
grad mode on and an input or parameter that requires grad is not fused: it
runs as torch runs it (Dynamo's graph, the superkernel ops' eager kernels
with their autograd formulas, torch_grads.py), so backward() gives torch's
gradients, with a warning once. Dynamo guards on grad mode: the same model
called under torch.no_grad() / inference_mode() compiles again, fused.

Shapes: Dynamo compiles one graph per input shape with dynamic=False. A
graph with symbolic shapes (dynamic=True, or Dynamo's automatic dynamic
shapes after a shape change) is specialized: at each call with a new input
signature (dtypes and shapes, integer arguments) it is retraced with those
shapes and partitioned and built again; the runners are cached per
signature (the last 16).

Profiling: with CompilerConfig(profiling_dir=...) programs are compiled
with profiling on; write_profiles() writes them (and runs at exit).
"""

import atexit
import collections
import copy
import itertools
import sys
import warnings
import weakref

import torch

from .runner import Plan
from ..config import CompilerConfig
from .partition import ScopeError, read_markers
from .. import _fork, _omp
from . import moe as _backend_moe  # the fused MoE blocks (backend/moe.py)
from .profiles import write_program_profiles
from ..program import shared_team
from ..torch_ops import take_refusal

__all__ = [
    "Backend",
    "CompilerConfig",
    "ScopeError",
    "get_backend",
    "superkernel_backend",
    "write_profiles",
    "last_programs",
]

BACKEND_NAME = "superkernel"
_SIGNATURES_KEPT = 16


class CompiledGraph:
    """What the forward compiler returns for one ATen graph: called with the
    list of the graph's arguments (AOTAutograd's boxed convention). runner /
    programs / plan describe it."""

    _boxed_call = True

    def __init__(self, backend, gm, static_indices, symbolic, refusal=None):
        self.backend = backend
        self.gm = gm
        self.label = f"graph{next(backend._ids)}"
        self.static_indices = tuple(static_indices)
        self.symbolic = symbolic
        _fork.lock(self, "_lock")
        self.runner = None
        self._runners = collections.OrderedDict()
        self._signature_ids = itertools.count()
        if symbolic:
            read_markers(gm.graph, backend.config.options, refusal)  # errors now, not at the first call
            self.plan = None
        else:
            self.plan = Plan(gm, self.static_indices, backend.config.options, refusal, backend.config.torch_bits)

    def __call__(self, args):
        if self.symbolic:
            return self._call_specialized(args)
        runner = self.runner
        if runner is None or runner.stale(args):
            with self._lock:
                runner = self.runner = self.plan.build(args, self.backend.team(), self.backend.config, self.label)
        return runner(*args)

    def _call_specialized(self, args):
        key = tuple((a.dtype, tuple(a.shape)) if isinstance(a, torch.Tensor) else a for a in args)
        with self._lock:  # the signature cache is shared by every calling thread
            runner = self._runners.get(key)
            if runner is None or runner.stale(args):
                from torch.fx.experimental.proxy_tensor import make_fx

                with torch.no_grad():
                    gm = make_fx(self.gm, tracing_mode="fake")(*args)
                plan = Plan(gm, self.static_indices, self.backend.config.options,
                            torch_bits=self.backend.config.torch_bits)
                label = f"{self.label}.s{next(self._signature_ids)}"
                runner = plan.build(args, self.backend.team(), self.backend.config, label)
                self.plan = plan
                self._runners[key] = runner
                while len(self._runners) > _SIGNATURES_KEPT:
                    self._runners.popitem(last=False)
            else:
                self._runners.move_to_end(key)
            self.runner = runner
        return runner(*args)

    @property
    def programs(self):
        """The library programs of the current runner (built at the first call)."""
        return self.runner.programs if self.runner is not None else []

    @property
    def segments(self):
        return self.runner.segments if self.runner is not None else []

    def all_segments(self):
        runners = list(self._runners.values()) if self.symbolic else [self.runner]
        return [seg for r in runners if r is not None for seg in r.segments]


class Backend:
    """A torch.compile backend: call it as Dynamo does, or pass it as
    torch.compile(backend=...). Its programs run on the process's shared
    team of config.num_threads cores (else torch.get_num_threads()), made
    at the first build (program.shared_team)."""

    __name__ = BACKEND_NAME

    def __init__(self, compiler_config=None):
        # a copy: changing the caller's config later does not change this backend
        self.config = copy.copy(compiler_config or CompilerConfig()).validate()
        self._team = None
        self._ids = itertools.count()
        self._graphs = []  # weak references to the CompiledGraphs, in order
        self._warned_grad = False
        if self.config.profiling_dir is not None:
            _PROFILING.add(self)

    def team(self):
        if self._team is None:
            self._team = shared_team(self.config.num_threads or _omp.team_threads())
        return self._team

    def __call__(self, gm, example_inputs):
        from torch._functorch.aot_autograd import aot_module_simplified

        # an op the library refused while Dynamo traced this code (torch_ops)
        refusal = take_refusal()
        if _needs_gradients(gm, example_inputs):
            self._warn_unfused()
            return gm.forward
        # Stock MoE blocks in scopes become the fused layer (backend/moe.py);
        # gm and the compiled graphs keep their OptimizedMoE modules alive.
        fused = []
        _backend_moe.fuse_moe_blocks(gm, example_inputs, fused)
        if fused:
            gm._superkernel_fused = fused
        fallback_static = _dynamo_static_indices(gm)
        made = []

        def fw_compiler(fw_gm, fw_inputs):
            graph = CompiledGraph(self, fw_gm, _static_indices(fallback_static), _is_symbolic(fw_inputs), refusal)
            self._graphs = [r for r in self._graphs if r() is not None] + [weakref.ref(graph)]
            made.append(graph)
            graph.fused = fused
            return graph

        def bw_compiler(bw_gm, bw_inputs):
            from functorch.compile import make_boxed_func

            return make_boxed_func(bw_gm)  # backward runs in torch

        compiled = aot_module_simplified(
            gm, example_inputs, fw_compiler=fw_compiler, bw_compiler=bw_compiler, inference_compiler=fw_compiler
        )
        # Nothing for the library (or views alone): Dynamo's own graph runs as
        # eager torch, without AOTAutograd's wrappers (tens of microseconds a
        # call). With symbolic shapes the plan is made per call: kept.
        if made and all(g.plan is not None and not g.plan.takes_work for g in made):
            self._graphs = [r for r in self._graphs if r() not in made]
            return gm.forward
        return compiled

    def _warn_unfused(self):
        if not self._warned_grad:
            self._warned_grad = True
            warnings.warn(
                "superkernel: gradients are required (grad mode is on and an input or parameter requires grad): "
                "this graph runs in torch, not fused (the library computes forward passes only); run it under "
                "torch.no_grad() or torch.inference_mode() to fuse it",
                stacklevel=3,
            )

    # ---- introspection and profiles -------------------------------------

    def graphs(self):
        """The live CompiledGraphs, oldest first."""
        return [g for g in (r() for r in self._graphs) if g is not None]

    def programs(self):
        """Every live library program, in compile order."""
        return [seg.program for g in self.graphs() for seg in g.all_segments()]

    def reset_profiles(self):
        for program in self.programs():
            program.reset_profile()

    def write_profiles(self, directory=None):
        """Writes each program's op_statistic.csv and trace.json to
        directory/<graph>.<segment>/ and one op_statistic.csv of all of them
        to directory (default: config.profiling_dir). Returns the merged
        file's path, or None when no program was profiled. Programs are
        profiled only when the config has a profiling_dir."""
        named = [(seg.name, seg.program) for g in self.graphs() for seg in g.all_segments()]
        return write_program_profiles(named, directory, self.config.profiling_dir)

    def __repr__(self):
        return f"superkernel.Backend({self.config!r})"


def _needs_gradients(gm, example_inputs):
    """Whether a backward through gm may be asked for: grad mode on and a
    graph input (parameters are inputs with Dynamo's inlined modules) or a
    parameter of gm requires grad."""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        return True
    return any(p.requires_grad for p in gm.parameters())


def _is_symbolic(inputs):
    for x in inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and not all(isinstance(d, int) for d in x.shape):
            return True
    return False


def _dynamo_static_indices(gm):
    """Parameters and buffers among the inputs of the graph AOTAutograd
    traces (its own parameters first, then Dynamo's inputs marked static)."""
    own = len(dict(gm.named_parameters(remove_duplicate=False))) + len(dict(gm.named_buffers(remove_duplicate=False)))
    static = list(range(own))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        example = node.meta.get("example_value")
        marked = "_dynamo_static_input_type" in (node.meta.get("tensor_dict") or {})
        if isinstance(example, torch.nn.Parameter) or marked:
            static.append(own + i)
    return tuple(static)


def _static_indices(fallback):
    """The forward graph's static inputs (parameters, buffers) that it does
    not mutate: the ones folded in as constants."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    indices = getattr(meta, "static_input_indices", None) if meta is not None else None
    if indices is None:
        return fallback
    info = getattr(meta, "input_info", None) or []
    mutated = {
        i for i, x in enumerate(info) if getattr(x, "mutates_data", False) or getattr(x, "mutates_metadata", False)
    }
    return tuple(i for i in indices if i not in mutated)


# ---- the default backend, registration, profiles ---------------------------

_DEFAULT = None
_DEFAULT_LOCK = _fork.lock(sys.modules[__name__], "_DEFAULT_LOCK")
_PROFILING = weakref.WeakSet()


def get_backend(compiler_config=None):
    """A new backend with this CompilerConfig (its programs run on the
    process's shared team of its size)."""
    return Backend(compiler_config)


def default_backend():
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = Backend()
    return _DEFAULT


def superkernel_backend(gm, example_inputs):
    """The backend registered as "superkernel": the default Backend."""
    return default_backend()(gm, example_inputs)


def last_programs(backend=None):
    """The programs of the most recently compiled graph of backend (default:
    the registered one)."""
    graphs = (backend or default_backend()).graphs()
    return graphs[-1].programs if graphs else []


def write_profiles():
    """write_profiles() of every live backend and exported model that has a
    profiling_dir."""
    return [b.write_profiles() for b in list(_PROFILING)]


def _write_profiles_at_exit():
    for b in list(_PROFILING):
        try:
            b.write_profiles()
        except Exception as e:  # exiting: report, never raise
            print(f"superkernel: writing profiles to {b.config.profiling_dir}: {e}")


atexit.register(_write_profiles_at_exit)


def _register():
    """Registers "superkernel" with Dynamo, unless Dynamo knows it from the
    torch_dynamo_backends entry point (superkernel.backend:superkernel_backend):
    then Dynamo registers it itself when it loads the entry point, which may be
    what is importing this module now."""
    from torch._dynamo.backends import registry

    if BACKEND_NAME not in registry._COMPILER_FNS and registry._BACKENDS.get(BACKEND_NAME) is None:
        registry.register_backend(superkernel_backend, name=BACKEND_NAME)


_register()
