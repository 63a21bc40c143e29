"""`sk run moe-layer --weights DIR --layer N` against transformers itself.

Each test saves a small model with random weights (save_pretrained of a
small config; nothing is downloaded), runs one of its MoE layers with the sk
CLI ($SK_CLI, set by tests/python.cmake) and compares the output with the
transformers module of that layer, run in fp32 on the same input:

- the routing must be the same: the per-expert row counts (sk's expert_ends
  output) equal the counts of the experts transformers' router picks;
- y = x + block(x) (our layer adds the residual in moe_finalize_routing)
  within a tolerance relative to max |y|, per dtype: our intermediates are
  rounded to the layer's dtype (bf16 has 8 significant bits, fp16 11), and
  int8 (w8a8) also rounds the weights per channel and the activations per
  token. Measured worst cases are a quarter to a half of these bounds.

Bad checkpoints (missing tensor, wrong shape, dense layer, unsupported
config, corrupt safetensors) must fail with a message naming the problem.
"""

import json
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

SK = os.environ.get("SK_CLI", "")
if not os.path.isfile(SK):
    pytest.skip("the sk CLI is not built ($SK_CLI unset)", allow_module_level=True)

TOLERANCE = {"bf16": 1.6e-2, "fp16": 2e-3, "int8": 3e-2}
TORCH_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
SMALL = dict(vocab_size=32, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
             num_attention_heads=2)
DEEPSEEK_ATTENTION = dict(num_key_value_heads=2, q_lora_rank=None, kv_lora_rank=16, qk_rope_head_dim=8,
                          qk_nope_head_dim=8, v_head_dim=16, first_k_dense_replace=1)


def make_model(family):
    if family == "qwen3_moe":
        config = transformers.Qwen3MoeConfig(**SMALL, num_key_value_heads=1, head_dim=32, num_experts=8,
                                             num_experts_per_tok=2, norm_topk_prob=True)
        return transformers.Qwen3MoeForCausalLM(config)
    if family == "deepseek_v3":
        config = transformers.DeepseekV3Config(**SMALL, **DEEPSEEK_ATTENTION, n_routed_experts=16, n_shared_experts=1,
                                               num_experts_per_tok=4, n_group=4, topk_group=2)
        return transformers.DeepseekV3ForCausalLM(config)
    config = transformers.DeepseekV2Config(**SMALL, **DEEPSEEK_ATTENTION, n_routed_experts=8, n_shared_experts=2,
                                           num_experts_per_tok=3)
    return transformers.DeepseekV2ForCausalLM(config)


def save_checkpoint(family, dtype, directory, seed=0):
    """A small model of `family` saved in `dtype`, its MoE weights of unit
    gain (transformers' 0.02 init would make every layer output ~0)."""
    torch.manual_seed(seed)
    model = make_model(family)
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if "e_score_correction_bias" in name:
                p.copy_(torch.randn_like(p) * 0.1)
            elif ".mlp." in name:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
    model.to(TORCH_DTYPE[dtype]).save_pretrained(directory)
    return directory


def run_sk(args, check=True):
    r = subprocess.run([SK, "run", *args], capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, f"sk run {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r


def load_npy(path, dtype):
    a = np.load(path)
    if dtype in (torch.bfloat16, torch.float16):
        return torch.from_numpy(a.view(np.int16).copy()).view(dtype)
    return torch.from_numpy(a.copy())


def run_layer(directory, layer, model="moe-layer:t32", executor="auto", extra=()):
    """(x, y, expert_ends) of one sk run, x being the run's built-in input."""
    out = os.path.join(directory, f"run-{executor}")
    shutil.rmtree(out, ignore_errors=True)
    run_sk([model, "--weights", directory, "--layer", str(layer), "--iters", "1", "--executor", executor,
            "--save-inputs", out + "/in", "--save-outputs", out + "/out", *extra])
    with open(os.path.join(directory, "config.json")) as f:
        checkpoint_dtype = json.load(f)["dtype"]
    io_dtype = torch.float16 if checkpoint_dtype == "float16" and ":int8" not in model else torch.bfloat16
    x = load_npy(out + "/in/moe_x.npy", io_dtype)
    y = load_npy(out + "/out/y.npy", io_dtype)
    ends = torch.from_numpy(np.load(out + "/out/expert_ends.npy"))
    return x, y, ends


def reference(directory, layer, x):
    """transformers' own module in fp32: (x + block(x), its expert indices)."""
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    block = model.model.layers[layer].mlp
    x32 = x.float()
    with torch.no_grad():
        y = x32 + block(x32[None])[0]
        _, _, indices = block.gate(x32)
    return y, indices


CASES = [(family, dtype, quant) for family in ("qwen3_moe", "deepseek_v3", "deepseek_v2")
         for dtype in ("bf16", "fp16", "fp32") for quant in ("", ":int8")]


@pytest.mark.parametrize("family,dtype,quant", CASES)
def test_layer_matches_transformers(tmp_path, family, dtype, quant):
    directory = save_checkpoint(family, dtype, str(tmp_path / "ckpt"))
    x, y, ends = run_layer(directory, 1, "moe-layer:t32" + quant)
    want_y, indices = reference(directory, 1, x)
    counts = torch.bincount(indices.flatten(), minlength=ends.numel())
    # w8a8 reports counts per expert; the float layers cumulative rows.
    want_ends = counts if quant else torch.cumsum(counts, 0)
    assert torch.equal(ends, want_ends), f"routing differs: sk {ends.tolist()}, transformers {want_ends.tolist()}"
    kind = "int8" if quant else ("fp16" if dtype == "fp16" else "bf16")
    err = ((y.float() - want_y).abs().max() / want_y.abs().max()).item()
    assert err <= TOLERANCE[kind], f"max |sk - transformers| / max |y| = {err:.3g} > {TOLERANCE[kind]}"


def test_executors_bitwise_equal(tmp_path):
    directory = save_checkpoint("deepseek_v3", "bf16", str(tmp_path / "ckpt"))
    outs = [run_layer(directory, 1, "moe-layer:t16", executor) for executor in ("eager", "jit", "reference")]
    for x, y, ends in outs[1:]:
        assert torch.equal(y.view(torch.int16), outs[0][1].view(torch.int16))
        assert torch.equal(ends, outs[0][2])


def test_fused_experts_layout(tmp_path):
    """experts.gate_up_proj [E, 2I, H] / experts.down_proj [E, H, I] (the
    layout transformers 5 keeps in memory) read as the per-expert tensors."""
    directory = save_checkpoint("qwen3_moe", "bf16", str(tmp_path / "ckpt"))
    _, y_split, _ = run_layer(directory, 1)
    path = os.path.join(directory, "model.safetensors")
    tensors = safetensors_torch.load_file(path)
    prefix = "model.layers.1.mlp.experts."
    experts = 8
    gate_up = torch.stack([torch.cat([tensors.pop(f"{prefix}{j}.gate_proj.weight"),
                                      tensors.pop(f"{prefix}{j}.up_proj.weight")]) for j in range(experts)])
    down = torch.stack([tensors.pop(f"{prefix}{j}.down_proj.weight") for j in range(experts)])
    tensors[prefix + "gate_up_proj"], tensors[prefix + "down_proj"] = gate_up, down
    safetensors_torch.save_file(tensors, path, metadata={"format": "pt"})
    _, y_fused, _ = run_layer(directory, 1)
    assert torch.equal(y_fused.view(torch.int16), y_split.view(torch.int16))


FP8_BLOCK = [16, 32]  # small blocks, so the test's 32 x 64 weights hold several


def quantize_fp8(directory, out_directory):
    """DeepSeek-V3's published FP8 format from a saved checkpoint: each
    routed and shared expert weight of the MoE layers becomes F8_E4M3 with
    a float32 "<name>_scale_inv" per FP8_BLOCK block (value = fp8 * scale),
    and config.json gets its quantization_config. Returns the dequantized
    weights (fp32), as DeepSeek's own weight_dequant computes them."""
    shutil.copytree(directory, out_directory)
    path = os.path.join(out_directory, "model.safetensors")
    tensors = safetensors_torch.load_file(path)
    dequantized = {}
    br, bc = FP8_BLOCK
    for name in [n for n in tensors if ".mlp.experts." in n or ".mlp.shared_experts." in n]:
        w = tensors[name].float()
        rows, cols = w.shape
        blocks = w.reshape(rows // br, br, cols // bc, bc)
        scale = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
        q = (blocks / scale[:, None, :, None]).reshape(rows, cols).to(torch.float8_e4m3fn)
        tensors[name], tensors[name + "_scale_inv"] = q, scale.contiguous()
        expand = scale.repeat_interleave(br, 0).repeat_interleave(bc, 1)
        dequantized[name] = q.float() * expand
    safetensors_torch.save_file(tensors, path, metadata={"format": "pt"})
    edit_config(out_directory, quantization_config={"activation_scheme": "dynamic", "fmt": "e4m3",
                                                    "quant_method": "fp8", "weight_block_size": FP8_BLOCK})
    return dequantized


def test_fp8_checkpoint(tmp_path):
    """An FP8 checkpoint's layer equals, bit for bit, the bf16 checkpoint
    holding its dequantized weights (fp8 * scale in fp32, rounded to bf16
    once, as torch rounds them), and matches transformers on those weights,
    as its int8 (w8a8) layer does within int8's tolerance."""
    bf16 = save_checkpoint("deepseek_v3", "bf16", str(tmp_path / "bf16"))
    fp8 = str(tmp_path / "fp8")
    dequantized = quantize_fp8(bf16, fp8)
    edit_safetensors(os.path.join(bf16, "model.safetensors"),
                     lambda t: t.update({n: w.to(torch.bfloat16) for n, w in dequantized.items()}))
    r = run_sk(["moe-layer:t4", "--weights", fp8, "--iters", "1"])
    assert "FP8 weights (blocks of 16 x 32)" in r.stdout, r.stdout
    x, y, ends = run_layer(fp8, 1, "moe-layer:t32")
    x_ref, y_ref, ends_ref = run_layer(bf16, 1, "moe-layer:t32")
    assert torch.equal(x.view(torch.int16), x_ref.view(torch.int16))
    assert torch.equal(y.view(torch.int16), y_ref.view(torch.int16)), "the FP8 layer differs from its bf16 dequantization"
    assert torch.equal(ends, ends_ref)
    want_y, indices = reference(bf16, 1, x)
    counts = torch.bincount(indices.flatten(), minlength=ends.numel())
    assert torch.equal(ends, torch.cumsum(counts, 0))
    err = ((y.float() - want_y).abs().max() / want_y.abs().max()).item()
    assert err <= TOLERANCE["bf16"], f"max |sk - transformers| / max |y| = {err:.3g}"
    # w8a8 rounds the exact fp32 dequantized values per channel (not their
    # bf16 roundings), so it is checked against transformers only.
    _, y8, counts8 = run_layer(fp8, 1, "moe-layer:t32:int8")
    assert torch.equal(counts8, counts)
    err = ((y8.float() - want_y).abs().max() / want_y.abs().max()).item()
    assert err <= TOLERANCE["int8"], f"int8: max |sk - transformers| / max |y| = {err:.3g}"


FP8_BAD = {
    "missing scales": (lambda t: t.pop("model.layers.1.mlp.experts.3.down_proj.weight_scale_inv"),
                       "tensor model.layers.1.mlp.experts.3.down_proj.weight_scale_inv is missing"),
    "wrong scale shape": (lambda t: t.update({"model.layers.1.mlp.shared_experts.up_proj.weight_scale_inv":
                                              torch.ones(3, 2)}),
                          "shared_experts.up_proj.weight_scale_inv: shape [3, 2], the config gives [2, 2]"),
    "fp8 gate": (lambda t: t.update({"model.layers.1.mlp.gate.weight": torch.zeros(16, 64).to(torch.float8_e4m3fn)}),
                 "gate.weight: dtype F8_E4M3 is not supported"),
}


@pytest.mark.parametrize("case", sorted(FP8_BAD))
def test_bad_fp8_checkpoint_is_a_clear_error(tmp_path, case):
    fp8 = str(tmp_path / "fp8")
    quantize_fp8(save_checkpoint("deepseek_v3", "bf16", str(tmp_path / "bf16")), fp8)
    edit, message = FP8_BAD[case]
    edit_safetensors(os.path.join(fp8, "model.safetensors"), edit)
    r = run_sk(["moe-layer:t4", "--weights", fp8, "--iters", "1"], check=False)
    assert r.returncode == 1 and message in r.stderr, r.stderr


def test_first_moe_layer_is_the_default(tmp_path):
    """DeepSeek's layer 0 is dense (first_k_dense_replace 1): no --layer means 1."""
    directory = save_checkpoint("deepseek_v2", "bf16", str(tmp_path / "ckpt"))
    r = run_sk(["moe-layer:t4", "--weights", directory, "--iters", "1"])
    assert "deepseek_v2 layer 1 of" in r.stdout


def edit_safetensors(path, edit):
    tensors = safetensors_torch.load_file(path)
    edit(tensors)
    safetensors_torch.save_file(tensors, path, metadata={"format": "pt"})


def edit_config(directory, **changes):
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    config.update(changes)
    with open(path, "w") as f:
        json.dump(config, f)


def truncate(path, nbytes):
    with open(path, "r+b") as f:
        f.truncate(nbytes)


def bad_header(path, text, length=None, data=b""):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if length is None else length) + text + data)


BAD = {
    "missing tensor": (lambda d, st: edit_safetensors(st, lambda t: t.pop("model.layers.1.mlp.experts.5.up_proj.weight")),
                       ["--layer", "1"], "tensor model.layers.1.mlp.experts.5.up_proj.weight is missing"),
    "wrong shape": (lambda d, st: edit_safetensors(st, lambda t: t.update(
        {"model.layers.1.mlp.gate.weight": torch.zeros(16, 60, dtype=torch.bfloat16)})),
                    ["--layer", "1"], "shape [16, 60], the config gives [16, 64]"),
    "integer weights": (lambda d, st: edit_safetensors(st, lambda t: t.update(
        {"model.layers.1.mlp.gate.weight": torch.zeros(16, 64, dtype=torch.int32)})),
                        ["--layer", "1"], "dtype I32 is not supported"),
    "dense layer": (lambda d, st: None, ["--layer", "0"], "layer 0 is not a MoE layer"),
    "no such layer": (lambda d, st: None, ["--layer", "7"], "the model has 2 layers"),
    "unsupported model": (lambda d, st: edit_config(d, model_type="mixtral"), [], "model_type \"mixtral\" is not supported"),
    "unsupported activation": (lambda d, st: edit_config(d, hidden_act="gelu"), [], "hidden_act = \"gelu\""),
    "bad groups": (lambda d, st: edit_config(d, n_group=3), [], "n_group = 3"),
    "quantized": (lambda d, st: edit_config(d, quantization_config={"quant_method": "awq"}), [],
                  "quantization_config: only block-scaled FP8"),
    "fp8 without blocks": (lambda d, st: edit_config(d, quantization_config={"quant_method": "fp8"}), [],
                           "\"weight_block_size\" must be [rows, columns]"),
    "fp8 weights, no quantization_config": (lambda d, st: edit_safetensors(st, lambda t: t.update(
        {"model.layers.1.mlp.experts.0.up_proj.weight": torch.zeros(32, 64).to(torch.float8_e4m3fn)})),
        [], "experts.0.up_proj.weight: dtype F8_E4M3 is not supported (F32, F16, BF16)"),
    "bad json": (lambda d, st: open(os.path.join(d, "config.json"), "w").write("{\"model_type\": "), [],
                 "invalid JSON at byte"),
    "truncated data": (lambda d, st: truncate(st, os.path.getsize(st) - 100), [], "data_offsets"),
    "header too long": (lambda d, st: bad_header(st, b"{}", 1 << 40), [], "header length"),
    "bad header": (lambda d, st: bad_header(st, b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', data=bytes(4)),
                   [], "4 bytes of data for 2 elements"),
    "no safetensors": (lambda d, st: os.remove(st), [], "no *.safetensors file"),
    "no config": (lambda d, st: os.remove(os.path.join(d, "config.json")), [], "config.json: No such file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_checkpoint_is_a_clear_error(tmp_path, case):
    directory = save_checkpoint("deepseek_v3", "bf16", str(tmp_path / "ckpt"))
    edit, args, message = BAD[case]
    edit(directory, os.path.join(directory, "model.safetensors"))
    r = run_sk(["moe-layer:t4", "--weights", directory, "--iters", "1", *args], check=False)
    assert r.returncode == 1, f"exit {r.returncode}: {r.stderr}"
    assert message in r.stderr, r.stderr
    assert "--weights" in r.stderr


def test_weights_need_the_checkpoint_model(tmp_path):
    directory = save_checkpoint("qwen3_moe", "bf16", str(tmp_path / "ckpt"))
    r = run_sk(["moe-layer:tiny", "--weights", directory], check=False)
    assert r.returncode == 2 and "with --weights the model is the checkpoint's layer" in r.stderr
    r = run_sk(["moe-layer", "--layer", "1"], check=False)
    assert r.returncode == 2 and "--layer needs --weights" in r.stderr


def test_every_command_takes_weights(tmp_path):
    """plan, source, bench and profile build the checkpoint's layer too."""
    directory = save_checkpoint("deepseek_v3", "bf16", str(tmp_path / "ckpt"))
    common = ["moe-layer:t4", "--weights", directory, "--layer", "1"]
    runs = {
        "plan": (common, "deepseek_v3 layer 1 of"),
        "source": (common + ["--scope", "moe"], "superkernel JIT: one super kernel"),
        "bench": (common + ["--iters", "5", "--threads", "2", "--no-floor"], "bitwise equal"),
        "profile": (common + ["--iters", "2", "--out", str(tmp_path / "prof")], "outputs bitwise equal"),
    }
    for command, (args, expected) in runs.items():
        r = subprocess.run([SK, command, *args], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"sk {command}: exit {r.returncode}\n{r.stderr}"
        assert expected in r.stdout, f"sk {command}: no '{expected}' in\n{r.stdout}"
