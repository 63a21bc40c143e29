"""Shared helpers for the peer benchmarks: inputs, timing, the accuracy check.

Only numpy is required here; torch and onnxruntime are imported by the peer
modules themselves so that a missing package only disables that peer.
"""
import itertools
import os
import statistics
import time

import numpy as np

# Graph inputs of example01 and the scenarios, in models.md's order.
INPUT_NAMES = [
    "gmm1_x_0", "gmm1_x_1", "gmm1_weight_0", "gmm1_weight_1",
    "gmm1_bias_0", "gmm1_bias_1", "gmm2_weight_0", "gmm2_weight_1",
    "moe1_bias", "dsq_input_0", "dsq_input_1", "dsq_input_2",
    "data1", "data2", "scale",
]

# moe_gating_topk attributes of the seed model (models.md).
MOE_K = 8
MOE_K_GROUP = 4
MOE_GROUP_COUNT = 8
MOE_EPS = 1e-20
ROUTED_SCALING_FACTOR = 1.0


def load_inputs(directory):
    """Read DIR/<name>.npy for every graph input; returns {name: ndarray}."""
    out = {}
    for name in INPUT_NAMES:
        out[name] = np.load(os.path.join(directory, name + ".npy"))
    return out


def decode_packed_scale(packed):
    """trans_quant_param decode: fp32 from bits (uint32(u64) & 0xFFFFE000)."""
    bits = (np.asarray(packed, dtype=np.int64) & 0xFFFFE000).astype(np.uint32)
    return bits.view(np.float32)


# ---------------------------------------------------------------- timing

def summarize(samples_ns):
    """median / p10 / p90 in microseconds (nearest-rank percentiles)."""
    s = sorted(samples_ns)
    n = len(s)

    def pct(p):
        i = min(n - 1, max(0, int(round(p / 100.0 * (n - 1)))))
        return s[i] / 1000.0

    return {"median_us": statistics.median(s) / 1000.0,
            "p10_us": pct(10), "p90_us": pct(90), "iters": n}


def time_each(runners, iters, warmup):
    """Time several zero-argument callables one after the other: for each,
    `warmup` untimed calls, then `iters` timed calls back to back.

    Not interleaved (unlike `sk bench`'s modes, which share one thread team):
    each runtime here has its own thread pool whose workers keep spinning for
    a while after a call (ORT's intra-op pool, libgomp's OMP_WAIT_POLICY
    spin), so switching runtime every few calls on a small machine makes one
    peer's idle spinners steal the cores of the next.  The warm-up of each
    block absorbs the previous peer's spin-down.  Returns {name: summary}."""
    out = {}
    for name, fn in runners.items():
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            fn()
            samples.append(time.perf_counter_ns() - t0)
        out[name] = summarize(samples)
    return out


# ---------------------------------------------------------------- accuracy

def fp16_ulp(x):
    """The spacing of fp16 numbers at |x| (the ulp of x's binade)."""
    a = np.abs(np.asarray(x, dtype=np.float32)).astype(np.float16)
    return (np.nextafter(a, np.float16(np.inf)) - a).astype(np.float64)


def compare_output(name, peer, ref, q_peer=None, qpos_peer=None, data2=None,
                   scale=None, boundary_eps=1e-3):
    """Compare a peer's final fp16 output with sk's saved output.npy.

    Exact comparison first.  Where elements differ, explain them (when the
    peer's quantized activations are given) as +-1 quant-step changes of
    q = dequant_swiglu_quant's int8 output at positions where the peer's
    o/s lies within `boundary_eps` of a rounding boundary (x.5): for each
    output row r, every subset of those flips is tried and the difference is
    'explained' when some subset reproduces sk's fp16 row bit for bit.

    Returns a dict with max_abs_diff, mismatch_fraction, the counts and a
    verdict 'pass' (bit-exact, or every difference explained by rounding) or
    'FAIL'.
    """
    peer = np.asarray(peer)
    ref = np.asarray(ref)
    res = {"compared": name, "shape": list(ref.shape), "dtype": str(ref.dtype)}
    if peer.shape != ref.shape:
        res.update(verdict="FAIL", reason="shape %s vs %s" % (peer.shape, ref.shape))
        return res
    pf = peer.astype(np.float64)
    rf = ref.astype(np.float64)
    diff = np.abs(pf - rf)
    mism = peer.view(np.uint16) != ref.view(np.uint16) if ref.dtype == np.float16 else peer != ref
    res["max_abs_diff"] = float(diff.max()) if diff.size else 0.0
    res["mismatches"] = int(mism.sum())
    res["mismatch_fraction"] = float(mism.mean()) if mism.size else 0.0
    ulps = diff / np.maximum(fp16_ulp(rf), 2.0 ** -24)
    res["max_diff_fp16_ulps"] = float(ulps.max()) if ulps.size else 0.0
    if qpos_peer is not None:
        fr = qpos_peer - np.floor(qpos_peer)
        res["q_near_boundary"] = int((np.abs(fr - 0.5) < boundary_eps).sum())
        res["q_elements"] = int(qpos_peer.size)
    if res["mismatches"] == 0:
        res.update(verdict="pass", reason="bit-exact")
        return res
    if q_peer is None:
        # No access to the quantized activations: bound by one quant step of
        # q in each of the K inputs of a row (|data2| <= 128) -- loose.
        res.update(verdict="FAIL", reason="differs and no q given to explain it")
        return res

    # Explain the mismatching rows by flips of q at rounding boundaries.
    b, m, n = ref.shape                       # [batch, rows, N]
    bad_rows = np.unique(np.nonzero(mism)[1])
    frac = qpos_peer - np.floor(qpos_peer)    # o/s fraction of the peer
    near = np.abs(frac - 0.5) < boundary_eps
    s32 = np.float32(scale)
    d2 = data2.astype(np.int64)               # [b, K, N]
    explained, flips = 0, 0
    unexplained = []
    for r in bad_rows:
        cand = np.nonzero(near[r])[0]
        qrow = q_peer[r].astype(np.int64)
        ok = False
        if len(cand) <= 12:
            for size in range(1, len(cand) + 1):
                for sub in itertools.combinations(cand, size):
                    qq = qrow.copy()
                    for k in sub:
                        # the other side of the x.5 boundary
                        qq[k] += 1 if qpos_peer[r, k] >= qrow[k] else -1
                    qq = np.clip(qq, -128, 127)
                    acc = np.einsum("k,bkn->bn", qq, d2).astype(np.float32)
                    cand_out = (acc * s32).astype(np.float16)
                    if np.array_equal(cand_out.view(np.uint16), ref[:, r, :].view(np.uint16)):
                        ok = True
                        flips += size
                        break
                if ok:
                    break
        if ok:
            explained += 1
        else:
            bi, ni = np.nonzero(mism[:, r, :])
            unexplained.append({"row": int(r), "boundary_candidates": int(len(cand)),
                                "first": {"index": [int(bi[0]), int(r), int(ni[0])],
                                          "sk": float(ref[bi[0], r, ni[0]]),
                                          "peer": float(peer[bi[0], r, ni[0]])}})
    res["rows_differing"] = int(len(bad_rows))
    res["rows_explained_by_q_flips"] = explained
    res["q_flips"] = flips
    if not unexplained:
        res.update(verdict="pass",
                   reason="%d row(s) differ; each equals sk bit for bit after %d "
                          "+-1 flip(s) of q at o/s within %g of x.5 (rounding)"
                          % (len(bad_rows), flips, boundary_eps))
    else:
        res.update(verdict="FAIL", reason="%d row(s) not explained by rounding flips"
                   % len(unexplained), unexplained=unexplained[:5])
    return res


# ---------------------------------------------------------------- routing reference

def reference_routing(inputs):
    """Independent numpy reference of moe_gating_topk's expert_idx, for
    diagnosis: GEMMs accumulated in fp64 and rounded to fp16 (the storage
    format between ops), sigmoid in fp64, the spec's tie rules by a stable
    descending sort.  Returns (idx [T, k] int32, group_margin [T],
    expert_margin [T]): the gap between the k_group-th and next group score
    and between the k-th and next kept expert score; a tiny gap is where
    fp32 rounding differences may legitimately change the selection."""
    f64 = np.float64
    g1 = (inputs["gmm1_x_1"].astype(f64) @ inputs["gmm1_weight_1"].astype(f64)
          + inputs["gmm1_bias_1"].astype(f64)).astype(np.float16)
    g2 = (g1.astype(f64) @ inputs["gmm2_weight_1"].astype(f64)).astype(np.float16)
    norm = 1.0 / (1.0 + np.exp(-g2.astype(f64)))
    v = norm + inputs["moe1_bias"].astype(f64)
    t, e = v.shape
    gs = e // MOE_GROUP_COUNT
    grp = -np.sort(-v.reshape(t, MOE_GROUP_COUNT, gs), axis=-1)
    gscore = grp[:, :, 0] + grp[:, :, 1]
    gorder = np.argsort(-gscore, axis=-1, kind="stable")
    gsorted = np.take_along_axis(gscore, gorder, axis=-1)
    keep = np.zeros((t, MOE_GROUP_COUNT), dtype=bool)
    np.put_along_axis(keep, gorder[:, :MOE_K_GROUP], True, axis=-1)
    vm = np.where(np.repeat(keep, gs, axis=1), v, -np.inf)
    order = np.argsort(-vm, axis=-1, kind="stable")
    vsorted = np.take_along_axis(vm, order, axis=-1)
    group_margin = gsorted[:, MOE_K_GROUP - 1] - gsorted[:, MOE_K_GROUP]
    expert_margin = vsorted[:, MOE_K - 1] - vsorted[:, MOE_K]
    return order[:, :MOE_K].astype(np.int32), group_margin, expert_margin


def compare_idx(peer_idx, ref_idx, group_margin, expert_margin):
    """expert_idx of a peer vs the fp64 reference: rows that differ and their
    selection margins (fp32 vs fp64 sigmoid differ by ~1e-7)."""
    diff_rows = np.nonzero((peer_idx != ref_idx).any(axis=1))[0]
    res = {"compared": "expert_idx", "shape": list(ref_idx.shape),
           "rows_differing": int(len(diff_rows)),
           "min_group_margin": float(group_margin.min()),
           "min_expert_margin": float(expert_margin.min())}
    if len(diff_rows):
        r = int(diff_rows[0])
        res["first"] = {"row": r, "peer": peer_idx[r].tolist(), "ref": ref_idx[r].tolist(),
                        "group_margin": float(group_margin[r]),
                        "expert_margin": float(expert_margin[r])}
        res["set_equal_rows"] = int(sum(set(peer_idx[i]) == set(ref_idx[i]) for i in diff_rows))
    return res
