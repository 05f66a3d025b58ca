"""Every op of kernels_cpu/op_list.def, in each tier.

``tier`` is ``"ref64"`` (the truth: scalar loops, f64 accumulation and transcendentals),
``"ref32"`` (the same loops in f32 in the engines' operation order) or ``"fast"``.

Arrays are passed to C++ by their buffers, never converted: float inputs must be float32,
indices int32 (rope's positions int64), bf16 weights uint16 patterns, all C-contiguous and
aligned; anything else is a TypeError (dtype) or ValueError (layout, shape), naming the op, the
tensor, what was expected and what was found. Shape errors found by the C++ contract are
``moeoracle.Error`` (a ValueError). The op's size parameters are read from the arrays' shapes
(leading dimensions are flattened into tokens/rows); the other parameters are keywords.

Outputs are new numpy arrays, or written into ``out=`` (zero-copy, in place where the op allows
it: e.g. ``rmsnorm(x, w, out=x)``). Stateful ops take the state before (``None``: zeros, a
sequence start) and return the state after, in a new array or in ``state_out=`` (pass the state
itself to update it in place). Each op's shape contract is in kernels_cpu/ops/<op>.h.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from . import _core
from .quant import Expert, QuantizedMatrix

TIERS = ("ref64", "ref32", "fast")
#: The op list, in op_list.def order: (stem, summary).
OP_LIST: tuple[tuple[str, str], ...] = tuple(tuple(o) for o in _core.OP_LIST)
#: The op names, in op_list.def order.
OPS: tuple[str, ...] = tuple(stem for stem, _ in OP_LIST)


def params(op: str) -> dict:
    """The op's params struct fields with their C++ defaults."""
    if op not in _core.OP_PARAMS:
        raise ValueError(f"params: unknown op '{op}', expected one of {', '.join(OPS)}")
    return dict(_core.OP_PARAMS[op])


# --- helpers ---------------------------------------------------------------------------------

def _arr(x, op: str, name: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: {name} is a {type(x).__name__}, expected a numpy.ndarray")
    return x


def _split(x, op: str, name: str, dims: Sequence[str]) -> tuple[int, tuple[int, ...]]:
    """(product of the leading dimensions, the trailing len(dims) dimensions) of x's shape."""
    x = _arr(x, op, name)
    k = len(dims)
    if x.ndim < k:
        raise ValueError(f"{op}: {name} has shape {list(x.shape)}, expected [..., {', '.join(dims)}]")
    return int(np.prod(x.shape[:x.ndim - k], dtype=np.int64)), tuple(int(d) for d in x.shape[x.ndim - k:])


def _out(out, shape, dtype, op: str, name: str) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    if out is None:
        return np.empty(shape, dtype)
    _arr(out, op, name)
    if out.shape != shape:
        raise ValueError(f"{op}: {name} has shape {list(out.shape)}, expected {list(shape)}")
    return out


def _state(state, state_out, shape, op: str, name: str) -> np.ndarray:
    """The array the op updates in place: state_out (holding `state` first) or a new one."""
    shape = tuple(int(s) for s in shape)
    if state is not None:
        _arr(state, op, name)
        if state.shape != shape:
            raise ValueError(f"{op}: {name} has shape {list(state.shape)}, expected {list(shape)}")
    if state_out is None:
        return np.zeros(shape, np.float32) if state is None else state.copy()
    _out(state_out, shape, None, op, name + "_out")
    if state is None:
        state_out[...] = 0
    elif state is not state_out:
        np.copyto(state_out, state, casting="no")
    return state_out


def _capacity(cache, other_cache, past: int, tokens: int, op: str, names: tuple[str, str]) -> int:
    """The rows of an attention op's pair of caches: the first one's, or past + tokens for new ones
    (both None, which holds no past rows)."""
    if (cache is None) != (other_cache is None):
        raise ValueError(f"{op}: give both {names[0]} and {names[1]}, or neither")
    if cache is None:
        if past != 0:
            raise ValueError(f"{op}: past={past} without caches, expected {names[0]} and {names[1]} holding the "
                             "past rows (or past=0)")
        return past + tokens
    return int(_arr(cache, op, names[0]).shape[0]) if cache.ndim else 0


def _quant(W, op: str, name: str) -> QuantizedMatrix:
    if not isinstance(W, QuantizedMatrix):
        raise TypeError(f"{op}: {name} is a {type(W).__name__}, expected a moeoracle.QuantizedMatrix "
                        "(from moeoracle.quantize, Model.expert, ...)")
    if not isinstance(W.w, np.ndarray) or W.w.ndim != 2:
        raise ValueError(f"{op}: {name}.w is not a 2-D array, expected uint32 [rows, cols * bits / 32]")
    if W.bits not in (2, 4, 8):
        raise ValueError(f"{op}: {name} has bits={W.bits}, expected 2, 4 or 8")
    return W


def _expert(e, op: str, name: str) -> Expert:
    if not isinstance(e, Expert):
        raise TypeError(f"{op}: {name} is a {type(e).__name__}, expected a moeoracle.Expert(gate, up, down)")
    for part in ("gate", "up", "down"):
        _quant(getattr(e, part), op, f"{name}.{part}")
    return e


# --- quantized weights and conversions -------------------------------------------------------

def dequant(W: QuantizedMatrix, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y [rows, cols] float32 = q * s + b (bit-exact in every tier)."""
    W = _quant(W, "dequant", "W")
    y = _out(out, (W.rows, W.cols), np.float32, "dequant", "y")
    _core.dequant(tier, dict(rows=W.rows, cols=W.cols, bits=W.bits, group_size=W.group_size), W, y)
    return y


def dequantize(q: QuantizedMatrix, tier: str = "ref64", out: np.ndarray | None = None) -> np.ndarray:
    """float32 [rows, cols] = q * s + b: the `dequant` op (every tier gives the same bits)."""
    return dequant(q, tier=tier, out=out)


def matvec_q(W: QuantizedMatrix, x: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y [rows] = W x, x [cols]."""
    W = _quant(W, "matvec_q", "W")
    _arr(x, "matvec_q", "x")
    y = _out(out, (W.rows,), np.float32, "matvec_q", "y")
    _core.matvec_q(tier, dict(rows=W.rows, cols=W.cols, bits=W.bits, group_size=W.group_size), W, x, y)
    return y


def matmul_q(W: QuantizedMatrix, X: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """Y [..., rows] = X W^T, X [..., cols] (leading dimensions = tokens)."""
    W = _quant(W, "matmul_q", "W")
    tokens, _ = _split(X, "matmul_q", "X", ["cols"])
    Y = _out(out, X.shape[:-1] + (W.rows,), np.float32, "matmul_q", "Y")
    _core.matmul_q(tier, dict(tokens=tokens, rows=W.rows, cols=W.cols, bits=W.bits, group_size=W.group_size),
                   W, X, Y)
    return Y


def matvec_bf16(W: np.ndarray, x: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y [rows] = W x, W [rows, cols] bf16 patterns (uint16), x [cols]."""
    _, (rows, cols) = _split(W, "matvec_bf16", "W", ["rows", "cols"])
    _arr(x, "matvec_bf16", "x")
    y = _out(out, (rows,), np.float32, "matvec_bf16", "y")
    _core.matvec_bf16(tier, dict(rows=rows, cols=cols), W, x, y)
    return y


def _ggml_matrix(W, type, op):
    """(type, rows, cols or None, raw uint8 bytes) of a ggml block-quantized [rows, cols] tensor:
    a ``moeoracle.GgufTensor`` (read_gguf), or raw bytes [rows, row_bytes] with ``type``."""
    if hasattr(W, "raw") and hasattr(W, "ne"):
        if type is not None and type != W.type:
            raise ValueError(f"{op}: type={type!r} given for a {W.type} tensor")
        if len(W.ne) != 2:
            raise ValueError(f"{op}: W has ne {W.ne}, expected two dimensions [cols, rows]")
        (cols, rows) = W.ne
        return W.type, rows, cols, W.raw
    if type is None:
        raise ValueError(f"{op}: W is raw bytes: give its ggml type, e.g. type='q4_K'")
    raw = _arr(W, op, "W")
    if raw.ndim != 2:
        raise ValueError(f"{op}: W has shape {raw.shape}, expected uint8 [rows, row_bytes]")
    return type, int(raw.shape[0]), None, raw


def matvec_ggml(W, X: np.ndarray, *, type: str | None = None, tier: str = "ref64", out=None) -> np.ndarray:
    """Y [..., rows] = X W^T, X [..., cols] (leading dimensions = tokens; one token is a matvec).
    W is a ggml block-quantized [rows, cols] tensor: a ``moeoracle.GgufTensor`` (read_gguf), or
    its raw bytes as a uint8 array [rows, row_bytes] with ``type`` its ggml name ("q4_K")."""
    type, rows, cols, raw = _ggml_matrix(W, type, "matvec_ggml")
    tokens, (xcols,) = _split(X, "matvec_ggml", "X", ["cols"])
    cols = xcols if cols is None else cols
    if cols != xcols:
        raise ValueError(f"matvec_ggml: X rows have {xcols} values, W has {cols} columns")
    Y = _out(out, X.shape[:-1] + (rows,), np.float32, "matvec_ggml", "Y")
    _core.matvec_ggml(tier, dict(type=_core.ggml_type_id(type), rows=rows, cols=cols, tokens=tokens), raw, X, Y)
    return Y


def dequant_ggml(W, *, type: str | None = None, cols: int | None = None, tier: str = "ref64",
                 out=None) -> np.ndarray:
    """y [rows, cols] float32: the values of a ggml block-quantized [rows, cols] tensor, each
    rounded once (bit-exact in every tier). W as for matvec_ggml; raw bytes need ``type`` and
    ``cols``."""
    type, rows, wcols, raw = _ggml_matrix(W, type, "dequant_ggml")
    if wcols is None:
        if cols is None:
            raise ValueError("dequant_ggml: W is raw bytes: give cols, the values per row")
        wcols = cols
    elif cols is not None and cols != wcols:
        raise ValueError(f"dequant_ggml: cols={cols} given for a tensor of {wcols} columns")
    y = _out(out, (rows, wcols), np.float32, "dequant_ggml", "y")
    _core.dequant_ggml(tier, dict(type=_core.ggml_type_id(type), rows=rows, cols=wcols), raw, y)
    return y


def embedding(table: QuantizedMatrix, ids: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y [..., dim] = dequantised rows ids (int32, any shape) of the table [vocab, dim]."""
    table = _quant(table, "embedding", "table")
    _arr(ids, "embedding", "ids")
    y = _out(out, ids.shape + (table.cols,), np.float32, "embedding", "y")
    _core.embedding(tier, dict(tokens=ids.size, vocab=table.rows, dim=table.cols, bits=table.bits,
                               group_size=table.group_size), table, ids, y)
    return y


def argmax(x: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """idx [...] int32: the first index of each row's maximum of x [..., n] (NaN counts as the
    maximum, as numpy.argmax)."""
    rows, (n,) = _split(x, "argmax", "x", ["n"])
    idx = _out(out, x.shape[:-1], np.int32, "argmax", "idx")
    _core.argmax(tier, dict(rows=rows, n=n), x, idx)
    return idx


# --- norms and position ----------------------------------------------------------------------

def rmsnorm(x: np.ndarray, w: np.ndarray, *, eps: float = 1e-6, add_one: bool = False, tier: str = "ref64",
            out=None) -> np.ndarray:
    """y = x / sqrt(mean(x^2) + eps) * w (or * (1 + w) with add_one) over the last dimension of
    x [..., dim]; w [dim]. out may be x."""
    rows, (dim,) = _split(x, "rmsnorm", "x", ["dim"])
    y = _out(out, x.shape, np.float32, "rmsnorm", "y")
    _core.rmsnorm(tier, dict(rows=rows, dim=dim, eps=eps, add_one=add_one), x, w, y)
    return y


def qk_norm(q: np.ndarray, k: np.ndarray, *, eps: float = 1e-6, eps_form: int = 0, scaled: int = 1,
            tier: str = "ref64", q_out=None, k_out=None) -> tuple[np.ndarray, np.ndarray]:
    """Linear attention's q/k: unweighted per-head RMSNorm, q * 1/dk, k * 1/sqrt(dk).
    q, k [..., heads, head_dim]; returns (q_out, k_out). q_out may be q and k_out k.
    Conventions: eps_form 0 1/sqrt(ss/dk + eps), 1 1/sqrt(ss + eps) (HF), 2 1/max(sqrt(ss), eps)
    (ggml); scaled 0 leaves out the q/k factors (docs/ops/norms.md)."""
    tokens, (heads, head_dim) = _split(q, "qk_norm", "q", ["heads", "head_dim"])
    _arr(k, "qk_norm", "k")
    qo = _out(q_out, q.shape, np.float32, "qk_norm", "q_out")
    ko = _out(k_out, k.shape, np.float32, "qk_norm", "k_out")
    _core.qk_norm(tier, dict(tokens=tokens, heads=heads, head_dim=head_dim, eps=eps, eps_form=eps_form,
                             scaled=scaled), q, k, qo, ko)
    return qo, ko


def rmsnorm_gated(o: np.ndarray, z: np.ndarray, w: np.ndarray, *, eps: float = 1e-6, tier: str = "ref64",
                  out=None) -> np.ndarray:
    """y = rmsnorm(o) * w * silu(z) per head; o, z [..., heads, head_dim], w [head_dim]."""
    tokens, (heads, head_dim) = _split(o, "rmsnorm_gated", "o", ["heads", "head_dim"])
    y = _out(out, o.shape, np.float32, "rmsnorm_gated", "y")
    _core.rmsnorm_gated(tier, dict(tokens=tokens, heads=heads, head_dim=head_dim, eps=eps), o, z, w, y)
    return y


def rope(x: np.ndarray, positions: np.ndarray, *, rotary_dim: int | None = None, theta: float = 1e7,
         tier: str = "ref64", out=None) -> np.ndarray:
    """Partial RoPE with half-split pairs (x[i], x[i + R/2]), channels [R, head_dim) untouched.
    x [..., heads, head_dim], positions int64 [tokens]; rotary_dim R (None: head_dim; Qwen3.5/3.6
    use head_dim / 4 = 64). out may be x."""
    tokens, (heads, head_dim) = _split(x, "rope", "x", ["heads", "head_dim"])
    y = _out(out, x.shape, np.float32, "rope", "y")
    R = head_dim if rotary_dim is None else rotary_dim
    _core.rope(tier, dict(tokens=tokens, heads=heads, head_dim=head_dim, rotary_dim=R, theta=theta),
               positions, x, y)
    return y


def rope_yarn(x: np.ndarray, positions: np.ndarray, *, theta: float = 1e4, factor: float = 40.0,
              original_max_position: int = 4096, beta_fast: float = 32.0, beta_slow: float = 1.0,
              mscale: float = 1.0, mscale_all_dim: float = 1.0, interleaved: bool = True, tier: str = "ref64",
              out=None) -> np.ndarray:
    """DeepSeek-V3 / Cogito MLA YaRN RoPE of the rope parts: x [..., heads, rotary_dim] (q_pe or
    k_pe), positions int64 [tokens]. interleaved (HF rope_interleave, the default): pairs (x[2i],
    x[2i+1]) and a half-split output, as HF apply_rotary_pos_emb_interleave; False: pairs (x[i],
    x[i + R/2]). Defaults are Cogito-V2's; mscale / mscale_all_dim 0 = absent. out may be x."""
    tokens, (heads, rotary_dim) = _split(x, "rope_yarn", "x", ["heads", "rotary_dim"])
    y = _out(out, x.shape, np.float32, "rope_yarn", "y")
    _core.rope_yarn(tier, dict(tokens=tokens, heads=heads, rotary_dim=rotary_dim, theta=theta, factor=factor,
                               original_max_position=original_max_position, beta_fast=beta_fast,
                               beta_slow=beta_slow, mscale=mscale, mscale_all_dim=mscale_all_dim,
                               interleaved=interleaved), positions, x, y)
    return y


def residual_add(a: np.ndarray, b: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y = a + b elementwise (one rounding: every tier gives the same bits). out may be a or b."""
    _arr(a, "residual_add", "a")
    y = _out(out, a.shape, np.float32, "residual_add", "y")
    _core.residual_add(tier, dict(n=a.size), a, b, y)
    return y


# --- linear attention (Gated DeltaNet) -------------------------------------------------------

def conv1d_step(x: np.ndarray, w: np.ndarray, state: np.ndarray | None = None, *, tier: str = "ref64", out=None,
                state_out=None) -> tuple[np.ndarray, np.ndarray]:
    """Causal depthwise conv1d + SiLU over tokens. x [tokens, channels], w [channels, kernel],
    state [kernel - 1, channels] (the last raw inputs, oldest first). Returns (y, state after)."""
    tokens, (channels,) = _split(x, "conv1d_step", "x", ["channels"])
    _, (_, kernel) = _split(w, "conv1d_step", "w", ["channels", "kernel"])
    st = _state(state, state_out, (kernel - 1, channels), "conv1d_step", "state")
    y = _out(out, x.shape, np.float32, "conv1d_step", "y")
    _core.conv1d_step(tier, dict(tokens=tokens, channels=channels, kernel=kernel), x, w, st, y)
    return y, st


def decay_beta(a: np.ndarray, b: np.ndarray, A_log: np.ndarray, dt_bias: np.ndarray, *, tier: str = "ref64",
               g_out=None, beta_out=None) -> tuple[np.ndarray, np.ndarray]:
    """g = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b); a, b [..., heads],
    A_log, dt_bias [heads]. Returns (g, beta)."""
    tokens, (heads,) = _split(a, "decay_beta", "a", ["heads"])
    g = _out(g_out, a.shape, np.float32, "decay_beta", "g")
    beta = _out(beta_out, a.shape, np.float32, "decay_beta", "beta")
    _core.decay_beta(tier, dict(tokens=tokens, heads=heads), a, b, A_log, dt_bias, g, beta)
    return g, beta


def delta_net(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray,
              state: np.ndarray | None = None, *, decay_log: int = 0, head_group: int = 0,
              out_scale: float = 1.0, tier: str = "ref64", out=None,
              state_out=None) -> tuple[np.ndarray, np.ndarray]:
    """The gated delta rule over tokens. q, k [tokens, k_heads, key_dim], v [tokens, v_heads,
    value_dim], g, beta [tokens, v_heads], state [v_heads, value_dim, key_dim] (MLX layout).
    Returns (o [tokens, v_heads, value_dim], state after). Conventions: decay_log 1 takes g as
    the log of the decay, head_group 1 has v-head h read q/k head h % k_heads, o is times
    out_scale (docs/ops/linear-attention.md)."""
    tokens, (k_heads, key_dim) = _split(q, "delta_net", "q", ["k_heads", "key_dim"])
    _, (v_heads, value_dim) = _split(v, "delta_net", "v", ["v_heads", "value_dim"])
    st = _state(state, state_out, (v_heads, value_dim, key_dim), "delta_net", "state")
    o = _out(out, v.shape, np.float32, "delta_net", "o")
    _core.delta_net(tier, dict(tokens=tokens, k_heads=k_heads, v_heads=v_heads, key_dim=key_dim,
                               value_dim=value_dim, decay_log=decay_log, head_group=head_group,
                               out_scale=out_scale), q, k, v, g, beta, st, o)
    return o, st


# --- full attention --------------------------------------------------------------------------

def attention(q: np.ndarray, gate: np.ndarray, k: np.ndarray, v: np.ndarray, k_cache: np.ndarray | None = None,
              v_cache: np.ndarray | None = None, *, past: int = 0, scale: float = 0.0, tier: str = "ref64",
              out=None, k_cache_out=None, v_cache_out=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gated causal GQA attention over a KV cache. q, gate [tokens, q_heads, head_dim], k, v
    [tokens, kv_heads, head_dim], caches [capacity, kv_heads, head_dim] holding `past` rows
    (None: empty caches of capacity past + tokens; past must be 0). The new rows are appended at
    [past, past + tokens). scale 0 means 1/sqrt(head_dim).
    Returns (o [tokens, q_heads * head_dim], k cache after, v cache after)."""
    tokens, (q_heads, head_dim) = _split(q, "attention", "q", ["q_heads", "head_dim"])
    _, (kv_heads, _) = _split(k, "attention", "k", ["kv_heads", "head_dim"])
    capacity = _capacity(k_cache, v_cache, past, tokens, "attention", ("k_cache", "v_cache"))
    kc = _state(k_cache, k_cache_out, (capacity, kv_heads, head_dim), "attention", "k_cache")
    vc = _state(v_cache, v_cache_out, (capacity, kv_heads, head_dim), "attention", "v_cache")
    o = _out(out, (tokens, q_heads * head_dim), np.float32, "attention", "o")
    _core.attention(tier, dict(tokens=tokens, q_heads=q_heads, kv_heads=kv_heads, head_dim=head_dim, past=past,
                               capacity=capacity, scale=scale), q, gate, k, v, kc, vc, o)
    return o, kc, vc


def mla_attention(q: np.ndarray, latent: np.ndarray, k_pe: np.ndarray, kv_b: QuantizedMatrix,
                  latent_cache: np.ndarray | None = None, kpe_cache: np.ndarray | None = None, *, past: int = 0,
                  scale: float = 0.0, tier: str = "ref64", out=None, latent_cache_out=None,
                  kpe_cache_out=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DeepSeek-V3 / Cogito MLA attention core over the latent cache. q [tokens, heads, nope + rope]
    (q_nope then the RoPE'd q_pe per head), latent [tokens, kv_lora] (post kv_a_layernorm), k_pe
    [tokens, rope] (post RoPE, shared by every head), kv_b the quantized kv_b_proj [heads (nope +
    v_dim), kv_lora] (per head W_kb rows then W_vb rows); caches [capacity, kv_lora] and
    [capacity, rope] holding `past` rows (None: empty caches of capacity past + tokens; past must be
    0). rope comes from k_pe, nope from q, v_dim from kv_b. scale 0 means 1/sqrt(nope + rope); YaRN
    callers pass that times mscale^2. Returns (o [tokens, heads * v_dim], latent cache after,
    k_pe cache after)."""
    op = "mla_attention"
    tokens, (heads, qk_dim) = _split(q, op, "q", ["heads", "nope + rope"])
    _, (rope_dim,) = _split(k_pe, op, "k_pe", ["rope"])
    _, (kv_lora,) = _split(latent, op, "latent", ["kv_lora"])
    kv_b = _quant(kv_b, op, "kv_b")
    nope_dim = qk_dim - rope_dim
    if nope_dim <= 0 or kv_b.rows % heads != 0 or kv_b.rows // heads <= nope_dim:
        raise ValueError(f"{op}: q's last dimension {qk_dim}, k_pe's {rope_dim} and kv_b's rows {kv_b.rows} do not "
                         f"give nope_dim > 0 and kv_b rows = heads ({heads}) * (nope_dim + v_dim) with v_dim > 0")
    v_dim = kv_b.rows // heads - nope_dim
    capacity = _capacity(latent_cache, kpe_cache, past, tokens, op, ("latent_cache", "kpe_cache"))
    lc = _state(latent_cache, latent_cache_out, (capacity, kv_lora), op, "latent_cache")
    kc = _state(kpe_cache, kpe_cache_out, (capacity, rope_dim), op, "kpe_cache")
    o = _out(out, (tokens, heads * v_dim), np.float32, op, "o")
    _core.mla_attention(tier, dict(tokens=tokens, heads=heads, nope_dim=nope_dim, rope_dim=rope_dim, v_dim=v_dim,
                                   kv_lora=kv_lora, past=past, capacity=capacity, bits=kv_b.bits,
                                   group_size=kv_b.group_size, scale=scale), q, latent, k_pe, kv_b, lc, kc, o)
    return o, lc, kc


# --- routing and experts ---------------------------------------------------------------------

def router_topk(logits: np.ndarray, k: int, *, renormalize: bool = True, tier: str = "ref64", idx_out=None,
                w_out=None) -> tuple[np.ndarray, np.ndarray]:
    """Softmax over the experts -> top-k (ties to the lowest index) -> renormalise.
    logits [..., experts]; returns (idx int32 [..., k], w float32 [..., k]), w descending. A token
    whose softmax is undefined (NaN or +inf logit, all -inf) gets idx -1 and w NaN."""
    tokens, (experts,) = _split(logits, "router_topk", "logits", ["experts"])
    idx = _out(idx_out, logits.shape[:-1] + (k,), np.int32, "router_topk", "idx")
    w = _out(w_out, logits.shape[:-1] + (k,), np.float32, "router_topk", "w")
    _core.router_topk(tier, dict(tokens=tokens, experts=experts, k=k, renormalize=renormalize), logits, idx, w)
    return idx, w


def router_noaux(logits: np.ndarray, bias: np.ndarray, k: int, *, n_group: int = 1, topk_group: int = 1,
                 routed_scaling_factor: float = 1.0, renormalize: bool = True, tier: str = "ref64", idx_out=None,
                 w_out=None) -> tuple[np.ndarray, np.ndarray]:
    """DeepSeek-V3 noaux_tc routing: sigmoid scores, bias for the selection only, group top-2
    scores, topk_group groups kept, top-k, renormalised and scaled. logits [..., experts],
    bias [experts]; returns (idx int32 [..., k], w float32 [..., k])."""
    tokens, (experts,) = _split(logits, "router_noaux", "logits", ["experts"])
    idx = _out(idx_out, logits.shape[:-1] + (k,), np.int32, "router_noaux", "idx")
    w = _out(w_out, logits.shape[:-1] + (k,), np.float32, "router_noaux", "w")
    _core.router_noaux(tier, dict(tokens=tokens, experts=experts, k=k, n_group=n_group, topk_group=topk_group,
                                  routed_scaling_factor=routed_scaling_factor, renormalize=renormalize),
                       logits, bias, idx, w)
    return idx, w


def swiglu_expert(expert: Expert, x: np.ndarray, *, tier: str = "ref64", out=None) -> np.ndarray:
    """y = down(silu(gate x) * up x) for x [..., hidden]. out may be x."""
    e = _expert(expert, "swiglu_expert", "expert")
    tokens, (hidden,) = _split(x, "swiglu_expert", "x", ["hidden"])
    y = _out(out, x.shape, np.float32, "swiglu_expert", "y")
    _core.swiglu_expert(tier, dict(tokens=tokens, hidden=hidden, inter=e.inter, bits=e.bits), e, x, y)
    return y


def moe_combine(h_mid: np.ndarray, e: np.ndarray, w: np.ndarray, sh: np.ndarray, gamma: np.ndarray | None = None, *,
                tier: str = "ref64", out=None) -> np.ndarray:
    """out = h_mid + sum_k w_k e_k + sigmoid(gamma) sh (gamma None: + sh, ungated).
    h_mid, sh [tokens, dim], e [tokens, k, dim], w [tokens, k], gamma [tokens]. out may be h_mid or sh."""
    tokens, (dim,) = _split(h_mid, "moe_combine", "h_mid", ["dim"])
    _, (k, _) = _split(e, "moe_combine", "e", ["k", "dim"])
    y = _out(out, h_mid.shape, np.float32, "moe_combine", "out")
    _core.moe_combine(tier, dict(tokens=tokens, dim=dim, k=k, gated=gamma is not None), h_mid, e, w, sh, gamma, y)
    return y


class ExpertBuckets(NamedTuple):
    """Routed rows bucketed per expert (CSR): bucket b is expert expert_ids[b] (ascending) and
    owns rows offsets[b] .. offsets[b+1] of token_idx and weights."""

    expert_ids: np.ndarray  # int32 [B]
    offsets: np.ndarray     # uint32 [B + 1]
    token_idx: np.ndarray   # int32 [rows]
    weights: np.ndarray     # float32 [rows]


def expert_buckets(idx: np.ndarray, w: np.ndarray, experts: int, *, tier: str = "ref64") -> ExpertBuckets:
    """CSR buckets of the routing idx, w [tokens, k] over `experts` experts (exact in every tier)."""
    tokens, (k,) = _split(idx, "expert_buckets", "idx", ["k"])
    d = _core.expert_buckets(tier, dict(tokens=tokens, k=k, experts=experts), idx, w)
    return ExpertBuckets(d["expert_ids"], d["offsets"], d["token_idx"], d["weights"])


def moe_permute_fuse(buckets: ExpertBuckets, experts: Sequence[Expert | None], x: np.ndarray, *,
                     tier: str = "ref64", out=None) -> np.ndarray:
    """The bucketed routed-expert sum of a prefill: out[t] += w * expert(x[t]) for every row of
    every bucket, experts in ascending id order. experts: one entry per expert id (None for
    experts no token is routed to); x [tokens, hidden]; out [tokens, hidden] is accumulated
    into (None: zeros)."""
    if not isinstance(buckets, ExpertBuckets):
        raise TypeError(f"moe_permute_fuse: buckets is a {type(buckets).__name__}, expected "
                        "moeoracle.ops.ExpertBuckets (from ops.expert_buckets)")
    present = [_expert(e, "moe_permute_fuse", f"experts[{i}]") for i, e in enumerate(experts) if e is not None]
    if not present:
        raise ValueError("moe_permute_fuse: experts has no expert, expected at least the routed ones")
    tokens, (hidden,) = _split(x, "moe_permute_fuse", "x", ["hidden"])
    y = np.zeros(x.shape, np.float32) if out is None else _out(out, x.shape, np.float32, "moe_permute_fuse", "out")
    _core.moe_permute_fuse(tier, dict(tokens=tokens, hidden=hidden, inter=present[0].inter, bits=present[0].bits,
                                      experts=len(experts)), buckets, list(experts), x, y)
    return y


# --- standalone activations -------------------------------------------------------------------

_GLU_ACTS = {"silu": 0, "gelu_tanh": 1, "gelu": 2}


def glu(gate: np.ndarray, up: np.ndarray, act: str = "silu", *, tier: str = "ref64", out=None) -> np.ndarray:
    """y = act(gate) * up elementwise, gate and up [..., n]. act: "silu" (SwiGLU), "gelu_tanh" (HF
    gelu_pytorch_tanh, GeGLU) or "gelu" (erf). out may be gate or up."""
    if act not in _GLU_ACTS:
        raise ValueError(f"glu: act '{act}', expected one of {', '.join(_GLU_ACTS)}")
    rows, (n,) = _split(gate, "glu", "gate", ["n"])
    y = _out(out, gate.shape, np.float32, "glu", "y")
    _core.glu(tier, dict(rows=rows, n=n, act=_GLU_ACTS[act]), gate, up, y)
    return y


def softmax(x: np.ndarray, mask: np.ndarray | None = None, scale: float = 1.0, *, tier: str = "ref64",
            out=None) -> np.ndarray:
    """y = softmax(x * scale + mask) over the last axis of x [..., cols]. mask [mask_rows, cols]:
    row r of x (leading axes flattened) adds mask row r % mask_rows (a [tokens, cols] mask
    broadcast over heads); None: no mask. A row of -inf gives NaN. out may be x."""
    rows, (cols,) = _split(x, "softmax", "x", ["cols"])
    mask_rows = 0
    if mask is not None:
        mask_rows, (mcols,) = _split(mask, "softmax", "mask", ["cols"])
        if mcols != cols:
            raise ValueError(f"softmax: mask has {mcols} columns, expected {cols} (x's)")
    y = _out(out, x.shape, np.float32, "softmax", "y")
    _core.softmax(tier, dict(rows=rows, cols=cols, mask_rows=mask_rows, scale=scale), x, mask, y)
    return y


# --- the three-way self-check ----------------------------------------------------------------

def selfcheck(ops: str | Sequence[str] | None = None, *, seed: int = 1, scope: str = "remainders") -> list[dict]:
    """Each op's f32 and fast tiers against the f64 truth with the C++ checks' error bounds
    (kernels_cpu/check/, `moeoracle selfcheck`): one dict per case with op, shape, params,
    seed, pass, ref32/fast (worst ratio of error to bound, where, expected, found) and evidence.
    scope: "remainders" (1, 31, 33, 67, 4099, ...), "real" (the Qwen3.5/3.6 shapes) or "all"."""
    if isinstance(ops, str):
        ops = [o for o in ops.split(",") if o]
    return list(_core.selfcheck(list(ops or []), seed, scope))
