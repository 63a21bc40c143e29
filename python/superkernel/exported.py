"""superkernel.export: compile a model once, call it without torch.compile.

    compiled = superkernel.export(model, example_args, compiler_config=None)
    out = compiled(*args)

torch.export traces the model to an ATen graph ahead of time (scopes
included); the backend's partitioner (backend/partition.py, backend/runner.py)
turns it into library programs and torch code between them, exactly as for
torch.compile, with parameters and buffers folded in as constants. A call
then runs that code directly: no Dynamo frame evaluation, guards or
AOTAutograd wrappers, which cost tens of microseconds per call
(BENCHMARKS.md). In exchange the compiled model serves only the example's
signature: every call checks its tensors (dtype, shape, on the CPU; one not
contiguous, or carrying torch's lazy negative bit, is copied, as a torch op
reads it) and a different one is an error naming the argument,
never a recompilation.

copy.copy, copy.deepcopy and pickle work as for a module: the copy is
compiled again from the exported program (torch.export's ExportedProgram,
with the weights; pickled through torch.export.save), in the process that
loads it.

Inference only; parameters are frozen at export (a later change to the
model is not seen: export again).
"""

import copy
import io
import itertools

import torch
import torch.utils._pytree as pytree

from . import _omp
from . import scope as _scope  # noqa: F401  (the ops an exported program names exist before pickle loads one)
from .backend.runner import Plan
from .config import CompilerConfig
from .program import shared_team


class ExportedModel:
    """A model compiled by superkernel.export; call it like the model."""

    def __init__(self, ep, config, label):
        from torch.export.graph_signature import InputKind

        self.exported_program = ep
        self.config = config
        gm = ep.graph_module
        specs = ep.graph_signature.input_specs
        mutated = dict(ep.graph_signature.buffers_to_mutate)
        if mutated or ep.graph_signature.user_inputs_to_mutate:
            names = sorted(set(mutated.values()) | set(ep.graph_signature.user_inputs_to_mutate.values()))
            raise NotImplementedError(
                f"superkernel.export: the model changes {', '.join(names)} in place; export serves models whose "
                "calls change no buffer or input (use torch.compile(backend='superkernel') for this one)"
            )
        frozen = {InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR}
        self._static = []
        static_indices = []
        for i, spec in enumerate(specs):
            if spec.kind in frozen:
                value = ep.constants[spec.target] if spec.target in ep.constants else ep.state_dict[spec.target]
                self._static.append(value.detach())
                static_indices.append(i)
            elif spec.kind != InputKind.USER_INPUT:
                raise NotImplementedError(f"superkernel.export: inputs of kind {spec.kind.name} are not supported")
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        users = [n for n, s in zip(placeholders, specs) if s.kind == InputKind.USER_INPUT]
        self._expected = []
        for node in users:
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise NotImplementedError(f"superkernel.export: input {node.name} is not a tensor")
            self._expected.append((node.name, val.dtype, torch.Size(val.shape)))
        self._in_spec = ep.call_spec.in_spec
        n = len(self._expected)
        self._flat_call = self._in_spec == pytree.tree_flatten((tuple(range(n)), {}))[1]
        self._out_spec = ep.call_spec.out_spec
        self.team = shared_team(config.num_threads or _omp.team_threads())
        self.plan = Plan(gm, static_indices, config.options, torch_bits=config.torch_bits)
        example = [None] * len(specs)
        for i, value in zip(static_indices, self._static):
            example[i] = value
        self._runner = self.plan.build(example, self.team, config, label)
        if config.profiling_dir is not None:
            from .backend import _PROFILING

            _PROFILING.add(self)
        self._forward = self._runner.gm.forward
        self._static = tuple(self._static)

    @property
    def programs(self):
        """The library programs, in run order."""
        return self._runner.programs

    def write_profiles(self, directory=None):
        """With CompilerConfig(profiling_dir=...): writes each program's
        op_statistic.csv and trace.json to directory/<program>/ and one
        op_statistic.csv of them all to directory (default: the config's
        profiling_dir; also done at exit). Returns that file's path."""
        from .backend.profiles import write_program_profiles

        return write_program_profiles(
            [(seg.name, seg.program) for seg in self._runner.segments], directory, self.config.profiling_dir
        )

    def _flat_inputs(self, args, kwargs):
        if self._flat_call and not kwargs:
            return args  # the common case: tensors as positional arguments, no pytree walk
        flat, spec = pytree.tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise TypeError(f"superkernel.export: the call's argument structure {spec} differs from the example's")
        return flat

    # Copies are compiled again from the exported program: the C programs
    # cannot be copied, and the ExportedProgram (graph and weights) is what
    # torch.export itself copies and saves. copy.copy shares its weights,
    # deepcopy copies them; pickle goes through torch.export.save (a plain
    # pickle of an ExportedProgram drops the tensor metadata it needs).

    def __copy__(self):
        return _rebuild(self.exported_program, self.config)

    def __deepcopy__(self, memo):
        return _rebuild(copy.deepcopy(self.exported_program, memo), copy.deepcopy(self.config, memo))

    def __reduce__(self):
        buffer = io.BytesIO()
        torch.export.save(self.exported_program, buffer)
        return _load, (buffer.getvalue(), self.config)

    def _check(self, flat):
        """flat, with the tensors that carry torch's lazy negative bit
        resolved (the runner reads memory, which holds the values before
        the bit). A conjugate bit needs a complex dtype, which no input of
        an exported model has (refused as a dtype)."""
        lazy = False
        for t, (name, dtype, shape) in zip(flat, self._expected):
            if type(t) is not torch.Tensor or t.dtype is not dtype or t.shape != shape or not t.is_cpu or t.is_neg():
                self._refuse(t, name, dtype, shape)  # returns for a lazy bit alone
                lazy = True
        if lazy:
            flat = [t.resolve_neg() for t in flat]
        return flat

    @staticmethod
    def _refuse(t, name, dtype, shape):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"superkernel.export: input {name}: expected a tensor, got {type(t).__name__}")
        if t.dtype != dtype or t.shape != shape:
            raise ValueError(
                f"superkernel.export: input {name}: expected {dtype} {list(shape)}, got {t.dtype} "
                f"{list(t.shape)}; the exported model serves the example's signature only (export again)"
            )
        if not t.is_cpu:
            raise ValueError(f"superkernel.export: input {name} is on {t.device}; superkernel runs on the CPU")

    def __call__(self, *args, **kwargs):
        flat = self._flat_inputs(args, kwargs)
        if len(flat) != len(self._expected):
            raise TypeError(f"superkernel.export: expected {len(self._expected)} input tensors, got {len(flat)}")
        flat = self._check(flat)
        if torch.is_grad_enabled():
            with torch.no_grad():
                outs = self._forward(*self._static, *flat)
        else:
            outs = self._forward(*self._static, *flat)
        return pytree.tree_unflatten(list(outs), self._out_spec)


_ids = itertools.count()


def _rebuild(exported_program, config):
    """An ExportedModel again, of an exported program (copies)."""
    return ExportedModel(exported_program, config, f"export{next(_ids)}")


def _load(saved, config):
    """An ExportedModel of the bytes of torch.export.save (unpickling)."""
    return _rebuild(torch.export.load(io.BytesIO(saved)), config)


def export(model, args, kwargs=None, compiler_config=None):
    """Traces model(*args, **kwargs) with torch.export and compiles it for
    superkernel (CompilerConfig as for get_backend). Returns an
    ExportedModel, called with arguments of the example's structure, dtypes
    and shapes."""
    config = CompilerConfig() if compiler_config is None else compiler_config
    if not isinstance(config, CompilerConfig):
        raise TypeError(
            f"superkernel.export: compiler_config: expected a superkernel.CompilerConfig or None, got "
            f"{type(config).__name__}"
        )
    config.validate()  # a setting changed since the config was made
    with torch.no_grad():
        ep = torch.export.export(model, tuple(args), kwargs)
    ep = ep.run_decompositions({})
    return ExportedModel(ep, config, f"export{next(_ids)}")
