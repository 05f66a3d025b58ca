#!/usr/bin/env python3
"""An independent MLX -> GGUF model writer for tests/cli/gguf_independent.sh, written with numpy
from the documented layouts only (GGUF's container, ggml's q4_1 block, llama.cpp's qwen35moe /
qwen3next / deepseek2 tensor names and transforms as docs/gguf.md lists them), sharing no code with
oracle/gguf_convert.cpp. 4-bit MLX matrices become q4_1 (one block per 32 values: d = scale,
m = bias as f16, the codes unchanged), 8-bit ones f32; both checked exact.
Usage: mlx_to_gguf.py MLX_DIR OUT.gguf"""
import json
import os
import struct
import sys

import numpy as np

F32, Q4_1, BF16 = 0, 3, 30


def read_safetensors(path):
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    n = int(np.frombuffer(raw[:8], "<u8")[0])
    header = json.loads(bytes(raw[8:8 + n]))
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        dt = {"U32": "<u4", "F32": "<f4", "BF16": "<u2"}[info["dtype"]]
        a = np.frombuffer(raw[8 + n + lo:8 + n + hi], dtype=dt).reshape(info["shape"])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name.removeprefix("language_model.")] = a
    return out


def load(mlx_dir):
    top = json.load(open(os.path.join(mlx_dir, "config.json")))
    cfg = dict(top.get("text_config") or top)
    cfg["model_type"] = top.get("model_type", cfg.get("model_type"))
    quant = top.get("quantization", {})
    bits = {k.removeprefix("language_model."): v["bits"] for k, v in quant.items() if isinstance(v, dict)}
    tensors = {}
    for f in sorted(os.listdir(mlx_dir)):
        if f.endswith(".safetensors") and f.startswith("model"):
            tensors.update(read_safetensors(os.path.join(mlx_dir, f)))
    return cfg, quant.get("bits", 4), quant.get("group_size", 64), bits, tensors


class Mlx:
    def __init__(self, mlx_dir):
        self.cfg, self.bits, self.group, self.overrides, self.t = load(mlx_dir)

    def codes(self, module):
        """Integer codes [rows, cols] and per-value scale, bias [rows, cols] of an MLX matrix."""
        w = self.t[module + ".weight"]
        b = self.overrides.get(module, self.bits)
        per = 32 // b
        q = (w[..., None] >> (np.arange(per, dtype=np.uint32) * b)) & ((1 << b) - 1)
        q = q.reshape(*w.shape[:-1], w.shape[-1] * per)
        s = np.repeat(self.t[module + ".scales"], self.group, axis=-1)
        z = np.repeat(self.t[module + ".biases"], self.group, axis=-1)
        return b, q, s, z


def q4_1_rows(q, s, z):
    """[rows, cols] codes with per-value scale/bias (constant over each 32) -> q4_1 bytes [rows, cols/32, 20]."""
    rows, cols = q.shape
    qb, sb, zb = q.reshape(rows, cols // 32, 32), s.reshape(rows, cols // 32, 32)[..., 0], z.reshape(rows, cols // 32, 32)[..., 0]
    d, m = sb.astype(np.float16), zb.astype(np.float16)
    assert (d.astype(np.float32) == sb).all() and (m.astype(np.float32) == zb).all(), "scale or bias not an f16 value"
    out = np.zeros((rows, cols // 32, 20), np.uint8)
    out[..., 0:2] = d.view(np.uint8).reshape(rows, cols // 32, 2)
    out[..., 2:4] = m.view(np.uint8).reshape(rows, cols // 32, 2)
    out[..., 4:] = (qb[..., :16] | (qb[..., 16:] << 4)).astype(np.uint8)
    return out


class Gguf:
    def __init__(self):
        self.kv, self.tensors = [], []

    def meta(self, key, value):
        self.kv.append((key, value))

    def add(self, name, gtype, ne, data):
        self.tensors.append((name, gtype, list(ne), np.ascontiguousarray(data).tobytes()))

    def f32(self, name, a, ne=None):
        a = np.asarray(a, np.float32)
        self.add(name, F32, ne or list(reversed(a.shape)), a)

    def write(self, path, align=32):
        def s(x):
            b = x.encode()
            return struct.pack("<Q", len(b)) + b

        def value(v):
            if isinstance(v, str):
                return struct.pack("<I", 8) + s(v)
            if isinstance(v, bool):
                return struct.pack("<IB", 7, int(v))
            if isinstance(v, float):
                return struct.pack("<If", 6, v)
            if isinstance(v, list):
                return struct.pack("<IIQ", 9, 5, len(v)) + struct.pack(f"<{len(v)}i", *v)
            return struct.pack("<II", 4, v)

        head = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        head += b"".join(s(k) + value(v) for k, v in self.kv)
        data = b""
        for name, gtype, ne, payload in self.tensors:
            head += s(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
            head += struct.pack("<IQ", gtype, len(data))
            data += payload + b"\0" * (-len(payload) % align)
        head += b"\0" * (-len(head) % align)
        with open(path, "wb") as f:
            f.write(head + data)


def matrix(g, mx, module, name, force_f32=False, rows=None, col_blocks=None):
    """An MLX matrix as a GGUF tensor: q4_1 when 4-bit, else f32; `rows` selects and orders rows,
    `col_blocks` orders its 32-column blocks (value heads)."""
    b, q, s, z = mx.codes(module)
    if rows is not None:
        q, s, z = q[rows], s[rows], z[rows]
    if b == 4 and not force_f32:
        blocks = q4_1_rows(q, s, z)
        if col_blocks is not None:
            blocks = blocks[:, col_blocks]
        g.add(name, Q4_1, [q.shape[1], q.shape[0]], blocks)
        return
    assert col_blocks is None
    w = q.astype(np.float64) * s + z
    assert (w.astype(np.float32) == w).all(), f"{module}: not exact in f32"
    g.f32(name, w)


def layer(g, mx, c, i, arch):
    L, B = f"model.layers.{i}.", f"blk.{i}."
    t = mx.t
    g.f32(B + "attn_norm.weight", t[L + "input_layernorm.weight"])
    g.f32(B + "post_attention_norm.weight", t[L + "post_attention_layernorm.weight"])
    if L + "self_attn.q_proj.weight" in t:
        for hf, gg in [("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")]:
            matrix(g, mx, L + "self_attn." + hf, B + gg + ".weight")
        g.f32(B + "attn_q_norm.weight", t[L + "self_attn.q_norm.weight"])
        g.f32(B + "attn_k_norm.weight", t[L + "self_attn.k_norm.weight"])
    else:
        A = L + "linear_attn."
        hk, hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
        dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
        r, kt = hv // hk, hk * dk
        conv = t[A + "conv1d.weight"].reshape(2 * kt + hv * dv, -1)
        a_log, dt = t[A + "A_log"].astype(np.float32), t[A + "dt_bias"].astype(np.float32)
        if arch == "qwen3next":
            # in_proj_qkvz rows per key head: q (dk), k (dk), v (r dv), z (r dv).
            per = 2 * dk + 2 * r * dv
            grp = lambda lo, n: [g_ * per + lo + j for g_ in range(hk) for j in range(n)]
            matrix(g, mx, A + "in_proj_qkvz", B + "attn_qkv.weight", rows=grp(0, dk) + grp(dk, dk) + grp(2 * dk, r * dv))
            matrix(g, mx, A + "in_proj_qkvz", B + "attn_gate.weight", rows=grp(2 * dk + r * dv, r * dv))
            matrix(g, mx, A + "in_proj_ba", B + "ssm_ba.weight")
            matrix(g, mx, A + "out_proj", B + "ssm_out.weight")
        else:
            # Value heads tiled: file position p holds HF head (p % hk) r + p // hk.
            heads = [(p % hk) * r + p // hk for p in range(hv)]
            vrows = [h * dv + j for h in heads for j in range(dv)]
            matrix(g, mx, A + "in_proj_qkv", B + "attn_qkv.weight", rows=list(range(2 * kt)) + [2 * kt + x for x in vrows])
            matrix(g, mx, A + "in_proj_z", B + "attn_gate.weight", rows=vrows)
            matrix(g, mx, A + "in_proj_b", B + "ssm_beta.weight", rows=heads)
            matrix(g, mx, A + "in_proj_a", B + "ssm_alpha.weight", rows=heads)
            nb = dv // 32
            matrix(g, mx, A + "out_proj", B + "ssm_out.weight", col_blocks=[h * nb + j for h in heads for j in range(nb)])
            conv = np.concatenate([conv[:2 * kt], conv[2 * kt:].reshape(hv, dv, -1)[heads].reshape(hv * dv, -1)])
            a_log, dt = a_log[heads], dt[heads]
        g.f32(B + "ssm_conv1d.weight", conv)
        g.f32(B + "ssm_dt.bias", dt)
        g.f32(B + "ssm_a", (-np.exp(a_log.astype(np.float64))).astype(np.float32))
        g.f32(B + "ssm_norm.weight", t[A + "norm.weight"])
    M = L + "mlp."
    matrix(g, mx, M + "gate", B + "ffn_gate_inp.weight", force_f32=True)
    matrix(g, mx, M + "shared_expert_gate", B + "ffn_gate_inp_shexp.weight", force_f32=True)
    for hf, gg in [("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")]:
        matrix(g, mx, M + "shared_expert." + hf, B + f"ffn_{gg}_shexp.weight")
        b, q, s, z = mx.codes(M + "switch_mlp." + hf)  # [E, rows, cols]
        e, rows, cols = q.shape
        blocks = q4_1_rows(q.reshape(e * rows, cols), s.reshape(e * rows, cols), z.reshape(e * rows, cols))
        g.add(B + f"ffn_{gg}_exps.weight", Q4_1, [cols, rows, e], blocks)


def deepseek_layer(g, mx, c, i):
    """deepseek2: kv_b_proj [H (Dn + Dv), L] split per head into attn_k_b [H, L, Dn] (the nope rows
    transposed, f32) and attn_v_b [H, Dv, L]; the BF16 router kept BF16."""
    L, B = f"model.layers.{i}.", f"blk.{i}."
    A, t = L + "self_attn.", mx.t
    g.f32(B + "attn_norm.weight", t[L + "input_layernorm.weight"])
    g.f32(B + "ffn_norm.weight", t[L + "post_attention_layernorm.weight"])
    for hf, gg in [("q_a_proj", "attn_q_a"), ("q_b_proj", "attn_q_b"), ("kv_a_proj_with_mqa", "attn_kv_a_mqa"),
                   ("o_proj", "attn_output")]:
        matrix(g, mx, A + hf, B + gg + ".weight")
    g.f32(B + "attn_q_a_norm.weight", t[A + "q_a_layernorm.weight"])
    g.f32(B + "attn_kv_a_norm.weight", t[A + "kv_a_layernorm.weight"])
    h, dn, dv, lr = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
    b, q, sc, z = mx.codes(A + "kv_b_proj")
    w = (q.astype(np.float64) * sc + z).reshape(h, dn + dv, lr)
    k_b = np.ascontiguousarray(w[:, :dn, :].transpose(0, 2, 1))  # [H, L, Dn]
    assert (k_b.astype(np.float32) == k_b).all(), "kv_b_proj: not exact in f32"
    g.f32(B + "attn_k_b.weight", k_b, ne=[dn, lr, h])
    v_rows = [x * (dn + dv) + dn + e for x in range(h) for e in range(dv)]
    if b == 4:
        g.add(B + "attn_v_b.weight", Q4_1, [lr, dv, h], q4_1_rows(q[v_rows], sc[v_rows], z[v_rows]))
    else:
        v = q[v_rows].astype(np.float64) * sc[v_rows] + z[v_rows]
        assert (v.astype(np.float32) == v).all()
        g.f32(B + "attn_v_b.weight", v, ne=[lr, dv, h])
    M = L + "mlp."
    if i < c["first_k_dense_replace"]:
        for hf, gg in [("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")]:
            matrix(g, mx, M + hf, B + f"ffn_{gg}.weight")
        return
    gate = t[M + "gate.weight"]
    g.add(B + "ffn_gate_inp.weight", BF16, [gate.shape[1], gate.shape[0]], (gate.view(np.uint32) >> 16).astype("<u2"))
    g.f32(B + "exp_probs_b.bias", t[M + "gate.e_score_correction_bias"])
    for hf, gg in [("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")]:
        matrix(g, mx, M + "shared_experts." + hf, B + f"ffn_{gg}_shexp.weight")
        b, q, sc, z = mx.codes(M + "switch_mlp." + hf)
        e, rows, cols = q.shape
        g.add(B + f"ffn_{gg}_exps.weight", Q4_1, [cols, rows, e],
              q4_1_rows(q.reshape(e * rows, cols), sc.reshape(e * rows, cols), z.reshape(e * rows, cols)))


def deepseek_main(mx, out):
    c = mx.cfg
    rope = c.get("rope_parameters") or c["rope_scaling"]
    assert rope["mscale"] == rope["mscale_all_dim"], "llama.cpp's deepseek2 takes mscale = mscale_all_dim"
    a = "deepseek2."
    g = Gguf()
    g.meta("general.architecture", "deepseek2")
    h, lr, dr = c["num_attention_heads"], c["kv_lora_rank"], c["qk_rope_head_dim"]
    for key, v in [("block_count", c["num_hidden_layers"]), ("context_length", c["max_position_embeddings"]),
                   ("embedding_length", c["hidden_size"]), ("feed_forward_length", c["intermediate_size"]),
                   ("attention.head_count", h), ("attention.head_count_kv", 1),
                   ("attention.key_length", lr + dr), ("attention.value_length", lr),
                   ("attention.key_length_mla", c["qk_nope_head_dim"] + dr), ("attention.value_length_mla", c["v_head_dim"]),
                   ("attention.q_lora_rank", c["q_lora_rank"]), ("attention.kv_lora_rank", lr),
                   ("rope.dimension_count", dr), ("rope.scaling.original_context_length", rope["original_max_position_embeddings"]),
                   ("leading_dense_block_count", c["first_k_dense_replace"]), ("expert_count", c["n_routed_experts"]),
                   ("expert_used_count", c["num_experts_per_tok"]), ("expert_feed_forward_length", c["moe_intermediate_size"]),
                   ("expert_shared_count", c["n_shared_experts"]), ("expert_gating_func", 2),
                   ("expert_group_count", c["n_group"]), ("expert_group_used_count", c["topk_group"])]:
        g.meta(a + key, int(v))
    g.meta(a + "attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]))
    g.meta(a + "rope.freq_base", float(rope.get("rope_theta", c.get("rope_theta", 10000.0))))
    g.meta(a + "rope.scaling.type", "yarn")
    g.meta(a + "rope.scaling.factor", float(rope["factor"]))
    g.meta(a + "rope.scaling.yarn_log_multiplier", 0.1 * float(rope["mscale_all_dim"]))
    g.meta(a + "rope.scaling.yarn_beta_fast", float(rope.get("beta_fast", 32.0)))
    g.meta(a + "rope.scaling.yarn_beta_slow", float(rope.get("beta_slow", 1.0)))
    g.meta(a + "expert_weights_scale", float(c["routed_scaling_factor"]))
    g.meta(a + "expert_weights_norm", bool(c.get("norm_topk_prob", True)))
    matrix(g, mx, "model.embed_tokens", "token_embd.weight")
    if "lm_head.weight" in mx.t:
        matrix(g, mx, "lm_head", "output.weight")
    g.f32("output_norm.weight", mx.t["model.norm.weight"])
    for i in range(c["num_hidden_layers"]):
        deepseek_layer(g, mx, c, i)
    g.write(out)


def main(mlx_dir, out):
    mx = Mlx(mlx_dir)
    c = mx.cfg
    if c["model_type"] == "deepseek_v3":
        return deepseek_main(mx, out)
    arch = "qwen3next" if c["model_type"] == "qwen3_next" else "qwen35moe"
    rope = c.get("rope_parameters") or {}
    interval = c.get("full_attention_interval", 4)
    kinds = c.get("layer_types") or ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                     for i in range(c["num_hidden_layers"])]
    interval = kinds.index("full_attention") + 1
    assert all((k == "full_attention") == ((i + 1) % interval == 0) for i, k in enumerate(kinds))
    a = arch + "."
    g = Gguf()
    g.meta("general.architecture", arch)
    for key, v in [("block_count", c["num_hidden_layers"]), ("context_length", c.get("max_position_embeddings", 262144)),
                   ("embedding_length", c["hidden_size"]), ("attention.head_count", c["num_attention_heads"]),
                   ("attention.head_count_kv", c["num_key_value_heads"]), ("attention.key_length", c["head_dim"]),
                   ("attention.value_length", c["head_dim"]),
                   ("rope.dimension_count", int(c["head_dim"] * rope.get("partial_rotary_factor", 0.25))),
                   ("expert_count", c["num_experts"]), ("expert_used_count", c["num_experts_per_tok"]),
                   ("expert_feed_forward_length", c["moe_intermediate_size"]),
                   ("expert_shared_feed_forward_length", c["shared_expert_intermediate_size"]),
                   ("ssm.conv_kernel", c["linear_conv_kernel_dim"]), ("ssm.state_size", c["linear_key_head_dim"]),
                   ("ssm.group_count", c["linear_num_key_heads"]), ("ssm.time_step_rank", c["linear_num_value_heads"]),
                   ("ssm.inner_size", c["linear_value_head_dim"] * c["linear_num_value_heads"]),
                   ("full_attention_interval", interval)]:
        g.meta(a + key, int(v))
    g.meta(a + "rope.freq_base", float(rope.get("rope_theta", c.get("rope_theta", 10000.0))))
    g.meta(a + "attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]))
    if arch == "qwen35moe":
        g.meta(a + "rope.dimension_sections", list(rope.get("mrope_section", [11, 11, 10])) + [0])
    matrix(g, mx, "model.embed_tokens", "token_embd.weight")
    if "lm_head.weight" in mx.t:
        matrix(g, mx, "lm_head", "output.weight")
    g.f32("output_norm.weight", mx.t["model.norm.weight"])
    for i in range(c["num_hidden_layers"]):
        layer(g, mx, c, i, arch)
    g.write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
