"""superkernel.optimize's whole-model takeover: a transformers causal LM of
a family the library builds (superkernel.model.families()) runs its whole
forward in the library (superkernel.Model: the embedding, every layer with
the library's KV cache, the final norm, the LM head), and generate() works
unchanged.

The model's forward is replaced (on the instance) by one that
  - takes input_ids [B, T] and attention_mask (left padding only: a row's
    zeros come before its tokens), and the cache object generate hands
    round: each cache object is tied to B library sequences (the KV caches
    live there; transformers' own cache object stays empty). A new cache
    object starts new sequences; the same one continues them. Without a
    cache (model(input_ids)) the tokens run in fresh sequences. The
    sequences of a cache object that is gone (and of a cache-less run) are
    kept for the next ones, as many as the largest batch so far (at most
    8): a new prompt reuses their KV cache and buffers instead of faulting
    in new ones.
  - runs each row as its own sequence, its padding skipped (so a row's
    logits are bitwise those of the row run alone: the batch cannot change
    them), and returns fp32 logits [B, T', vocab] (T' = logits_to_keep, or
    T; a padding position's row is zero), with the cache object.
The weights the programs pack (the projections, the experts, the LM head)
move to file-backed memory first and go back to the file once packed
(_file_weights.py): one copy of each stays resident, the packed one (with
quantize="w8a8" the int8 one: half the bytes).

Refused with an error naming what to do: inputs_embeds, labels (training),
a mask with holes or right padding, a cache that does not match the
sequences (another length), a sequence past max_context.
"""

import types
import weakref

import torch

from . import _file_weights
from .model import Model


class _State:
    """The sequences of one cache object, and the tokens (pads included) seen."""

    def __init__(self, seqs):
        self.seqs, self.total = seqs, 0


class WholeModel:
    """The library model behind a taken-over transformers model."""

    def __init__(self, hf_model, max_context, num_threads, options, quantize=None, numerics=None, max_tokens=0):
        self.model = Model(hf_model.config, hf_model.state_dict(), max_tokens=max_tokens, max_context=max_context,
                           num_threads=num_threads, options=options, quantize=quantize, numerics=numerics)
        self.about = f"whole decoder in the library ({self.model.about}; max_context {self.model.max_context})"
        self._states = weakref.WeakKeyDictionary()  # cache object -> _State
        self._free = []  # sequences no live cache holds
        self._keep = 1  # how many of them to keep: the largest batch so far, at most MAX_KEPT

    MAX_KEPT = 8

    def _sequences(self, n):
        """n empty sequences, those kept from earlier runs first."""
        self._keep = max(self._keep, min(n, self.MAX_KEPT))
        seqs = [self._free.pop() if self._free else self.model.sequence() for _ in range(n)]
        for seq in seqs:
            seq.truncate(0)
        return seqs

    def _release(self, seqs):
        """Sequences no cache holds any more: kept for reuse up to _keep,
        the rest freed."""
        room = self._keep - len(self._free)
        self._free.extend(seqs[:max(room, 0)])

    def forward(self, input_ids, attention_mask, cache, logits_to_keep):
        if input_ids is None or input_ids.dim() != 2:
            raise ValueError("superkernel.optimize: the model takes input_ids [batch, tokens]")
        b, t = input_ids.shape
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        if mask.dim() != 2 or mask.shape[0] != b:
            raise ValueError("superkernel.optimize: attention_mask must be [batch, positions] of 0 and 1")
        full = mask.bool()
        for row in full:  # every row checked before anything runs: an error appends nothing
            # left padding only: once a row has a token, it has no more holes
            first = int(row.nonzero()[0]) if row.any() else row.numel()
            if not bool(row[first:].all()):
                raise ValueError("superkernel.optimize: attention_mask has holes or right padding; pad on the left "
                                 "(tokenizer.padding_side = 'left')")
        if cache is not None:
            state = self._states.get(cache)
            if state is None:
                state = self._states[cache] = _State(self._sequences(b))
                # the cache's sequences come back when it goes (the finalizer holds them, not the cache)
                weakref.finalize(cache, self._release, state.seqs)
            elif len(state.seqs) != b:
                raise ValueError(f"superkernel.optimize: the cache holds {len(state.seqs)} sequences, the input {b} rows")
        else:
            state = _State(self._sequences(b))
        if attention_mask is not None and mask.shape[1] != state.total + t:
            raise ValueError(
                f"superkernel.optimize: attention_mask covers {mask.shape[1]} positions, the cache {state.total} "
                f"+ {t} new: pass the cache generate returned, or none for a new sequence")
        keep = t if not logits_to_keep else min(int(logits_to_keep), t)
        padded = not bool(full[:, -t:].all())
        # a padding position's row is zero; without padding every row is written
        logits = (torch.zeros if padded else torch.empty)((b, keep, self.model.vocab), dtype=torch.float32)
        try:
            for r in range(b):
                self._row(state.seqs[r], input_ids[r], full[r, -t:], keep, logits[r])
        finally:
            if cache is None:
                self._release(state.seqs)
        state.total += t
        return logits

    @staticmethod
    def _row(seq, ids, new, keep, out):
        """A row's tokens where new (its mask's last t columns) is set; the
        logits of its last `keep` positions into out."""
        real = ids[new]
        if real.numel() == 0:
            return
        wanted = new[new.numel() - keep:]
        n_logits = int(wanted.sum())
        if n_logits == keep:  # no padding among them: straight into the output
            seq.forward(real, logits=n_logits, out=out)
            return
        got = seq.forward(real, logits=n_logits)
        if n_logits:
            out[wanted] = got


def _output(logits, cache):
    from transformers.modeling_outputs import CausalLMOutputWithPast

    fields = CausalLMOutputWithPast.__dataclass_fields__
    key = "cache" if "cache" in fields else "past_key_values"
    return CausalLMOutputWithPast(logits=logits, **{key: cache})


def _to_files(hf_model):
    """The weights the programs pack (every matrix but the embedding table,
    which the embedding op reads in place) moved to file-backed memory
    (_file_weights.py), so that once packed one copy stays resident."""
    moved = []
    for name, p in hf_model.named_parameters():  # a tied LM head is the embedding table: listed once
        if p.dim() >= 2 and not name.endswith("embed_tokens.weight"):
            p.data = _file_weights.to_file(p.data)
            moved.append(p)
    return moved


def take_over(hf_model, max_context=0, num_threads=1, options="", quantize=None, numerics=None, max_tokens=0):
    """Replaces hf_model.forward by the library's; returns the WholeModel."""
    moved = _to_files(hf_model)
    whole = WholeModel(hf_model, max_context, num_threads, options, quantize, numerics, max_tokens)
    for p in moved:  # packed now: torch's copy goes back to the file
        _file_weights.page_out(p.data)

    def forward(self, input_ids=None, attention_mask=None, cache=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, return_dict=None, logits_to_keep=0, position_ids=None,
                cache_position=None, **kwargs):
        if inputs_embeds is not None:
            raise NotImplementedError("superkernel.optimize: the whole-model engine runs from input_ids, not "
                                      "inputs_embeds")
        if labels is not None:
            raise NotImplementedError("superkernel.optimize: the whole-model engine runs inference only (no labels)")
        cache = cache if cache is not None else past_key_values
        with torch.no_grad():
            logits = whole.forward(input_ids, attention_mask, cache if use_cache is not False else None, logits_to_keep)
        return _output(logits, cache)

    hf_model.forward = types.MethodType(forward, hf_model)
    hf_model._superkernel_whole = whole
    return whole
