"""MLX affine quantize / dequantize against kernels_cpu's semantics (core/mlx_quantize.h,
core/quant.h), re-derived in numpy."""
import numpy as np
import pytest

import moeoracle
from moeoracle import ops


def f32_to_bf16_rne(x):
    """Round-to-nearest-even bf16 patterns of finite float32 values (core/bf16.h)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def numpy_quantize(w, bits, group):
    """mlx_quantize.h's algorithm, in float32, per group: returns codes [rows, cols] and the
    f32 scales/biases before their bf16 rounding."""
    rows, cols = w.shape
    g = w.reshape(rows, cols // group, group)
    n = np.float32(2 ** bits - 1)
    w_min, w_max = g.min(axis=-1), g.max(axis=-1)
    min_is_edge = np.abs(w_min) > np.abs(w_max)
    scale = np.maximum((w_max - w_min) / n, np.float32(1e-7))
    scale = np.where(min_is_edge, scale, -scale).astype(np.float32)
    edge = np.where(min_is_edge, w_min, w_max).astype(np.float32)
    q0 = np.rint(edge / scale)
    nz = q0 != 0
    scale = np.where(nz, edge / np.where(nz, q0, 1), scale).astype(np.float32)
    bias = np.where(nz, edge, 0).astype(np.float32)
    codes = np.clip(np.rint((g - bias[..., None]) / scale[..., None]), 0, n).astype(np.uint32)
    return codes.reshape(rows, cols), scale, bias


def unpack(q):
    """The codes of a QuantizedMatrix's packed words (low bits first)."""
    vpw = 32 // q.bits
    shifts = (np.arange(vpw, dtype=np.uint32) * q.bits)
    codes = (q.w[..., None] >> shifts) & np.uint32((1 << q.bits) - 1)
    return codes.reshape(q.rows, q.cols)


@pytest.mark.parametrize("bits,group", [(2, 64), (4, 64), (8, 64), (4, 32), (4, 128)])
def test_quantize_follows_mlx(bits, group):
    rng = np.random.default_rng(bits * 1000 + group)
    w = (rng.standard_normal((9, 256)) * 0.05).astype(np.float32)
    w[0, :group] = 0.25  # a constant group
    w[1, :group] = -np.abs(w[1, :group])  # negative edge
    q = moeoracle.quantize(w, bits, group)
    assert q.w.shape == (9, 256 * bits // 32) and q.w.dtype == np.uint32
    assert q.scales.shape == q.biases.shape == (9, 256 // group) and q.scales.dtype == np.uint16
    codes, scale, bias = numpy_quantize(w, bits, group)
    np.testing.assert_array_equal(unpack(q), codes)
    np.testing.assert_array_equal(q.scales, f32_to_bf16_rne(scale))
    np.testing.assert_array_equal(q.biases, f32_to_bf16_rne(bias))


def test_packing_low_bits_first():
    """core/quant.h: codes 0..7 at 4 bits pack to 0x76543210."""
    w = np.zeros((1, 64), np.uint32)
    q = moeoracle.QuantizedMatrix(np.array([[0x76543210] * 8], np.uint32), np.full((1, 1), 0x3F80, np.uint16),
                                  np.zeros((1, 1), np.uint16), 4, 64)
    np.testing.assert_array_equal(unpack(q)[0, :8], np.arange(8))
    del w
    # scale 1.0 (bf16 0x3F80), bias 0: dequantised values are the codes.
    np.testing.assert_array_equal(moeoracle.dequantize(q)[0, :8], np.arange(8, dtype=np.float32))


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_dequantize_is_q_times_s_plus_b_in_every_tier(bits):
    rng = np.random.default_rng(bits)
    w = (rng.standard_normal((7, 192)) * 0.1).astype(np.float32)
    q = moeoracle.quantize(w, bits, 64)
    s = np.repeat(moeoracle.bf16_to_f32(q.scales), 64, axis=1).astype(np.float64)
    b = np.repeat(moeoracle.bf16_to_f32(q.biases), 64, axis=1).astype(np.float64)
    want = (unpack(q).astype(np.float64) * s + b).astype(np.float32)  # q*s exact, one rounding
    for tier in ops.TIERS:
        np.testing.assert_array_equal(moeoracle.dequantize(q, tier=tier), want)
    # The round trip: each value gets the nearest of its group's 2^bits levels (codes clamp at
    # the range ends), up to the codes having been computed with the scale and bias before their
    # bf16 rounding (relative 2^-8 each).
    levels = np.arange(2 ** bits)[:, None, None] * s[None] + b[None]  # [levels, rows, cols]
    nearest = np.min(np.abs(levels - w.astype(np.float64)[None]), axis=0)
    deq = moeoracle.dequantize(q).astype(np.float64)
    slack = 2 * ((2 ** bits - 1) * np.abs(s) + np.abs(b)) * 2.0 ** -8
    assert np.all(np.abs(deq - w) <= nearest + slack)


def test_requantize_2bit():
    rng = np.random.default_rng(5)
    q4 = moeoracle.quantize((rng.standard_normal((4, 128)) * 0.1).astype(np.float32), 4, 64)
    q2 = moeoracle.requantize_2bit(q4)
    assert (q2.bits, q2.group_size, q2.rows, q2.cols) == (2, 64, 4, 128)
    f = moeoracle.dequantize(q4).astype(np.float64)
    err = np.abs(moeoracle.dequantize(q2) - f).reshape(4, 2, 64).max(axis=-1)
    rng_per_group = np.ptp(f.reshape(4, 2, 64), axis=-1)
    assert np.all(err <= rng_per_group / 3 * 0.51 + 1e-6)  # half a 2-bit step (plus bf16 truncation)


def test_bf16_conversions():
    x = np.array([1.0, -2.5, 3.14159, 1e-30, np.inf, np.nan], np.float32)
    u = moeoracle.f32_to_bf16(x)
    assert u.dtype == np.uint16
    np.testing.assert_array_equal(u[:5], f32_to_bf16_rne(x[:5]))
    back = moeoracle.bf16_to_f32(u)
    assert np.isnan(back[5]) and back[4] == np.inf and back[0] == 1.0 and back[1] == -2.5
    with pytest.raises(TypeError, match="uint16"):
        moeoracle.bf16_to_f32(x)


def test_expert_blob_views():
    """Expert.from_blob slices a packed blob (core/expert_blob.h) without copying."""
    rng = np.random.default_rng(9)
    e = moeoracle.Expert(*(moeoracle.quantize((rng.standard_normal(s) * 0.1).astype(np.float32), 4, 64)
                           for s in [(128, 64), (128, 64), (64, 128)]))
    parts = [a for m in e for a in (m.w, m.scales, m.biases)]
    blob = np.concatenate([p.view(np.uint8).ravel() for p in parts])
    assert blob.size == moeoracle.expert_blob_bytes(64, 128, 4)
    v = moeoracle.Expert.from_blob(blob, hidden=64, inter=128, bits=4)
    for a, b in zip(parts, (a for m in v for a in (m.w, m.scales, m.biases))):
        np.testing.assert_array_equal(a, b)
        assert np.shares_memory(b, blob)
    x = (rng.standard_normal((2, 64))).astype(np.float32)
    np.testing.assert_array_equal(ops.swiglu_expert(v, x), ops.swiglu_expert(e, x))
    with pytest.raises(ValueError, match="blob has 10 bytes"):
        moeoracle.Expert.from_blob(np.zeros(10, np.uint8), hidden=64, inter=128, bits=4)


def test_quantize_errors():
    with pytest.raises(moeoracle.Error, match=r"w\[0\]\[3\] = nan"):
        w = np.zeros((2, 64), np.float32)
        w[0, 3] = np.nan
        moeoracle.quantize(w)
    with pytest.raises(moeoracle.Error, match="cols=100, expected a multiple of group_size=64"):
        moeoracle.quantize(np.zeros((2, 100), np.float32))
    with pytest.raises(moeoracle.Error, match="bits=3"):
        moeoracle.quantize(np.zeros((2, 64), np.float32), bits=3)
    with pytest.raises(ValueError, match="w has 1 dimensions, expected 2"):
        moeoracle.quantize(np.zeros(64, np.float32))
