"""GGUF files from Python: a file written by the independent writer of the C++ tests
(tests/oracle/data/write_gguf.py) read back, q8_0 values decoded, bad files refused."""
import os
import subprocess
import sys

import numpy as np
import pytest

import moeoracle

WRITER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "oracle", "data", "write_gguf.py")


@pytest.fixture
def gguf_path(tmp_path):
    path = tmp_path / "m.gguf"
    subprocess.run([sys.executable, WRITER, str(path)], check=True)
    return path


def test_metadata_and_tensors(gguf_path):
    f = moeoracle.read_gguf(gguf_path)
    assert f.version == 3 and f.alignment == 64
    assert f.metadata["general.architecture"] == "qwen3moe"
    assert f.metadata["qwen3moe.expert_count"] == 8 and f.metadata_types["qwen3moe.expert_count"] == "u32"
    assert f.metadata["tokenizer.ggml.scores"] == [0.0, -1.0, -2.5]
    assert f.metadata_types["tokenizer.ggml.scores"] == "array<f32>"
    assert list(f) == ["output_norm.weight", "blk.0.attn_q.weight"]
    norm = f["output_norm.weight"]
    assert norm.type == "f32" and norm.ne == (5,) and norm.shape == (5,)
    np.testing.assert_array_equal(norm.values(), [1, 2, 3, 4, 5])
    assert not norm.raw.flags.writeable


def test_q8_0_values(gguf_path):
    q = moeoracle.read_gguf(gguf_path)["blk.0.attn_q.weight"]
    assert q.type == "q8_0" and q.ne == (32, 2) and q.shape == (2, 32) and q.decodable
    assert q.raw.dtype == np.uint8 and q.raw.size == 68
    w = q.values()
    # The writer's rows: scale 1.0 times (j - 10), scale 0.5 times -j.
    np.testing.assert_array_equal(w[0], np.arange(32) - 10.0)
    np.testing.assert_array_equal(w[1], -0.5 * np.arange(32))


def test_bad_file_is_named(tmp_path, gguf_path):
    data = gguf_path.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 100])  # into the q8_0 tensor (the last 60 bytes are padding)
    with pytest.raises(moeoracle.Error, match="cut.gguf"):
        moeoracle.read_gguf(cut)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + data[4:])
    with pytest.raises(moeoracle.Error, match="not a GGUF file"):
        moeoracle.read_gguf(bad)


def test_matvec_ggml_on_a_gguf_tensor(gguf_path):
    # The independent writer's q8_0 tensor times x, in every tier, against numpy on its values
    # (small integers times 1 and 0.5: every tier is exact here).
    q = moeoracle.read_gguf(gguf_path)["blk.0.attn_q.weight"]
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    want = q.values() @ x.astype(np.float64)
    for tier in ("ref64", "ref32", "fast"):
        y = moeoracle.ops.matvec_ggml(q, x, tier=tier)
        assert y.shape == (2,) and y.dtype == np.float32
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    Y = moeoracle.ops.matvec_ggml(q.raw.reshape(2, 34), np.stack([x, 2 * x]), type="q8_0")
    assert Y.shape == (2, 2)
    np.testing.assert_allclose(Y[1], 2 * want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="give its ggml type"):
        moeoracle.ops.matvec_ggml(q.raw.reshape(2, 34), x)
    with pytest.raises(moeoracle.Error, match="W has 67 bytes"):
        moeoracle.ops.matvec_ggml(q.raw[:67].reshape(1, 67), np.zeros(64, np.float32), type="q8_0")


def test_dequant_ggml_on_a_gguf_tensor(gguf_path):
    # The independent writer's q8_0 values, bit for bit in every tier, from the tensor or its bytes.
    q = moeoracle.read_gguf(gguf_path)["blk.0.attn_q.weight"]
    for tier in ("ref64", "ref32", "fast"):
        y = moeoracle.ops.dequant_ggml(q, tier=tier)
        assert y.shape == (2, 32) and y.dtype == np.float32
        np.testing.assert_array_equal(y, q.values())
    np.testing.assert_array_equal(moeoracle.ops.dequant_ggml(q.raw.reshape(2, 34), type="q8_0", cols=32), q.values())
    with pytest.raises(ValueError, match="give cols"):
        moeoracle.ops.dequant_ggml(q.raw.reshape(2, 34), type="q8_0")
    with pytest.raises(ValueError, match="cols=64 given"):
        moeoracle.ops.dequant_ggml(q, cols=64)
