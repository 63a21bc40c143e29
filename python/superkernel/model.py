"""superkernel.Model: a whole decoder model run by the library
(superkernel_model.h, src/model/): a transformers config and the model's
weights in, sequences that prefill and decode out.

    model = superkernel.Model(hf_model.config.to_json_string(), hf_model.state_dict())
    seq = model.sequence()
    logits = seq.forward(prompt_ids)          # [1, vocab] fp32: the last token's
    logits = seq.forward([next_id])           # one decode step

The C builder reads the config and looks every weight up by its
state_dict name (this module only hands the tensors over: they are
borrowed, not copied, and kept alive by the Model; the experts packed at
compile are the one copy the programs read). Families: sk_model_families()
(Llama, Mistral, Qwen2, Qwen3, Qwen2-MoE, Qwen3-MoE, Mixtral, OLMoE, DeepSeek-V2/V3). A token's logits are bitwise
the same whether its prompt ran in one forward, in chunks or token by
token (the library's contracts, docs/ops.md); against transformers' own
forward they agree within the ops' documented tolerances.
"""

import ctypes
import json

from . import _lib
from ._owned import Owned
from .dtypes import to_dtype
from .program import parse_executor, parse_numerics
from .errors import STATUS_NAMES
from .team import shared_team


def families():
    """The config.json model_types the library builds."""
    return _lib.lib().sk_model_families().decode()


_NOT_FOUND, _INVALID_ARGUMENT = STATUS_NAMES.index("NOT_FOUND"), STATUS_NAMES.index("INVALID_ARGUMENT")


def _borrowed(tensors, who):
    """name -> dense CPU tensor (the caller's own where already dense)."""
    import torch

    out = {}
    for name, t in dict(tensors).items():
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            raise TypeError(f"{who}: tensor {name!r}: expected a CPU torch.Tensor")
        out[name] = t.detach().contiguous()
    return out


def _describe_tensor(tensors, name, out):
    """The weight callback (sk_model_weight_fn) over tensors."""
    t = tensors.get(name.decode())
    if t is None:
        return _NOT_FOUND
    try:
        out[0].dtype = int(to_dtype(t.dtype))
    except TypeError:
        _lib.lib().sk_model_weight_error(f"dtype {t.dtype}: the library takes fp32, fp16 or bf16 weights".encode())
        return _INVALID_ARGUMENT
    if t.dim() > _lib.MODEL_MAX_RANK:
        _lib.lib().sk_model_weight_error(f"{t.dim()} dimensions: at most {_lib.MODEL_MAX_RANK}".encode())
        return _INVALID_ARGUMENT
    out[0].rank = t.dim()
    for i, d in enumerate(t.shape):
        out[0].shape[i] = d
    out[0].data = t.data_ptr()
    return 0


class Model(Owned):
    """A decoder model compiled by the library.

    config        a transformers config (its to_json_string()), a dict, or config.json's text
    tensors       the weights by state_dict name (model.state_dict()): CPU
                  tensors, borrowed (kept alive by the Model; change none of them)
    max_tokens    the most tokens one program run takes (longer forwards run in chunks);
                  0: the library's default, 512 (llama.cpp's default batch)
    max_context   each sequence's KV cache rows (0: max_position_embeddings, at most 4096)
    num_threads   the team's cores (the package's shared team of that size)
    executor, options  as for Graph.compile
    profile       True: every launch timed, for write_profile (executor="eager": every op on its own)
    quantize      None, or "w8a8": every linear layer int8 (weights per output channel at
                  create, inputs per row at run time; docs/models.md)
    numerics      None ($SK_NUMERICS, else "default"), "default" or "amx": the bf16 products'
                  contract (docs/ops.md, "Numerics"; "amx": AMX-BF16's rate where the CPU has it)
    """

    _noun = "model"

    def __init__(self, config, tensors, max_tokens=0, max_context=0, num_threads=1, executor="default",
                 options="", profile=False, quantize=None, numerics=None):
        if hasattr(config, "to_json_string"):
            config = config.to_json_string()
        elif isinstance(config, dict):
            config = json.dumps(config)
        if not isinstance(config, str):
            raise TypeError(f"Model: config: expected a transformers config, a dict or JSON text, got {type(config).__name__}")
        self._tensors = _borrowed(tensors, "Model")
        self._lookup = _lib.MODEL_WEIGHT_FN(self._find)  # kept: C calls it during create only
        self._make(_lib.encode(config, "Model: config"), self._lookup, None, max_tokens, max_context, num_threads,
                   executor, options, profile, quantize, numerics)

    @classmethod
    def from_checkpoint(cls, directory, max_tokens=0, max_context=0, num_threads=1, executor="default",
                        options="", profile=False, quantize=None, numerics=None):
        """A Hugging Face checkpoint directory (config.json and its
        *.safetensors files: bf16, fp16, fp32, or block-scaled FP8) read by
        the library itself (superkernel_checkpoint.h): the files are
        memory-mapped and borrowed, not copied, and neither torch nor
        transformers is needed. The other arguments as for Model(). Errors
        name the file and the tensor."""
        import os

        self = cls.__new__(cls)
        self._tensors = {}
        checkpoint = ctypes.c_void_p()
        _lib.check(_lib.lib().sk_checkpoint_open(_lib.encode(os.fsencode(directory), "directory"),
                                                 ctypes.byref(checkpoint)), "Model.from_checkpoint")
        self._checkpoint = checkpoint  # closed after the model (its weights are the mapping)
        try:
            self._make(None, None, checkpoint, max_tokens, max_context, num_threads, executor, options, profile,
                       quantize, numerics)
        except BaseException:
            self._close_checkpoint()
            raise
        return self

    _checkpoint = None

    def _close_checkpoint(self):
        if self._checkpoint is not None:
            _lib.lib().sk_checkpoint_close(self._checkpoint)
            self._checkpoint = None

    def _make(self, config_json, lookup, checkpoint, max_tokens, max_context, num_threads, executor, options,
              profile, quantize, numerics):
        """sk_model_create (or, from a checkpoint, sk_model_create_from_checkpoint) and the model's info."""
        if quantize not in (None, "w8a8"):
            raise ValueError(f"Model: quantize={quantize!r}; expected None or 'w8a8'")
        # the live sequences' handles, destroyed before the model's: at exit
        # (a garbage cycle) the objects' finalizers run in any order
        self._seq_handles = set()
        self._team = shared_team(num_threads)
        cfg = _lib.ModelConfig(
            ctypes.sizeof(_lib.ModelConfig), config_json, lookup if lookup else _lib.MODEL_WEIGHT_FN(), None,
            _lib.as_int(max_tokens, "Model: max_tokens", 0, 1 << 16),
            _lib.as_int(max_context, "Model: max_context", 0, 1 << 24),
            None, parse_executor(executor), _lib.encode(options, "Model: options") if options else None,
            1 if profile else 0, quantize.encode() if quantize else None, parse_numerics(numerics, "Model"))
        handle = ctypes.c_void_p()
        team = self._team._acquire()
        try:
            cfg.team = team
            if checkpoint is None:
                st = _lib.lib().sk_model_create(ctypes.byref(cfg), ctypes.byref(handle))
            else:
                st = _lib.lib().sk_model_create_from_checkpoint(checkpoint, ctypes.byref(cfg), ctypes.byref(handle))
            _lib.check(st, "superkernel.Model")
        finally:
            self._team._release()
        self._handle = handle
        info = _lib.ModelInfo()
        _lib.check(_lib.lib().sk_model_get_info(handle, ctypes.byref(info)))
        self.family, self.about = info.family.decode(), info.about.decode()
        self.vocab, self.hidden, self.layers = info.vocab, info.hidden, info.layers
        self.max_tokens, self.max_context = info.max_tokens, info.max_context
        self.weight_bytes, self.cache_bytes = info.weight_bytes, info.cache_bytes
        self.experts, self.experts_per_token = info.experts, info.experts_per_token

    def _find(self, user, name, out):
        return _describe_tensor(self._tensors, name, out)

    def _destroy(self, handle):
        for seq in list(self._seq_handles):
            _lib.lib().sk_model_seq_destroy(seq)
        self._seq_handles.clear()
        _lib.lib().sk_model_destroy(handle)
        self._close_checkpoint()

    def write_profile(self, directory):
        """With profile=True: directory/body/ and directory/head/, each an
        op_statistic.csv and a trace.json of the runs so far."""
        import os

        _lib.check(_lib.lib().sk_model_write_profile(self.handle, _lib.encode(os.fsencode(directory), "directory")),
                   "Model.write_profile")

    def sequence(self):
        """A new sequence (its KV cache: cache_bytes) of length 0."""
        return Sequence(self)

    def __repr__(self):
        return f"superkernel.Model({self.about})"


class MoEBlock(Owned):
    """One MoE block on its own (sk_moe_block, superkernel_model.h): the
    block a model's layers are built with, from a description of the block
    (a dict of the keys superkernel_model.h lists) and its weights by the
    block's names ("gate.weight", "experts.gate_up_proj", ...; CPU tensors,
    borrowed and kept alive by the block). superkernel.optimize's per-block
    path runs its blocks as these. max_tokens: a run's most (more run in
    chunks, the same bits), 0: 4096; the rest as for Model."""

    _noun = "MoE block"

    def __init__(self, description, tensors, max_tokens=0, num_threads=1, executor="default", options="",
                 quantize=None, numerics=None):
        import threading

        if quantize not in (None, "w8a8"):
            raise ValueError(f"MoEBlock: quantize={quantize!r}; expected None or 'w8a8'")
        self._tensors = _borrowed(tensors, "MoEBlock")
        self._close_lock = threading.Lock()  # a run never sees the block freed under it
        lookup = _lib.MODEL_WEIGHT_FN(lambda user, name, out: _describe_tensor(self._tensors, name, out))
        self._team = shared_team(num_threads)
        cfg = _lib.ModelConfig(
            ctypes.sizeof(_lib.ModelConfig), _lib.encode(json.dumps(description), "MoEBlock: description"), lookup,
            None, _lib.as_int(max_tokens, "MoEBlock: max_tokens", 0, 1 << 16), 0, None, parse_executor(executor),
            _lib.encode(options, "MoEBlock: options") if options else None, 0,
            quantize.encode() if quantize else None, parse_numerics(numerics, "MoEBlock"))
        handle = ctypes.c_void_p()
        team = self._team._acquire()
        try:
            cfg.team = team
            _lib.check(_lib.lib().sk_moe_block_create(ctypes.byref(cfg), ctypes.byref(handle)), "superkernel.MoEBlock")
        finally:
            self._team._release()
        self._handle = handle
        self.about = _lib.lib().sk_moe_block_about(handle).decode()
        self.hidden = int(description["hidden_size"])

    def _destroy(self, handle):
        _lib.lib().sk_moe_block_destroy(handle)

    def run_into(self, x, y):
        """y = the block of x: contiguous CPU tensors [T, hidden] of the
        block's dtype (the package's fast path: checked by the library
        only as to the token count)."""
        with self._close_lock:
            team = self._team._acquire()
            try:
                _lib.check(_lib.lib().sk_moe_block_run(self.handle, team, x.data_ptr(), y.data_ptr(), x.shape[0]),
                           "MoEBlock.run")
            finally:
                self._team._release()
        return y

    def __repr__(self):
        return f"superkernel.MoEBlock({self.about})"


class Sequence(Owned):
    """One sequence of a Model: its KV cache and length."""

    _noun = "sequence"

    def __init__(self, model):
        self._model = model  # destroyed after its sequences
        handle = ctypes.c_void_p()
        _lib.check(_lib.lib().sk_model_seq_create(model.handle, ctypes.byref(handle)), "Model.sequence")
        self._handle = handle
        model._seq_handles.add(handle.value)

    @property
    def handle(self):
        if self._handle is not None and self._handle.value not in self._model._seq_handles:
            self._handle = None  # the model was closed, and its sequences with it
        return super().handle

    def _destroy(self, handle):
        if handle.value in self._model._seq_handles:  # else the model went first and took it along
            self._model._seq_handles.discard(handle.value)
            _lib.lib().sk_model_seq_destroy(handle)

    def __len__(self):
        return _lib.lib().sk_model_seq_length(self.handle)

    def truncate(self, length=0):
        """Forgets the tokens from `length` on."""
        _lib.check(_lib.lib().sk_model_seq_truncate(self.handle, _lib.as_int(length, "Sequence.truncate: length")))

    def forward(self, ids, logits=1, out=None):
        """Appends ids (ints) and returns the logits of the last `logits`
        of them, fp32 [logits, vocab] (logits="all": every token's; 0: none,
        None is returned); out: a contiguous fp32 tensor of that shape to
        write them into (returned), else a new one."""
        import torch

        ids = torch.as_tensor(ids).reshape(-1)
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"Sequence.forward: ids: expected integers, got {ids.dtype}")
        n = ids.numel()
        if (ids < -(2**31)).any() or (ids >= 2**31).any():
            raise ValueError("Sequence.forward: ids: outside int32")
        ids32 = ids.to(torch.int32).contiguous()
        n_logits = n if logits == "all" else _lib.as_int(logits, "Sequence.forward: logits", 0, n)
        if out is not None and (out.dtype != torch.float32 or tuple(out.shape) != (n_logits, self._model.vocab)
                                or not out.is_contiguous() or out.device.type != "cpu"):
            raise ValueError(f"Sequence.forward: out: expected a contiguous CPU float32 tensor "
                             f"[{n_logits}, {self._model.vocab}], got {out.dtype} {list(out.shape)}")
        if out is None and n_logits:
            out = torch.empty((n_logits, self._model.vocab), dtype=torch.float32)
        team = self._model._team._acquire()
        try:
            _lib.check(_lib.lib().sk_model_forward(
                self.handle, team, ctypes.cast(ids32.data_ptr(), ctypes.POINTER(ctypes.c_int32)), n,
                out.data_ptr() if out is not None else None, n_logits), "Sequence.forward")
        finally:
            self._model._team._release()
        return out
