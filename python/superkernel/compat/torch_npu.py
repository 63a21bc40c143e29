"""torch_npu's MoE operator functions on superkernel.

    from superkernel.compat import torch_npu      # instead of `import torch_npu`
    ys = torch_npu.npu_grouped_matmul([x0, x1], [w0, w1], bias=[b0, b1], group_type=-1)

Each function takes torch_npu's argument names and defaults
(op-plugin's op_plugin_functions.yaml; shared/spec/torch_npu.md) and returns
what torch_npu returns: a list of tensors for npu_grouped_matmul, a tuple for
the multi-output ops, one tensor otherwise. The work is one call of a
`torch.ops.superkernel.*` op, so under torch.compile the call traces to that
op and the superkernel backend can fuse it with its neighbours; run eagerly,
the op runs through the library on the CPU. The numerics are the library's
(docs/ops.md).

Arguments superkernel does not implement (antiquantization, activation
fusion, tuning hints, torch_npu's special dtypes, ...) are accepted at their
defaults; any other value raises NotImplementedError naming the argument:
nothing is silently ignored.

Dtype arguments (`output_dtype`, `dst_type`) take a torch.dtype or, as
torch_npu's `int?` schema arguments do, the int code of c10::ScalarType
(1 int8, 3 int32, 5 float16, 6 float32, 15 bfloat16; see SCALAR_TYPE_CODES).

Non-contiguous tensors (e.g. a transposed weight, common with torch_npu) are
made contiguous first: the library reads dense row-major buffers. Sparse,
mkldnn and nested tensors are refused (ValueError naming the argument and
its layout).

Scalar arguments are checked against one table (_ARGS: kind and range by
argument name) before anything runs: a float where an int is expected
(k=2.9), a str ("3"), a bool for an int or a value out of range raises
TypeError / ValueError naming the argument; nothing is truncated by int().
"""

import torch

from superkernel import _lib

__all__ = [
    "npu_grouped_matmul",
    "npu_moe_gating_top_k",
    "npu_dequant_swiglu_quant",
    "npu_quant_matmul",
    "npu_trans_quant_param",
    "npu_rms_norm",
    "npu_add_rms_norm",
    "npu_swiglu",
    "npu_moe_init_routing_v2",
    "npu_moe_finalize_routing",
    "npu_moe_gating_top_k_softmax",
    "npu_moe_gating_top_k_softmax_v2",
    "SCALAR_TYPE_CODES",
]

# c10::ScalarType codes of the dtypes superkernel has (torch's own numbering,
# which torch_npu's int dtype arguments use).
SCALAR_TYPE_CODES = {
    0: torch.uint8,
    1: torch.int8,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    11: torch.bool,
    15: torch.bfloat16,
}


# ---- scalar arguments: one table, one check -----------------------------------
# Every scalar argument the functions below hand on to an op (or compare
# with torch_npu's accepted values), by name: (kind, lo, hi). The range is
# torch_npu's where it is narrower than the op attribute's (int64: the
# library checks its own ranges and names them). None stays None: torch_npu's
# `int?` / `float?` arguments.
_INT, _FLOAT, _BOOL, _INTS = "int", "float", "bool", "list of ints"
_I64 = (_lib.INT64_MIN, _lib.INT64_MAX)
_ARGS = {
    # npu_grouped_matmul
    "split_item": (_INT, *_I64),
    "group_type": (_INT, *_I64),
    "group_list_type": (_INT, *_I64),
    "group_list": (_INTS, *_I64),
    "act_type": (_INT, *_I64),
    # npu_moe_gating_top_k, npu_moe_gating_top_k_softmax(_v2)
    "k": (_INT, *_I64),
    "k_group": (_INT, *_I64),
    "group_count": (_INT, *_I64),
    "group_select_mode": (_INT, *_I64),
    "renorm": (_INT, *_I64),
    "norm_type": (_INT, *_I64),
    "out_flag": (_BOOL, None, None),
    "routed_scaling_factor": (_FLOAT, None, None),
    "eps": (_FLOAT, None, None),
    "output_softmax": (_BOOL, None, None),
    # npu_dequant_swiglu_quant
    "activate_left": (_BOOL, None, None),
    "quant_mode": (_INT, *_I64),
    "round_mode": (_INT, *_I64),
    "activate_dim": (_INT, *_I64),
    "swiglu_mode": (_INT, *_I64),
    "clamp_limit": (_FLOAT, None, None),
    "glu_alpha": (_FLOAT, None, None),
    "glu_bias": (_FLOAT, None, None),
    # npu_rms_norm, npu_add_rms_norm, npu_swiglu
    "epsilon": (_FLOAT, None, None),
    "dim": (_INT, *_I64),
    # npu_moe_init_routing_v2, npu_moe_finalize_routing
    "active_num": (_INT, *_I64),
    "expert_capacity": (_INT, *_I64),
    "expert_num": (_INT, 1, _lib.INT64_MAX),  # the number of experts: required here
    "drop_pad_mode": (_INT, *_I64),
    "expert_tokens_num_type": (_INT, *_I64),
    "expert_tokens_num_flag": (_BOOL, None, None),
    "row_idx_type": (_INT, *_I64),
    "active_expert_range": (_INTS, *_I64),
}


def _arg(fn, name, value):
    """value of argument `name` checked by _ARGS and converted (an int, a
    float, a bool or a list of ints); None as is."""
    if value is None:
        return None
    kind, lo, hi = _ARGS[name]
    what = f"superkernel.compat.torch_npu.{fn}: {name}"
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value  # symbolic while tracing: the op's fake kernel checks it
    if kind == _INT:
        return _lib.as_int(value, what, lo, hi)
    if kind == _FLOAT:
        return _lib.as_float(value, what)
    if kind == _BOOL:
        # torch's bool arguments take a bool only (keepdim=1 is a TypeError); numpy's bool alike
        numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
        if not isinstance(value, bool) and not numpy_bool:
            raise TypeError(f"{what}: expected a bool, got {value!r}")
        return bool(value)
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex() or value.dim() > 1:
            raise TypeError(f"{what}: expected a list of ints, got a {value.dtype} tensor of shape {list(value.shape)}")
        value = value.tolist()
    if isinstance(value, (str, bytes, dict, set)) or not isinstance(value, (list, tuple, range)):
        raise TypeError(f"{what}: expected a list of ints, got {type(value).__name__} {value!r}")
    return [_lib.as_int(v, f"{what}[{i}]", lo, hi) for i, v in enumerate(value)]


def _args(fn, **given):
    """{name: _arg(fn, name, value)} of every argument given."""
    return {name: _arg(fn, name, value) for name, value in given.items()}


def _ops():
    # Importing torch_ops defines torch.ops.superkernel.* (once).
    from superkernel import torch_ops  # noqa: F401

    return torch.ops.superkernel


def _unsupported(fn, **given):
    """NotImplementedError for the first argument given a value other than
    its default. given: name=(value, default)."""
    for name, (value, default) in given.items():
        if value is None:  # torch_npu's `int?` arguments: None = not given
            continue
        if default is None or isinstance(value, (torch.Tensor, list, tuple)) or value != default:
            raise NotImplementedError(
                f"superkernel.compat.torch_npu.{fn}: argument {name}={_short(value)} is not supported "
                f"(only its default {default!r})"
            )


def _short(value):
    if isinstance(value, torch.Tensor):
        return f"<Tensor {tuple(value.shape)} {value.dtype}>"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return f"<{len(value)} tensors>"
    return repr(value)


def _dtype(fn, name, value):
    """A torch.dtype from a torch.dtype or a c10::ScalarType int code."""
    if value is None or isinstance(value, torch.dtype):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value in SCALAR_TYPE_CODES:
            return SCALAR_TYPE_CODES[value]
        raise NotImplementedError(
            f"superkernel.compat.torch_npu.{fn}: {name}={value}: not a c10::ScalarType code superkernel "
            f"supports; expected a torch.dtype or one of {sorted(SCALAR_TYPE_CODES)}"
        )
    raise TypeError(f"superkernel.compat.torch_npu.{fn}: {name}: expected a torch.dtype or int, got {value!r}")


def _dense(t, fn=None, name=None):
    """t made contiguous (None as is). A sparse, mkldnn or nested tensor is
    refused naming its layout: .contiguous() has no meaning for them, and
    torch's dispatcher would name a backend, not the argument."""
    if t is None:
        return None
    where = f"superkernel.compat.torch_npu.{fn}: {name}" if fn else "superkernel.compat.torch_npu"
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{where}: expected a tensor, got {type(t).__name__}")
    if t.layout != torch.strided or t.is_nested:
        nested = "a nested tensor, " if t.is_nested else ""
        raise ValueError(
            f"{where}: tensor is {nested}of layout {t.layout}; superkernel takes dense tensors "
            "(layout torch.strided: use .to_dense())"
        )
    return t if t.is_contiguous() else t.contiguous()


def _tensor_list(fn, name, value):
    """torch_npu's Tensor[]: a list or tuple of tensors (a single tensor is
    taken as a list of one); None stays None."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return [_dense(value, fn, name)]
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in value):
        raise TypeError(f"superkernel.compat.torch_npu.{fn}: {name}: expected a list of tensors, got {_short(value)}")
    return [_dense(t, fn, f"{name}[{i}]") for i, t in enumerate(value)]


def _tensors(fn, **given):
    """{name: _dense(tensor)} of every tensor argument given."""
    return {name: _dense(t, fn, name) for name, t in given.items()}


def _no_tensor(fn, op, lists, attrs):
    """Raises the library's own error for op when every tensor argument is
    an empty list: torch's dispatcher, finding no tensor, would otherwise
    answer that no fallback kernel is registered."""
    from superkernel import schema
    from superkernel.errors import SuperkernelError

    try:
        schema.op_infer(op, {name: [] for name in lists}, attrs)
    except SuperkernelError as e:  # the library's message, the call named
        raise type(e)(f"superkernel.compat.torch_npu.{fn}: {e}", e.status) from None
    raise ValueError(f"superkernel.compat.torch_npu.{fn}: no input tensor (every list is empty)")


def _tracing(t):
    """Whether t carries no data to read now (torch.compile, fake or meta)."""
    if torch.compiler.is_compiling() or t.device.type == "meta":
        return True
    from torch._subclasses.fake_tensor import is_fake

    return is_fake(t)


def npu_grouped_matmul(
    x,
    weight,
    *,
    bias=None,
    scale=None,
    offset=None,
    antiquant_scale=None,
    antiquant_offset=None,
    per_token_scale=None,
    group_list=None,
    activation_input=None,
    activation_quant_scale=None,
    activation_quant_offset=None,
    split_item=0,
    group_type=None,
    group_list_type=0,
    act_type=0,
    tuning_config=None,
    output_dtype=None,
    x_dtype=None,
    weight_dtype=None,
    scale_dtype=None,
    per_token_scale_dtype=None,
):
    """torch_npu.npu_grouped_matmul -> list of tensors.

    x, weight, bias, scale, offset, per_token_scale: lists of tensors
    (weight layout [K, N]: y = x @ w). group_type -1: independent matmuls,
    one output per group; 0: the rows of one x split by group_list.
    group_type None (torch_npu's default, which its kernels refuse) means -1
    without a group_list and 0 with one.

    group_list: a list of ints (fixed when the graph is built), or an int64
    Tensor read at run time. With split_item 2/3 (one [M, N] output) a
    tensor goes to the op's run-time group_list input. With split_item 0/1
    the output shapes depend on its values: run eagerly, the tensor is read
    once and used as ints; under torch.compile or with fake tensors this is
    refused (pass the ints, or use split_item 2/3).

    Not supported (NotImplementedError unless left at the default):
    antiquant_scale, antiquant_offset, activation_input,
    activation_quant_scale, activation_quant_offset, act_type != 0,
    tuning_config, x_dtype, weight_dtype, scale_dtype, per_token_scale_dtype.
    """
    fn = "npu_grouped_matmul"
    _unsupported(
        fn,
        antiquant_scale=(antiquant_scale, None),
        antiquant_offset=(antiquant_offset, None),
        activation_input=(activation_input, None),
        activation_quant_scale=(activation_quant_scale, None),
        activation_quant_offset=(activation_quant_offset, None),
        act_type=(act_type, 0),
        tuning_config=(tuning_config, None),
        x_dtype=(x_dtype, None),
        weight_dtype=(weight_dtype, None),
        scale_dtype=(scale_dtype, None),
        per_token_scale_dtype=(per_token_scale_dtype, None),
    )
    a = _args(fn, split_item=split_item, group_list_type=group_list_type, group_type=group_type)
    split_item = 0 if a["split_item"] is None else a["split_item"]
    group_list_type = 0 if a["group_list_type"] is None else a["group_list_type"]
    group_type = a["group_type"]
    if group_type is None:
        group_type = -1 if group_list is None else 0
    group_list_tensor = group_list_ints = None
    if isinstance(group_list, torch.Tensor):
        if split_item in (2, 3):
            group_list_tensor = _dense(group_list, fn, "group_list")
        elif _tracing(group_list):
            raise NotImplementedError(
                f"superkernel.compat.torch_npu.{fn}: group_list as a Tensor with split_item={split_item} gives "
                "one output per group whose shapes depend on the tensor's values, unknown while tracing; "
                "pass group_list as a list of ints, or use split_item=2 or 3 (one [M, N] output)"
            )
        else:
            group_list_ints = _arg(fn, "group_list", group_list.reshape(-1))
    else:
        group_list_ints = _arg(fn, "group_list", group_list)
    lists = dict(x=_tensor_list(fn, "x", x), weight=_tensor_list(fn, "weight", weight),
                 bias=_tensor_list(fn, "bias", bias), scale=_tensor_list(fn, "scale", scale),
                 offset=_tensor_list(fn, "offset", offset),
                 per_token_scale=_tensor_list(fn, "per_token_scale", per_token_scale))
    attrs = dict(group_type=group_type, group_list_ints=group_list_ints, group_list_type=group_list_type,
                 split_item=split_item, output_dtype=_dtype(fn, "output_dtype", output_dtype))
    if group_list_tensor is None and not any(lists.values()):
        _no_tensor(fn, "grouped_matmul", [k for k, v in lists.items() if v is not None],
                   {k: v for k, v in attrs.items() if v is not None and k not in ("group_list_ints", "output_dtype")})
    return _ops().grouped_matmul(*lists.values(), group_list_tensor, **attrs)


def npu_moe_gating_top_k(
    x,
    k,
    *,
    bias=None,
    input_ids=None,
    tid2eid=None,
    k_group=1,
    group_count=1,
    group_select_mode=0,
    renorm=0,
    norm_type=0,
    out_flag=False,
    routed_scaling_factor=1.0,
    eps=1e-20,
):
    """torch_npu.npu_moe_gating_top_k -> (y [T, k] x's dtype, expert_idx
    [T, k] int32, out [T, E] fp32). `out` holds the normalized scores
    whatever out_flag says (docs/ops.md). Not supported: input_ids, tid2eid."""
    fn = "npu_moe_gating_top_k"
    _unsupported(fn, input_ids=(input_ids, None), tid2eid=(tid2eid, None))
    a = _args(fn, k=k, k_group=k_group, group_count=group_count, group_select_mode=group_select_mode,
              renorm=renorm, norm_type=norm_type, out_flag=out_flag, routed_scaling_factor=routed_scaling_factor,
              eps=eps)
    a["out_flag"] = int(bool(a["out_flag"]))
    t = _tensors(fn, x=x, bias=bias)
    y, expert_idx, out = _ops().moe_gating_topk(t["x"], t["bias"], **a)
    return y, expert_idx, out


def npu_dequant_swiglu_quant(
    x,
    *,
    weight_scale=None,
    activation_scale=None,
    bias=None,
    quant_scale=None,
    quant_offset=None,
    group_index=None,
    activate_left=False,
    quant_mode=0,
    dst_type=None,
    round_mode=None,
    activate_dim=None,
    swiglu_mode=0,
    clamp_limit=7.0,
    glu_alpha=1.702,
    glu_bias=1.0,
):
    """torch_npu.npu_dequant_swiglu_quant -> (y int8 [..., H], scale fp32 [...]).

    x is [..., 2H]; leading dimensions are flattened into rows (with
    activation_scale given per row) and restored on the outputs.
    quant_mode 0 static, 1 dynamic; group_index int64 row counts.

    Accepted at torch_npu's values only: dst_type None or int8 (torch.int8 /
    1), round_mode None or 0 (rint), activate_dim None or the last dimension;
    not supported: swiglu_mode != 0 and with it clamp_limit, glu_alpha,
    glu_bias other than their defaults."""
    fn = "npu_dequant_swiglu_quant"
    a = _args(fn, activate_left=activate_left, quant_mode=quant_mode, round_mode=round_mode,
              activate_dim=activate_dim, swiglu_mode=swiglu_mode, clamp_limit=clamp_limit, glu_alpha=glu_alpha,
              glu_bias=glu_bias)
    if _dtype(fn, "dst_type", dst_type) not in (None, torch.int8):
        _unsupported(fn, dst_type=(dst_type, None))
    if a["round_mode"] not in (None, 0):
        _unsupported(fn, round_mode=(round_mode, None))
    if a["activate_dim"] is not None and a["activate_dim"] not in (-1, x.dim() - 1):
        _unsupported(fn, activate_dim=(activate_dim, None))
    _unsupported(
        fn,
        swiglu_mode=(a["swiglu_mode"], 0),
        clamp_limit=(a["clamp_limit"], 7.0),
        glu_alpha=(a["glu_alpha"], 1.702),
        glu_bias=(a["glu_bias"], 1.0),
    )
    x = _dense(x, fn, "x")
    lead = tuple(x.shape[:-1])
    if x.dim() > 2:
        x = x.reshape(-1, x.shape[-1])
        if activation_scale is not None:
            activation_scale = activation_scale.reshape(-1)
    t = _tensors(fn, x=x, weight_scale=weight_scale, activation_scale=activation_scale, bias=bias,
                 quant_scale=quant_scale, quant_offset=quant_offset, group_index=group_index)
    y, scale = _ops().dequant_swiglu_quant(
        *t.values(), activate_left=int(bool(a["activate_left"])), quant_mode=a["quant_mode"])
    if len(lead) > 1:
        y, scale = y.reshape(*lead, y.shape[-1]), scale.reshape(lead)
    return y, scale


def npu_quant_matmul(
    x1,
    x2,
    scale,
    *,
    offset=None,
    pertoken_scale=None,
    bias=None,
    output_dtype=None,
    x1_dtype=None,
    x2_dtype=None,
    pertoken_scale_dtype=None,
    scale_dtype=None,
    group_sizes=None,
    y_scale=None,
):
    """torch_npu.npu_quant_matmul -> Tensor: int8 x1 @ int8 x2 with the
    dequantization epilogue. output_dtype None means int8 (torch_npu's
    default); float16, bfloat16, int8, int32. scale fp32, bf16 or the int64
    form of npu_trans_quant_param. Not supported: x1_dtype, x2_dtype,
    pertoken_scale_dtype, scale_dtype, group_sizes, y_scale."""
    fn = "npu_quant_matmul"
    _unsupported(
        fn,
        x1_dtype=(x1_dtype, None),
        x2_dtype=(x2_dtype, None),
        pertoken_scale_dtype=(pertoken_scale_dtype, None),
        scale_dtype=(scale_dtype, None),
        group_sizes=(group_sizes, None),
        y_scale=(y_scale, None),
    )
    output_dtype = _dtype(fn, "output_dtype", output_dtype)
    t = _tensors(fn, x1=x1, x2=x2, scale=scale, offset=offset, pertoken_scale=pertoken_scale, bias=bias)
    return _ops().quant_matmul(*t.values(), output_dtype=torch.int8 if output_dtype is None else output_dtype)


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    """torch_npu.npu_trans_quant_param -> int64 Tensor: fp32 scale (and
    offset) packed for npu_quant_matmul. scale [n] or [1, n]; a 1-D scale
    and offset broadcast when either has one element (torch_npu's meta
    rule). round_mode 0 (truncate the scale to 19 bits) only."""
    fn = "npu_trans_quant_param"
    if _arg(fn, "round_mode", round_mode) not in (None, 0):
        _unsupported(fn, round_mode=(round_mode, 0))
    scale, offset = _dense(scale, fn, "scale"), _dense(offset, fn, "offset")
    if offset is not None and scale.dim() == 1 and offset.dim() == 1 and offset.shape != scale.shape:
        n = max(scale.shape[0], offset.shape[0])
        if scale.shape[0] == 1:
            scale = scale.expand(n)
        elif offset.shape[0] == 1:
            offset = offset.expand(n)
    return _ops().trans_quant_param(_dense(scale), _dense(offset))


def npu_rms_norm(self, gamma, epsilon=1e-06):
    """torch_npu.npu_rms_norm -> (y x's dtype and shape, rstd fp32 [..., 1]).
    gamma [H] of x's dtype or fp32."""
    fn = "npu_rms_norm"
    t = _tensors(fn, self=self, gamma=gamma)
    y, rstd = _ops().rms_norm(t["self"], t["gamma"], **_args(fn, epsilon=epsilon))
    return y, rstd


def npu_add_rms_norm(x1, x2, gamma, epsilon=1e-06):
    """torch_npu.npu_add_rms_norm -> (y, rstd fp32 [..., 1], x = x1 + x2).
    The norm is of the fp32 sum, before it is rounded to x's dtype."""
    fn = "npu_add_rms_norm"
    t = _tensors(fn, x1=x1, x2=x2, gamma=gamma)
    y, rstd, x = _ops().add_rms_norm(*t.values(), **_args(fn, epsilon=epsilon))
    return y, rstd, x


def npu_swiglu(self, dim=-1):
    """torch_npu.npu_swiglu -> silu(A) * B, A and B the halves of self along dim."""
    fn = "npu_swiglu"
    return _ops().swiglu(_dense(self, fn, "self"), **_args(fn, dim=dim))


def npu_moe_init_routing_v2(
    x,
    expert_idx,
    *,
    scale=None,
    offset=None,
    active_num=-1,
    expert_capacity=-1,
    expert_num=-1,
    drop_pad_mode=0,
    expert_tokens_num_type=0,
    expert_tokens_num_flag=False,
    quant_mode=-1,
    active_expert_range=None,
    row_idx_type=0,
    x_dtype=None,
):
    """torch_npu.npu_moe_init_routing_v2 (dropless) -> (expanded_x,
    expanded_row_idx int32, expert_token_cumsum_or_count int64,
    expanded_scale fp32). expert_num is required (> 0). expert_tokens_num_type
    0 (cumsum) or 1 (count); the counts are computed whatever
    expert_tokens_num_flag says. quant_mode -1 (none) or 1 (dynamic int8).
    Not supported: offset, expert_capacity, drop_pad_mode 1, type 2 (key /
    value), static quantization, x_dtype."""
    fn = "npu_moe_init_routing_v2"
    a = _args(fn, expert_capacity=expert_capacity, drop_pad_mode=drop_pad_mode)
    _unsupported(fn, offset=(offset, None), expert_capacity=(a["expert_capacity"], -1),
                 drop_pad_mode=(a["drop_pad_mode"], 0), x_dtype=(x_dtype, None))
    attrs = _args(fn, expert_num=expert_num, active_num=active_num, expert_tokens_num_type=expert_tokens_num_type,
                  quant_mode=quant_mode, row_idx_type=row_idx_type, active_expert_range=active_expert_range)
    _args(fn, expert_tokens_num_flag=expert_tokens_num_flag)  # checked; the counts are computed anyway
    if attrs["expert_num"] is None:
        raise ValueError(f"superkernel.compat.torch_npu.{fn}: expert_num: expected the number of experts (> 0)")
    if attrs["expert_tokens_num_type"] not in (0, 1):
        _unsupported(fn, expert_tokens_num_type=(expert_tokens_num_type, 0))
    if not attrs["active_expert_range"]:
        del attrs["active_expert_range"]
    attrs = {k: v for k, v in attrs.items() if v is not None}
    t = _tensors(fn, x=x, expert_idx=expert_idx, scale=scale)
    return tuple(_ops().moe_init_routing(*t.values(), **attrs))


def npu_moe_finalize_routing(
    expanded_permuted_rows,
    skip1,
    skip2,
    bias,
    scales,
    expanded_src_to_dst_row,
    export_for_source_row,
    drop_pad_mode=0,
    k=None,
):
    """torch_npu.npu_moe_finalize_routing -> [N, H]: skip1 + skip2 + sum over
    k of scales * (row + bias[expert]). drop_pad_mode 0: the index map in
    column order (k * N + n), 2: row order (n * K + k, what
    npu_moe_init_routing_v2 returns); 1 and 3 (drop / pad) are not supported."""
    fn = "npu_moe_finalize_routing"
    a = _args(fn, drop_pad_mode=drop_pad_mode, k=k)
    if a["drop_pad_mode"] not in (None, 0, 2):
        _unsupported(fn, drop_pad_mode=(drop_pad_mode, 0))
    attrs = {"drop_pad_mode": a["drop_pad_mode"] or 0}
    if a["k"] is not None:
        attrs["k"] = a["k"]
    t = _tensors(fn, expanded_permuted_rows=expanded_permuted_rows, expanded_src_to_dst_row=expanded_src_to_dst_row,
                 skip1=skip1, skip2=skip2, bias=bias, scales=scales, export_for_source_row=export_for_source_row)
    return _ops().moe_finalize_routing(*t.values(), **attrs)


def npu_moe_gating_top_k_softmax(x, finished=None, k=1):
    """torch_npu.npu_moe_gating_top_k_softmax -> (y [T, k] x's dtype,
    expert_idx int32 [T, k], row_idx int32 [T, k] = j * T + t): the k best
    experts of softmax(x). Not supported: finished."""
    fn = "npu_moe_gating_top_k_softmax"
    _unsupported(fn, finished=(finished, None))
    y, expert_idx, row_idx, _ = _ops().moe_gating_topk_softmax(_dense(x, fn, "x"), **_args(fn, k=k))
    return y, expert_idx, row_idx


def npu_moe_gating_top_k_softmax_v2(x, *, k=1, finished=None, renorm=0, output_softmax=False):
    """torch_npu.npu_moe_gating_top_k_softmax_v2 -> (y, expert_idx, softmax
    fp32 [T, E]); renorm 1 divides the k weights by their sum. The softmax is
    always computed (output_softmax only says whether torch_npu would fill
    it). Not supported: finished."""
    fn = "npu_moe_gating_top_k_softmax_v2"
    _unsupported(fn, finished=(finished, None))
    a = _args(fn, k=k, renorm=renorm)
    _args(fn, output_softmax=output_softmax)  # checked; the softmax is computed anyway
    y, expert_idx, _, softmax = _ops().moe_gating_topk_softmax(_dense(x, fn, "x"), **a)
    return y, expert_idx, softmax
