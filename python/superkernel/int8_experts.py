"""MoE experts in int8 (w8a8) as one super kernel, for experts already
quantized elsewhere (vLLM's compressed-tensors W8A8 int8 layers: the
plugin's program). superkernel.optimize's w8a8 quantizes in the library
(sk_moe_block) and builds the same maths there.

The maths (docs/ops.md): each token's row to int8 per row (dynamic,
symmetric: amax / 127), the gate/up int8 grouped matmul to int32, dequant
by the row's and the output channel's scales, SwiGLU (SiLU of the gate
half, the left one), the result to int8 per row again, the down int8
grouped matmul dequantized to x's dtype, then the routing weights' sum —
what vLLM's CPU kernel computes for the same checkpoint (its rounding
between steps may differ by a bf16 ulp).
"""

from . import _omp
from .hf_experts import routing_attrs, run_in_chunks


def add_experts(g, x, idx, experts, w_up, w_up_scale, w_down, w_down_scale, out_dtype, elsewhere_id=False):
    """The routed int8 experts on x [T, H] by idx [T, k]: (rows [T*k, H] of
    out_dtype in the routing's order, the row map for moe_finalize_routing).
    w_up int8 [E, H, 2I] (gate columns first), w_up_scale fp32 [E, 2I],
    w_down int8 [E, I, H], w_down_scale fp32 [E, H]: graph values.
    elsewhere_id: the id E means another rank's expert, routed nowhere."""
    routing = dict(routing_attrs(experts, elsewhere_id), quant_mode=1, expert_tokens_num_type=1)
    rows, row_map, counts, row_scale = g.add_op("moe_init_routing", {"x": x, "expert_idx": idx}, routing)
    mm = {"group_type": 0, "split_item": 3, "group_list_type": 1}
    (acc,) = g.add_op("grouped_matmul", {"x": rows, "weight": w_up, "group_list": counts}, mm)
    q, q_scale = g.add_op("dequant_swiglu_quant", {"x": acc, "weight_scale": w_up_scale, "activation_scale": row_scale,
                                                   "group_index": counts}, {"quant_mode": 1, "activate_left": 1})
    (out,) = g.add_op("grouped_matmul", {"x": q, "weight": w_down, "scale": w_down_scale, "per_token_scale": q_scale,
                                         "group_list": counts}, dict(mm, output_dtype=out_dtype))
    return out, row_map


class Int8ExpertsProgram:
    """Experts quantized elsewhere, as one program of a run-time token count.

    w13 int8 [E, 2I, H] (gate rows, then up) with w13_scale fp32 [E, 2I] or
    [E, 2I, 1], w2 int8 [E, H, I] with w2_scale [E, H] or [E, H, 1]: the
    [experts, out, in] layout of compressed-tensors' per-channel W8A8 (and
    vLLM's). The library's int8 grouped matmul reads [E, in, out]: the
    weights are transposed once, into a file-backed mapping whose pages go
    back to the kernel once packed (_file_weights.py); `w13`/`w2` then
    views of it in the given layout, for the caller to keep in place of its
    own (one copy in memory: the packed one)."""

    def __init__(self, w13, w13_scale, w2, w2_scale, x_dtype, top_k, w_dtype, max_tokens, team=None,
                 elsewhere_id=False):
        import torch

        from . import _file_weights  # (torch: imported when used, as the package needs no torch)
        from .dtypes import to_dtype
        from .graph import Graph
        from .team import shared_team

        experts, two_i, hidden = w13.shape
        inter = two_i // 2
        if w13.dtype != torch.int8 or w2.dtype != torch.int8 or tuple(w2.shape) != (experts, hidden, inter) \
                or two_i % 2:
            raise ValueError(f"int8 experts: w13 {tuple(w13.shape)} {w13.dtype} and w2 {tuple(w2.shape)} {w2.dtype}; "
                             "expected int8 [E, 2I, H] and [E, H, I]")
        scales = (w13_scale.detach().float().reshape(experts, -1).contiguous(),
                  w2_scale.detach().float().reshape(experts, -1).contiguous())
        if scales[0].shape[1] != two_i or scales[1].shape[1] != hidden:
            raise ValueError(f"int8 experts: scales {tuple(w13_scale.shape)} and {tuple(w2_scale.shape)}; expected "
                             f"one per output channel ([{experts}, {two_i}] and [{experts}, {hidden}])")
        self.hidden, self.experts, self.top_k, self.max_tokens = hidden, experts, top_k, max_tokens
        self.elsewhere_id, self.torch_dtype = elsewhere_id, x_dtype
        up = _file_weights.to_file(w13.detach().transpose(1, 2).contiguous())  # [E, H, 2I]
        down = _file_weights.to_file(w2.detach().transpose(1, 2).contiguous())  # [E, I, H]
        self.keep = [up, scales[0], down, scales[1]]
        self.w13, self.w2 = up.transpose(1, 2), down.transpose(1, 2)
        g = Graph()
        g.set_max_tokens(max_tokens)
        dt = to_dtype(x_dtype)
        x = g.add_input("x", dt, (None, hidden))
        idx = g.add_input("top_k_index", "int32", (None, top_k))
        weights = g.add_input("top_k_weights", to_dtype(w_dtype), (None, top_k))
        names = ("w_up", "w_up_scale", "w_down", "w_down_scale")
        consts = [g.add_constant(n, t, borrow=True) for n, t in zip(names, self.keep)]
        with g.scope("experts"):
            out, row_map = add_experts(g, x, idx, experts, *consts, out_dtype=dt, elsewhere_id=elsewhere_id)
            (y,) = g.add_op("moe_finalize_routing",
                            {"expanded_permuted_rows": out, "expanded_src_to_dst_row": row_map, "scales": weights},
                            {"drop_pad_mode": 2})
        g.mark_output(y, "y")
        self.program = g.compile(team if team is not None else shared_team(_omp.team_threads()))
        for weight in (up, down):
            _file_weights.page_out(weight)

    def __call__(self, hidden_states, top_k_index, top_k_weights):
        return run_in_chunks(self, hidden_states, top_k_index, top_k_weights)
