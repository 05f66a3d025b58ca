"""moeoracle.ops: every op in every tier, numpy float64 references for a few ops with the C++
checks' error bounds, errors, zero-copy."""
import numpy as np
import pytest

import moeoracle
from moeoracle import ops
from conftest import MIN_NORMAL32, U32, gamma_n

TIERS = ops.TIERS


def normal(rng, shape, std=1.0):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def qmat(rng, rows, cols, bits=4, group=64):
    return moeoracle.quantize(normal(rng, (rows, cols), cols ** -0.5), bits, group)


def expert(rng, hidden, inter, bits=4):
    return moeoracle.Expert(qmat(rng, inter, hidden, bits), qmat(rng, inter, hidden, bits),
                            qmat(rng, hidden, inter, bits))


# One small case per op: a function of (rng, tier) returning the op's outputs. The inputs depend
# on the rng only, so the three tiers see the same ones.
def case_attention(rng, tier):
    past = 3
    kc, vc = normal(rng, (5, 2, 16)), normal(rng, (5, 2, 16))
    q, gate = normal(rng, (2, 4, 16)), normal(rng, (2, 4, 16))
    k, v = normal(rng, (2, 2, 16)), normal(rng, (2, 2, 16))
    return ops.attention(q, gate, k, v, kc, vc, past=past, tier=tier)


def case_mla_attention(rng, tier):
    past = 3  # H 2, nope 8, rope 4, v 8, kv_lora 32 (4-bit, group 32)
    lc, kc = normal(rng, (5, 32)), normal(rng, (5, 4))
    q, latent, k_pe = normal(rng, (2, 2, 12)), normal(rng, (2, 32)), normal(rng, (2, 4))
    return ops.mla_attention(q, latent, k_pe, qmat(rng, 2 * (8 + 8), 32, 4, 32), lc, kc, past=past, tier=tier)


def case_delta_net(rng, tier):
    q, k = normal(rng, (2, 2, 16)), normal(rng, (2, 2, 16))
    q /= np.linalg.norm(q, axis=-1, keepdims=True) * 4
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = normal(rng, (2, 4, 8))
    g = rng.uniform(0.5, 1.0, (2, 4)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (2, 4)).astype(np.float32)
    return ops.delta_net(q, k, v, g, beta, normal(rng, (4, 8, 16), 0.1), tier=tier)


def case_expert_buckets(rng, tier):
    idx, w = ops.router_topk(normal(rng, (4, 8), 2.0), 2)
    return tuple(ops.expert_buckets(idx, w, 8, tier=tier))


def case_moe_permute_fuse(rng, tier):
    x = normal(rng, (4, 64))
    idx, w = ops.router_topk(normal(rng, (4, 8), 2.0), 2)
    experts = [expert(rng, 64, 64) for _ in range(8)]
    experts = [e if e_id in idx else None for e_id, e in enumerate(experts)]
    return ops.moe_permute_fuse(ops.expert_buckets(idx, w, 8), experts, x, tier=tier)


def q8_0_rows(r, rows, cols):
    """ggml q8_0 bytes [rows, cols / 32 * 34]: per block an f16 scale, then 32 int8 codes."""
    blocks = np.zeros((rows, cols // 32, 34), np.uint8)
    blocks[:, :, :2] = np.float16(0.01).reshape(1).view(np.uint8)
    blocks[:, :, 2:] = r.integers(-127, 128, (rows, cols // 32, 32)).astype(np.int8).view(np.uint8)
    return blocks.reshape(rows, -1)


CASES = {
    "dequant": lambda r, t: ops.dequant(qmat(r, 8, 128), tier=t),
    "matvec_q": lambda r, t: ops.matvec_q(qmat(r, 33, 128), normal(r, 128), tier=t),
    "matmul_q": lambda r, t: ops.matmul_q(qmat(r, 16, 128, 8), normal(r, (3, 128)), tier=t),
    "matvec_bf16": lambda r, t: ops.matvec_bf16(moeoracle.f32_to_bf16(normal(r, (17, 64), 0.1)), normal(r, 64), tier=t),
    "matvec_ggml": lambda r, t: ops.matvec_ggml(q8_0_rows(r, 9, 128), normal(r, (2, 128)), type="q8_0", tier=t),
    "dequant_ggml": lambda r, t: ops.dequant_ggml(q8_0_rows(r, 5, 96), type="q8_0", cols=96, tier=t),
    "embedding": lambda r, t: ops.embedding(qmat(r, 50, 64), r.integers(0, 50, 5).astype(np.int32), tier=t),
    "argmax": lambda r, t: ops.argmax(normal(r, (4, 100)), tier=t),
    "rmsnorm": lambda r, t: ops.rmsnorm(normal(r, (3, 67)), normal(r, 67, 0.2) + 1, tier=t),
    "qk_norm": lambda r, t: ops.qk_norm(normal(r, (2, 4, 32)), normal(r, (2, 4, 32)), tier=t),
    "rmsnorm_gated": lambda r, t: ops.rmsnorm_gated(normal(r, (2, 4, 32)), normal(r, (2, 4, 32)), normal(r, 32),
                                                    tier=t),
    "rope": lambda r, t: ops.rope(normal(r, (3, 2, 64)), np.array([0, 5, 1000], np.int64), rotary_dim=16, tier=t),
    "rope_yarn": lambda r, t: ops.rope_yarn(normal(r, (3, 2, 64)), np.array([0, 5, 1000], np.int64), tier=t),
    "conv1d_step": lambda r, t: ops.conv1d_step(normal(r, (3, 40)), normal(r, (40, 4), 0.3), normal(r, (3, 40)),
                                                tier=t),
    "decay_beta": lambda r, t: ops.decay_beta(normal(r, (3, 8)), normal(r, (3, 8)), np.log(r.uniform(1, 16, 8)).astype(
        np.float32), normal(r, 8, 0.5), tier=t),
    "delta_net": case_delta_net,
    "attention": case_attention,
    "mla_attention": case_mla_attention,
    "router_topk": lambda r, t: ops.router_topk(normal(r, (4, 16), 2.0), 4, tier=t),
    "router_noaux": lambda r, t: ops.router_noaux(normal(r, (3, 16), 2.0), normal(r, 16, 0.1), 4, n_group=4,
                                                  topk_group=2, routed_scaling_factor=2.5, tier=t),
    "swiglu_expert": lambda r, t: ops.swiglu_expert(expert(r, 64, 128), normal(r, (2, 64)), tier=t),
    "moe_combine": lambda r, t: ops.moe_combine(normal(r, (2, 32)), normal(r, (2, 3, 32)), normal(r, (2, 3)),
                                                normal(r, (2, 32)), normal(r, 2), tier=t),
    "expert_buckets": case_expert_buckets,
    "moe_permute_fuse": case_moe_permute_fuse,
    "residual_add": lambda r, t: ops.residual_add(normal(r, 100), normal(r, 100, 0.1), tier=t),
    "glu": lambda r, t: ops.glu(normal(r, (3, 33), 2.0), normal(r, (3, 33)), "gelu_tanh", tier=t),
    "softmax": lambda r, t: ops.softmax(normal(r, (2, 3, 40), 4.0), np.triu(np.full((3, 40), -np.inf, np.float32), 38),
                                        0.125, tier=t),
}


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def test_every_op_of_the_op_list_is_bound():
    assert set(ops.OPS) == set(CASES), "a test case per op"
    for op in ops.OPS:
        assert callable(getattr(ops, op)), op
        assert isinstance(ops.params(op), dict)
    assert len(ops.OPS) == len(moeoracle._core.OP_LIST)


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_runs_in_every_tier_and_the_tiers_agree(op):
    """The smoke check of every op: each tier runs on the same inputs; ref32 and fast are close to
    the truth (the sound per-element bounds of every op are the C++ checks', run through
    test_selfcheck_every_op below; ported to numpy for rmsnorm, residual_add, matvec_q and
    router_topk further down)."""
    outs = {t: as_tuple(CASES[op](np.random.default_rng(7), t)) for t in TIERS}
    for t in ("ref32", "fast"):
        for truth, got in zip(outs["ref64"], outs[t]):
            assert got.shape == truth.shape and got.dtype == truth.dtype, (op, t)
            if truth.dtype.kind in "iu":
                np.testing.assert_array_equal(got, truth, err_msg=f"{op} {t}")
            else:
                scale = float(np.max(np.abs(truth))) if truth.size else 0.0
                np.testing.assert_allclose(got, truth, rtol=1e-4, atol=1e-5 * scale, err_msg=f"{op} {t}")


@pytest.mark.parametrize("op", ops.OPS)
def test_selfcheck_every_op(op):
    """The C++ three-way check (kernels_cpu/check/<op>_check.cpp) through the binding."""
    results = moeoracle.selfcheck([op], seed=5, scope="remainders")
    assert results, op
    failed = [r["evidence"] for r in results if not r["pass"]]
    assert not failed, failed
    r = results[0]
    assert r["op"] == op and set(r["ref32"]) >= {"worst_ratio", "compared", "pass"}


# --- numpy float64 references with the C++ checks' bounds ------------------------------------

def test_rmsnorm_against_numpy(rng):
    x, w = normal(rng, (5, 257), 3.0), normal(rng, 257, 0.2) + 1
    eps = 1e-6
    x64 = x.astype(np.float64)
    exact = x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + np.float64(np.float32(eps))) * w
    truth = ops.rmsnorm(x, w, eps=eps, tier="ref64")
    # The truth is the f64 computation rounded once to f32.
    assert np.all(np.abs(truth - exact) <= U32 * np.abs(exact) * (1 + 1e-6) + 2.0 ** -149)
    # rmsnorm_bound (kernels_cpu/spec/rmsnorm_spec.h) under cpu_f32_model():
    # |y - y_true| <= |y_true| (gamma_dim / 2 + 7.5u) + smallest normal; 8u here is looser.
    bound = np.abs(truth.astype(np.float64)) * (gamma_n(257) / 2 + 8 * U32) + MIN_NORMAL32
    for tier in ("ref32", "fast"):
        assert np.all(np.abs(ops.rmsnorm(x, w, eps=eps, tier=tier) - truth.astype(np.float64)) <= bound), tier
    # add_one: weight 1 + w, as HF's zero-centred norms.
    y1 = ops.rmsnorm(x, w - 1, add_one=True)
    assert np.all(np.abs(y1 - truth) <= bound)


def test_residual_add_against_numpy_bit_exact(rng):
    a, b = normal(rng, 1000, 10.0), normal(rng, 1000, 0.1)
    want = (a.astype(np.float64) + b).astype(np.float32)
    for tier in TIERS:  # bound 0 (spec/residual_add_spec.h): every tier is the correctly rounded sum
        np.testing.assert_array_equal(ops.residual_add(a, b, tier=tier), want)


def test_glu_truth_against_numpy(rng):
    """The truth tier against HF's formulas in f64 numpy: within its one rounding to f32 (U32 |y|;
    the f64 forms differ by ~1e-15 relative, inside the 1% margin) and the smallest normal."""
    import math
    g, u = normal(rng, (4, 67)), normal(rng, (4, 67))  # |g| < 5: HF's 1 + tanh cancels little in f64
    g64, u64 = g.astype(np.float64), u.astype(np.float64)
    v = np.sqrt(2 / np.pi) * (g64 + 0.044715 * g64 ** 3)
    erfc = np.vectorize(math.erfc)
    want = {"silu": g64 / (1 + np.exp(-g64)) * u64, "gelu_tanh": 0.5 * g64 * (1 + np.tanh(v)) * u64,
            "gelu": 0.5 * g64 * erfc(-g64 / np.sqrt(2)) * u64}
    for act, w in want.items():
        got = ops.glu(g, u, act).astype(np.float64)
        assert np.all(np.abs(got - w) <= 1.01 * U32 * np.abs(w) + MIN_NORMAL32), act
    with pytest.raises(ValueError, match="glu: act 'relu', expected one of silu, gelu_tanh, gelu"):
        ops.glu(g, u, "relu")


def test_softmax_truth_against_numpy(rng):
    """The truth tier against numpy's f64 softmax of x * scale + mask (mask row r % mask_rows):
    within its one rounding to f32 (U32 p, 1% margin for numpy's own f64 roundings) and the
    smallest normal; a row of -inf gives NaN."""
    x = normal(rng, (4, 3, 50), 8.0)
    mask = np.where(rng.uniform(size=(3, 50)) < 0.3, -np.inf, np.round(rng.uniform(-8, 8, (3, 50)) * 8) / 8).astype(np.float32)
    mask[:, 0] = 0  # no row fully masked
    z = x.astype(np.float64) * np.float64(np.float32(0.3)) + mask
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    got = ops.softmax(x, mask, 0.3).astype(np.float64)
    assert np.all(np.abs(got - want) <= 1.01 * U32 * want + MIN_NORMAL32)
    mask[1, :] = -np.inf
    assert np.isnan(ops.softmax(x, mask, 0.3)[:, 1]).all()
    with pytest.raises(ValueError, match="softmax: mask has 49 columns, expected 50"):
        ops.softmax(x, mask[:, :49])


def test_matvec_q_against_dequantize_and_numpy(rng):
    for bits in (2, 4, 8):
        W = qmat(rng, 37, 192, bits)
        x = normal(rng, 192)
        Wd = moeoracle.dequantize(W).astype(np.float64)  # exact: q*s + b rounds once
        exact = Wd @ x.astype(np.float64)
        truth = ops.matvec_q(W, x, tier="ref64").astype(np.float64)
        sum_abs = np.abs(Wd) @ np.abs(x.astype(np.float64))
        assert np.all(np.abs(truth - exact) <= U32 * np.abs(exact) + 1e-13 * sum_abs + 2.0 ** -149)
        # matvec_q_check.cpp row_bounds: gamma_{cols+1} sum|w x| + u |y| + (cols + 1) 2^-149.
        bound = gamma_n(192 + 1) * sum_abs + U32 * np.abs(truth) + 193 * 2.0 ** -149
        for tier in ("ref32", "fast"):
            assert np.all(np.abs(ops.matvec_q(W, x, tier=tier) - truth) <= bound), (bits, tier)
        # matmul_q: per token the matvec's arithmetic (ops/matmul_q.h): bit-identical in the ref tiers.
        X = np.stack([x, x[::-1].copy()])
        for tier in ("ref64", "ref32"):
            np.testing.assert_array_equal(ops.matmul_q(W, X, tier=tier)[0], ops.matvec_q(W, x, tier=tier))


def numpy_router_topk(logits, k):
    """softmax in f64 -> top-k, ties to the lowest index -> renormalise (ops/router_topk.h)."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    idx = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(p, idx, axis=-1)
    return idx.astype(np.int32), w / w.sum(axis=-1, keepdims=True), p


def test_router_topk_against_numpy(rng):
    E, K = 64, 8
    logits = normal(rng, (6, E), 2.0)
    idx, w, p = numpy_router_topk(logits, K)
    t_idx, t_w = ops.router_topk(logits, K, tier="ref64")
    np.testing.assert_array_equal(t_idx, idx)
    assert np.all(np.abs(t_w - w) <= 4 * U32 * w)
    # The CPU tiers' own order (x - m rounded, expf within 2u, the product with the sum's
    # reciprocal): per expert a_e = u |x_e - m| + 3u; a renormalised weight's relative error is
    # a_e + max_S a_j + gamma_K + 3u (+ the smallest normal). The spec's bound
    # (kernels_cpu/spec/router_topk_spec.cpp) is looser: it also covers a kernel's exp2 form.
    m = logits.max(axis=-1, keepdims=True).astype(np.float64)
    a = U32 * np.abs(logits - m) + 3 * U32
    a_sel = np.take_along_axis(a, idx, axis=-1)
    bound = np.abs(t_w.astype(np.float64)) * (a_sel + a_sel.max(axis=-1, keepdims=True) + gamma_n(K) + 3 * U32) \
        + MIN_NORMAL32
    for tier in ("ref32", "fast"):
        i2, w2 = ops.router_topk(logits, K, tier=tier)
        np.testing.assert_array_equal(i2, idx)  # Gaussian logits: no near-ties at the K-th place
        assert np.all(np.abs(w2 - t_w.astype(np.float64)) <= bound), tier
    # renormalize=False: the probabilities themselves.
    _, raw = ops.router_topk(logits, K, renormalize=False)
    np.testing.assert_allclose(raw, np.take_along_axis(p, idx, axis=-1), rtol=8 * U32)


def test_router_topk_nan_row_routes_nowhere():
    logits = np.zeros((2, 8), np.float32)
    logits[1, 3] = np.nan
    idx, w = ops.router_topk(logits, 2)
    assert list(idx[1]) == [-1, -1] and np.all(np.isnan(w[1])) and np.all(idx[0] >= 0)


# --- errors: a Python exception naming the op, the tensor, expected and found ----------------

def test_wrong_dtype_is_a_type_error(rng):
    x = rng.standard_normal((2, 8))  # float64
    with pytest.raises(TypeError, match=r"rmsnorm: x has dtype float64, expected float32"):
        ops.rmsnorm(x, np.ones(8, np.float32))
    with pytest.raises(TypeError, match=r"rmsnorm: w is a list, expected a numpy.ndarray of float32"):
        ops.rmsnorm(x.astype(np.float32), [1.0] * 8)
    with pytest.raises(TypeError, match=r"embedding: ids has dtype int64, expected int32"):
        ops.embedding(qmat(rng, 4, 64), np.array([1, 2]))
    with pytest.raises(TypeError, match=r"rmsnorm: x is a list"):
        ops.rmsnorm([[1.0]], np.ones(1, np.float32))


def test_wrong_shape_is_a_value_error_from_the_contract(rng):
    x = normal(rng, (2, 8))
    with pytest.raises(moeoracle.Error, match=r"rmsnorm.*\bw\b.*3.*8|rmsnorm.*8.*\bw\b.*3") as e:
        ops.rmsnorm(x, np.ones(3, np.float32))
    assert isinstance(e.value, ValueError)
    with pytest.raises(ValueError, match=r"matvec_q"):
        ops.matvec_q(qmat(rng, 4, 64), normal(rng, 65))
    with pytest.raises(ValueError, match=r"qk_norm: q has shape \[8\], expected \[\.\.\., heads, head_dim\]"):
        ops.qk_norm(normal(rng, 8), normal(rng, 8))
    with pytest.raises(ValueError, match=r"rmsnorm: y has shape \[2, 7\], expected \[2, 8\]"):
        ops.rmsnorm(x, np.ones(8, np.float32), out=np.empty((2, 7), np.float32))
    with pytest.raises(moeoracle.Error, match=r"embedding.*99"):
        ops.embedding(qmat(rng, 4, 64), np.array([1, 99], np.int32))
    with pytest.raises(ValueError, match=r"attention"):
        ops.attention(normal(rng, (1, 3, 16)), normal(rng, (1, 3, 16)), normal(rng, (1, 2, 16)),
                      normal(rng, (1, 2, 16)))  # 3 query heads over 2 kv heads


def test_bad_quantized_matrix_is_named(rng):
    W = qmat(rng, 4, 128)
    bad = W._replace(scales=W.scales[:, :1].copy())
    with pytest.raises(ValueError, match=r"matvec_q: W.scales has shape \[4, 1\], expected \[4, 2\]"):
        ops.matvec_q(bad, normal(rng, 128))
    with pytest.raises(TypeError, match=r"matvec_q: W.w has dtype int32, expected uint32"):
        ops.matvec_q(W._replace(w=W.w.view(np.int32)), normal(rng, 128))
    with pytest.raises(TypeError, match=r"expected a moeoracle.QuantizedMatrix"):
        ops.matvec_q((W.w, W.scales), normal(rng, 128))


def test_layout_and_argument_errors(rng):
    x = normal(rng, (4, 16))
    with pytest.raises(ValueError, match=r"rmsnorm: x is not C-contiguous.*numpy.ascontiguousarray\(x\)"):
        ops.rmsnorm(x[:, ::2], np.ones(8, np.float32))
    ro = np.empty((4, 16), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match=r"rmsnorm: y is read-only"):
        ops.rmsnorm(x, np.ones(16, np.float32), out=ro)
    with pytest.raises(ValueError, match=r"rmsnorm: tier 'f64', expected ref64"):
        ops.rmsnorm(x, np.ones(16, np.float32), tier="f64")
    with pytest.raises(TypeError, match=r"rmsnorm: unknown parameter 'epsilon', expected one of rows, dim, eps"):
        moeoracle._core.rmsnorm("ref64", {"epsilon": 1.0}, x, np.ones(16, np.float32), x)
    with pytest.raises(TypeError, match=r"rmsnorm: x has dtype >f4, expected float32"):
        ops.rmsnorm(x.astype(">f4"), np.ones(16, np.float32))


# --- zero-copy ---------------------------------------------------------------------------------

def test_in_place_output_is_the_input(rng):
    x = normal(rng, (3, 64))
    want = ops.rmsnorm(x, np.ones(64, np.float32))
    y = ops.rmsnorm(x, np.ones(64, np.float32), out=x)  # the contract allows y == x
    assert y is x and np.shares_memory(y, x)
    np.testing.assert_array_equal(x, want)
    a, b = normal(rng, 10), normal(rng, 10)
    s = (a.astype(np.float64) + b).astype(np.float32)
    assert ops.residual_add(a, b, out=a) is a
    np.testing.assert_array_equal(a, s)


def test_inputs_are_read_in_place(rng):
    """A contiguous view into a larger buffer (and a read-only array) is read where it lies: no
    copy is needed, and a strided one is refused rather than silently copied."""
    big = normal(rng, 10_000)
    big.setflags(write=False)
    x = big[100:100 + 256].reshape(4, 64)
    assert x.base is not None and not x.flags.writeable
    y = np.empty((4, 64), np.float32)
    ops.rmsnorm(x, np.ones(64, np.float32), out=y)
    np.testing.assert_array_equal(y, ops.rmsnorm(x.copy(), np.ones(64, np.float32)))


def test_stateful_ops_update_state_in_place_on_request(rng):
    x, w = normal(rng, (2, 40)), normal(rng, (40, 4), 0.3)
    st = np.zeros((3, 40), np.float32)
    y1, st1 = ops.conv1d_step(x, w, st)
    assert st1 is not st and not st.any()  # the caller's state untouched by default
    y2, st2 = ops.conv1d_step(x, w, st, state_out=st)
    assert st2 is st
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(st, st1)
    np.testing.assert_array_equal(st[1:], x)  # the state is the last raw inputs, newest last
    # T tokens at once equal T one-token calls (ops/conv1d_step.h).
    s = np.zeros((3, 40), np.float32)
    ya, _ = ops.conv1d_step(x[:1], w, s, state_out=s)
    yb, _ = ops.conv1d_step(x[1:], w, s, state_out=s)
    np.testing.assert_array_equal(np.concatenate([ya, yb]), y1)


def test_results_own_their_data(rng):
    """C++-allocated results (quantize, expert_buckets) are the C++ vectors themselves, owned by
    the numpy array through a capsule: no copy on the way out."""
    q = moeoracle.quantize(normal(rng, (4, 64)), 4, 64)
    for a in (q.w, q.scales, q.biases):
        assert type(a.base).__name__ == "PyCapsule" and a.flags.writeable
    idx, w = ops.router_topk(normal(rng, (3, 8)), 2)
    b = ops.expert_buckets(idx, w, 8)
    assert type(b.token_idx.base).__name__ == "PyCapsule"
    assert int(b.offsets[-1]) == 6 and sorted(b.expert_ids) == sorted(set(idx.ravel()))


def test_no_wrong_size_reaches_the_kernels(monkeypatch):
    """Every op's call with one array (or one array of a quantized matrix) a row or an element
    short, or empty, is refused with a Python exception in every tier: never a crash, never a
    silent read past the end."""
    recorded = {}
    for op in ops.OPS:
        real = getattr(moeoracle._core, op)
        monkeypatch.setattr(moeoracle._core, op, lambda *a, _op=op, _f=real: (recorded.setdefault(_op, a), _f(*a))[1])
    for op, case in CASES.items():
        case(np.random.default_rng(1), "ref64")
    monkeypatch.undo()
    assert set(recorded) == set(ops.OPS)

    def variants(a):
        if isinstance(a, np.ndarray) and a.size > 0:
            yield a.reshape(-1)[:-1].copy()
            yield a.reshape(-1)[:0].copy()
        elif isinstance(a, tuple) and hasattr(a, "_fields"):  # QuantizedMatrix, Expert, ExpertBuckets
            for field in a._fields:
                v = getattr(a, field)
                if isinstance(v, np.ndarray) and v.ndim == 2 and v.shape[0] > 1:
                    yield a._replace(**{field: v[:-1].copy()})
                elif isinstance(v, np.ndarray) and v.ndim == 1 and v.size > 0:
                    yield a._replace(**{field: v[:-1].copy()})
                elif isinstance(v, tuple):
                    for w in variants(v):
                        yield a._replace(**{field: w})

    accepted, tried = [], 0
    for op, args in recorded.items():
        for i, a in enumerate(args):
            for v in variants(a):
                for tier in TIERS:
                    bad = (tier,) + args[1:i] + (v,) + args[i + 1:]
                    tried += 1
                    try:
                        getattr(moeoracle._core, op)(*bad)
                        accepted.append((op, i, tier))
                    except (ValueError, TypeError):
                        pass
    assert not accepted and tried > 300


def test_conventions_are_parameters(rng):
    # delta_net: g = log(d) with decay_log=1 is the factor form d up to the log's rounding;
    # out_scale scales o only. qk_norm: each eps form and scaled=0 against numpy.
    q, k = normal(rng, (2, 2, 16)), normal(rng, (2, 2, 16))
    q /= np.linalg.norm(q, axis=-1, keepdims=True) * 4
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = normal(rng, (2, 4, 8))
    d = rng.uniform(0.5, 1.0, (2, 4)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (2, 4)).astype(np.float32)
    s0 = normal(rng, (4, 8, 16), 0.1)
    o, s = ops.delta_net(q, k, v, d, beta, s0)
    o_log, s_log = ops.delta_net(q, k, v, np.log(d.astype(np.float64)).astype(np.float32), beta, s0, decay_log=1,
                                 out_scale=0.5)
    # The f32 log moves each factor by at most u |log d| < 1e-7 relative; over 2 tokens of a
    # non-expansive recurrence with |S| ~ 1 that stays below 1e-6.
    np.testing.assert_allclose(s_log, s, rtol=0, atol=1e-6)
    np.testing.assert_allclose(o_log, 0.5 * o, rtol=0, atol=1e-6)
    o_mod, _ = ops.delta_net(q, k, v, d, beta, s0, head_group=1)
    assert not np.allclose(o_mod, o)  # heads 1 and 2 read other k heads
    x = normal(rng, (1, 2, 8))
    ss = (x.astype(np.float64) ** 2).sum(-1, keepdims=True)
    for form, inv in ((0, 1 / np.sqrt(ss / 8 + 1e-6)), (1, 1 / np.sqrt(ss + 1e-6)),
                      (2, 1 / np.maximum(np.sqrt(ss), 1e-6))):
        qo, ko = ops.qk_norm(x, x, eps_form=form, scaled=0)
        # Tolerance: the bound's gamma_8 / 2 + 14.5u is below 1e-6 relative.
        np.testing.assert_allclose(qo, x * inv, rtol=1e-6)
        np.testing.assert_allclose(ko, x * inv, rtol=1e-6)
    with pytest.raises(ValueError, match="qk_norm: eps_form=3, expected 0"):
        ops.qk_norm(x, x, eps_form=3)
