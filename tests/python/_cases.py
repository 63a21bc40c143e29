"""The op case table (tests/cases/ops.cases), as the Python op tests use it:
each case as (id, op, slots, attrs) in the library's terms, with torch
tensors. The C conformance test reads the same file (tests/case_table.c);
its header says the format. Values: a slot's literal values (" =v0,v1,..."
after its one tensor) when it has them, else its @lo..hi range when it has
one, else a range fit for the dtype (as the C runner's rr_fill_by_dtype).
The literal values are checked as the C reader checks them: decimal numbers,
exactly as many as the tensor's elements, integers in the dtype's range for
the integer dtypes (0 or 1 for bool), finite for the floats, only in a slot of
one tensor without a range; a line that breaks a rule raises ValueError
naming it. Float values reach fp16/bf16 through fp32, as in the C runner."""

import os
import re

import numpy as np
import torch

import superkernel

CASES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cases", "ops.cases")

_TORCH = {
    "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8,
    "int32": torch.int32, "int64": torch.int64, "bool": torch.bool, "uint8": torch.uint8,
}
_TENSOR = re.compile(r"^(\w+)\[([-\d, ]*)\]$")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_MAX_VALUES = 64  # in one case, all slots together (the C reader's CASE_MAX_VALUES)
_FLOAT_MAX = {torch.float16: 65504.0, torch.bfloat16: 3.38e38, torch.float32: 3.38e38}  # as the C reader


def _parse_value(v, dtype):
    """One literal value of dtype, or None when it is not one."""
    if dtype.is_floating_point:
        return float(v) if _FLOAT.fullmatch(v) and abs(float(v)) <= _FLOAT_MAX[dtype] else None
    lo, hi = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    return int(v) if _INT.fullmatch(v) and lo <= int(v) <= hi else None


def _literal(text, shape, dtype, where):
    """The tensor of " =v0,v1,..." (text without the "="), or ValueError."""
    values = []
    for v in text.split(","):
        values.append(_parse_value(v, dtype))
        if values[-1] is None:
            raise ValueError(f"{where}: value {v!r} is not a {dtype} value")
    n = int(np.prod(shape)) if shape else 1
    if len(values) != n:
        raise ValueError(f"{where}: {len(values)} values for {n} elements")
    through = torch.float32 if dtype.is_floating_point else torch.int64
    return torch.tensor(values, dtype=through).to(dtype).reshape(shape)


def _fill(shape, dtype, rng, lo=None, hi=None):
    if lo is not None:
        if dtype.is_floating_point:
            return (torch.rand(shape, generator=rng, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
        return torch.randint(int(np.floor(lo)), int(np.ceil(hi)), shape, generator=rng).to(dtype)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=rng) * 2 - 1).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=rng) < 0.5
    if dtype == torch.int64:  # packed quant parameters (sk_trans_quant_param)
        n = int(np.prod(shape)) if shape else 1
        scales = (torch.rand(n, generator=rng) * (2**-8 - 2**-12) + 2**-12).numpy()
        offsets = torch.randint(-20, 21, (n,), generator=rng).float().numpy()
        return torch.from_numpy(superkernel.trans_quant_param(scales, offsets)).reshape(shape)
    lo, hi = {torch.int8: (-128, 128), torch.int32: (-1000, 1000), torch.uint8: (0, 256)}[dtype]
    return torch.randint(lo, hi, shape, generator=rng).to(dtype)


def _value(text):
    text = text.strip()
    if text in _TORCH:
        return _TORCH[text]
    if text.startswith("["):
        return [int(v) for v in text.strip("[]").split(",") if v.strip()]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)


def _case(line, path, lineno, rng):
    fields = [f.strip() for f in line.split("|")]
    op, what, slot_text = fields[0], fields[1], fields[2]
    lists = {s.name for s in superkernel.op_schema(op).inputs if s.is_list}
    slots = {}
    n_values = 0
    for part in slot_text.split(";"):
        name, _, rest = part.partition(":")
        name, tokens = name.strip(), rest.split()
        where = f"{path}:{lineno}: slot {name}"
        lo = hi = literal = None
        tensors = []
        for tok in tokens:
            if tok.startswith("="):
                if len(tensors) != 1 or literal is not None:
                    raise ValueError(f"{where}: values (=...) follow the one tensor of their slot, once")
                literal = _literal(tok[1:], *tensors[0], where)
                n_values += literal.numel()
                if n_values > _MAX_VALUES:
                    raise ValueError(f"{where}: more than {_MAX_VALUES} values in one case")
                continue
            if tok.startswith("@"):
                lo, hi = (float(v) for v in tok[1:].split(".."))
                continue
            m = _TENSOR.match(tok)
            if not m:
                raise ValueError(f"{path}:{lineno}: cannot parse tensor {tok!r}")
            shape = tuple(int(d) for d in m.group(2).split(",") if d.strip())
            tensors.append((shape, _TORCH[m.group(1)]))
        if literal is not None:
            if len(tensors) != 1 or lo is not None:
                raise ValueError(f"{where}: values (=...) take a slot of one tensor and no range")
            made = [literal]
        else:
            made = [_fill(shape, dtype, rng, lo, hi) for shape, dtype in tensors]
        slots[name] = made if name in lists else made[0]
    attrs = {}
    for tok in (fields[3].split() if len(fields) > 3 else []):
        key, _, value = tok.partition("=")
        attrs[key] = _value(value)
    return f"table{lineno}", op, what, slots, attrs


def read_cases(seed=1234, path=CASES_FILE):
    """Every case of the table (or of the file at path), in file order."""
    rng = torch.Generator().manual_seed(seed)
    cases = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                cases.append(_case(line, path, lineno, rng))
    return cases
