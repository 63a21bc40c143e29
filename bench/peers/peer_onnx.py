"""The seed model (example01, scaled by T) as a standard ONNX graph (opset 18,
default domain only: no contrib ops), run with ONNX Runtime on the CPU.

Every op of the model is expressible in standard ONNX:

- grouped_matmul (fp16, group_type -1): per group Cast(fp32) -> MatMul ->
  Add(bias) -> Cast(fp16).  (ORT's CPU MatMul has no fp16 kernel on x86, so
  a user upcasts, as in the torch peer.)
- moe_gating_topk with group selection: Sigmoid, Add(bias), Reshape to
  [T, groups, E/groups], TopK(2) + ReduceSum (group_select_mode 1), TopK(k_group)
  over the group scores, ScatterElements into a [T, groups] keep-mask,
  Where(mask, v, -inf), TopK(k) over all E (ONNX TopK breaks ties by the lower
  index, the spec's rule), GatherElements + ReduceSum + Div for y.
- reshape / square (int32 Mul) / concat / reshape.
- dequant_swiglu_quant dynamic: Cast, Mul, Mul, Slice, Sigmoid*x (silu), Mul,
  Abs + ReduceMax, Div, Where (all-zero row -> 0), Round (half to even, as
  ONNX defines it), Clip, Cast(int8).
- quant_matmul: MatMulInteger(int8, int8) -> int32, Cast, Mul(scale), Cast(fp16).
  ONNX has no bit-cast op, so the packed int64 scale is decoded with integer
  arithmetic inside the graph: bits = scale & 0xFFFFE000 (BitwiseAnd), then
  sign / exponent / mantissa by Div and Mod, value = (1 + m/2^23) * 2^(e-127)
  (or m/2^23 * 2^-126 for e == 0) in fp64 -- exact for every finite fp32;
  an Inf/NaN scale (e == 255) is not handled (none can come from
  trans_quant_param of a finite scale).

The graph is built for one scenario's concrete shapes.
"""
import numpy as np

from common import (INPUT_NAMES, MOE_EPS, MOE_GROUP_COUNT, MOE_K, MOE_K_GROUP,
                    ROUTED_SCALING_FACTOR)

OPSET = 18


def build_model(inputs):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    counter = [0]

    def fresh(prefix):
        counter[0] += 1
        return "%s_%d" % (prefix, counter[0])

    def const(value, dtype):
        name = fresh("c")
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(op_type, ins, n_out=1, **attrs):
        outs = [fresh(op_type.lower()) for _ in range(n_out)]
        nodes.append(helper.make_node(op_type, ins, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE

    def gmm(x, w, b=None):
        acc = op("MatMul", [op("Cast", [x], to=F32), op("Cast", [w], to=F32)])
        if b is not None:
            acc = op("Add", [acc, op("Cast", [b], to=F32)])
        return op("Cast", [acc], to=F16)

    # sk1: grouped_matmul x2 -> moe_gating_topk
    g1_0 = gmm("gmm1_x_0", "gmm1_weight_0", "gmm1_bias_0")
    g1_1 = gmm("gmm1_x_1", "gmm1_weight_1", "gmm1_bias_1")
    g2_0 = gmm(g1_0, "gmm2_weight_0")
    g2_1 = gmm(g1_1, "gmm2_weight_1")

    t_rows = inputs["gmm1_x_1"].shape[0]
    e = inputs["gmm2_weight_1"].shape[1]
    gsz = e // MOE_GROUP_COUNT
    norm = op("Sigmoid", [op("Cast", [g2_1], to=F32)])
    v = op("Add", [norm, op("Cast", ["moe1_bias"], to=F32)])
    v3 = op("Reshape", [v, const([t_rows, MOE_GROUP_COUNT, gsz], np.int64)])
    top2, _ = op("TopK", [v3, const([2], np.int64)], n_out=2, axis=-1)
    gscore = op("ReduceSum", [top2, const([-1], np.int64)], keepdims=0)       # [T, G]
    _, gidx = op("TopK", [gscore, const([MOE_K_GROUP], np.int64)], n_out=2, axis=-1)
    zeros = const(np.zeros((t_rows, MOE_GROUP_COUNT)), np.float32)
    ones = const(np.ones((t_rows, MOE_K_GROUP)), np.float32)
    keep = op("ScatterElements", [zeros, gidx, ones], axis=1)                 # [T, G]
    keepb = op("Cast", [op("Unsqueeze", [keep, const([-1], np.int64)])], to=TensorProto.BOOL)
    vm = op("Where", [keepb, v3, const(-np.inf, np.float32)])
    vm = op("Reshape", [vm, const([t_rows, e], np.int64)])
    _, idx64 = op("TopK", [vm, const([MOE_K], np.int64)], n_out=2, axis=-1)
    y = op("GatherElements", [norm, idx64], axis=1)
    ysum = op("Add", [op("ReduceSum", [y, const([-1], np.int64)], keepdims=1),
                      const(MOE_EPS, np.float32)])
    y = op("Mul", [op("Div", [y, ysum]), const(ROUTED_SCALING_FACTOR, np.float32)])
    y = op("Cast", [y], to=F16)
    idx = op("Cast", [idx64], to=TensorProto.INT32)

    # reshape -> square -> concat -> reshape (int32)
    d1 = inputs["data1"].shape
    r1 = op("Reshape", [idx, const((-1,) + tuple(d1[1:]), np.int64)])
    sq = op("Mul", [r1, r1])
    c = op("Concat", [sq, "data1"], axis=0)
    r2 = op("Reshape", [c, const([-1, d1[-1]], np.int64)])

    # sk2: dequant_swiglu_quant (dynamic) -> quant_matmul
    two_h = d1[-1]
    h = two_h // 2
    xf = op("Mul", [op("Cast", [r2], to=F32), "dsq_input_0"])
    xf = op("Mul", [xf, op("Reshape", ["dsq_input_1", const([-1, 1], np.int64)])])
    left = op("Slice", [xf, const([0], np.int64), const([h], np.int64), const([1], np.int64)])
    right = op("Slice", [xf, const([h], np.int64), const([two_h], np.int64), const([1], np.int64)])
    o = op("Mul", [op("Mul", [right, op("Sigmoid", [right])]), left])       # silu(R) * L
    o = op("Mul", [o, op("Reshape", ["dsq_input_2", const([1, h], np.int64)])])
    m = op("ReduceMax", [op("Abs", [o]), const([1], np.int64)], keepdims=1)
    s = op("Div", [m, const(127.0, np.float32)])
    nz = op("Greater", [m, const(0.0, np.float32)])
    qpos = op("Where", [nz, op("Div", [o, s]), const(0.0, np.float32)])
    q = op("Cast", [op("Clip", [op("Round", [qpos]), const(-128.0, np.float32),
                                const(127.0, np.float32)])], to=TensorProto.INT8)
    qscale = op("Reshape", [s, const([-1], np.int64)])

    # packed int64 scale -> fp32, in-graph (no bit-cast op in ONNX)
    bits = op("BitwiseAnd", ["scale", const([0xFFFFE000], np.int64)])
    sign = op("GreaterOrEqual", [bits, const([1 << 31], np.int64)])
    expo = op("Mod", [op("Div", [bits, const([1 << 23], np.int64)]), const([256], np.int64)])
    mant = op("Cast", [op("Mod", [bits, const([1 << 23], np.int64)])], to=F64)
    frac = op("Div", [mant, const([2.0 ** 23], np.float64)])
    is_sub = op("Equal", [expo, const([0], np.int64)])
    ebias = op("Sub", [op("Cast", [expo], to=F64), const([127.0], np.float64)])
    normal = op("Mul", [op("Add", [frac, const([1.0], np.float64)]),
                        op("Pow", [const([2.0], np.float64), ebias])])
    subn = op("Mul", [frac, const([2.0 ** -126], np.float64)])
    mag = op("Where", [is_sub, subn, normal])
    sval = op("Where", [sign, op("Neg", [mag]), mag])
    scale_f = op("Cast", [sval], to=F32)

    acc = op("MatMulInteger", [q, "data2"])                                  # int32
    out = op("Cast", [op("Mul", [op("Cast", [acc], to=F32), scale_f])], to=F16)

    np2onnx = {np.dtype(np.float16): F16, np.dtype(np.float32): F32,
               np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32,
               np.dtype(np.int64): TensorProto.INT64}
    g_inputs = [helper.make_tensor_value_info(n, np2onnx[inputs[n].dtype], list(inputs[n].shape))
                for n in INPUT_NAMES]
    # The model output plus every other op result (so nothing sk computes is
    # removed as dead code) and q / o/s for the accuracy diagnosis.
    rows = t_rows * MOE_K // two_h + d1[0] * int(np.prod(d1[1:-1], dtype=np.int64))
    b2, _, n2 = inputs["data2"].shape
    named = [("output", out, F16, [b2, rows, n2]),
             ("idx", idx, TensorProto.INT32, [t_rows, MOE_K]),
             ("q", q, TensorProto.INT8, [rows, h]), ("qpos", qpos, F32, [rows, h]),
             ("y", y, F16, [t_rows, MOE_K]),
             ("g2_0", g2_0, F16, [inputs["gmm1_x_0"].shape[0], inputs["gmm2_weight_0"].shape[1]]),
             ("qscale", qscale, F32, [rows])]
    for public, internal, _, _ in named:
        nodes.append(helper.make_node("Identity", [internal], [public]))
    g_outputs = [helper.make_tensor_value_info(p, et, shp) for p, _, et, shp in named]
    graph = helper.make_graph(nodes, "superkernel_seed_model", g_inputs, g_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="superkernel bench/peers")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


class OrtPeer:
    name = "ORT"

    def build(self, inputs, threads):
        import onnxruntime as ort
        model = build_model(inputs)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(model.SerializeToString(), so,
                                         providers=["CPUExecutionProvider"])
        self.feed = {n: inputs[n] for n in INPUT_NAMES}
        res = self.sess.run(None, self.feed)
        names = [o.name for o in self.sess.get_outputs()]
        d = dict(zip(names, res))
        return {"out": d["output"], "idx": d["idx"], "q": d["q"], "qpos": d["qpos"],
                "scale": d.get("scale")}

    def runner(self):
        sess, feed = self.sess, self.feed

        def run():
            sess.run(None, feed)
        return run
