"""Models from Python: fixture -> run -> taps -> dump, against the CLI's dump of the same run."""
import numpy as np
import pytest

import moeoracle
from moeoracle import ops
from conftest import run_cli

TOKENS = [1, 7, 42, 3, 99]


def test_fixture_and_config(tiny_mlx, tiny_moeflux):
    m = moeoracle.Model(tiny_mlx)
    c = m.config
    assert m.format == "mlx" and c["layers"] == 4 and c["hidden"] == 256 and c["experts"] == 8
    assert set(c["layer_kinds"]) == {"linear", "full"}
    assert moeoracle.Model(tiny_moeflux).format == "moeflux"
    assert "tiny" in moeoracle.fixture_presets()


def test_run_returns_logits_and_taps(tiny_mlx):
    r = moeoracle.run(tiny_mlx, TOKENS, backend="ref64", taps="*")
    vocab = moeoracle.Model(tiny_mlx).config["vocab"]
    assert r.logits.shape == (5, vocab) and r.logits.dtype == np.float32
    names = list(r.taps)
    assert names[:2] == ["tokens", "model.embed_tokens.out"] and names[-1] == "logits"
    np.testing.assert_array_equal(r.taps["tokens"].ravel(), TOKENS)
    assert "model.layers.3.out" in names and "model.layers.0.mlp.experts.idx" in names
    assert r.taps["model.layers.0.mlp.experts.idx"].dtype == np.int32
    assert all(t.shape[0] == 5 for t in r.taps.values())
    np.testing.assert_array_equal(r.taps["logits"], r.logits)
    assert type(r.logits.base).__name__ == "PyCapsule"  # the forward's own vector, not a copy
    # The greedy tokens the CLI prints.
    np.testing.assert_array_equal(r.argmax, ops.argmax(r.logits))
    # A glob filter, as the CLI's --taps.
    r2 = moeoracle.run(tiny_mlx, TOKENS, backend="ref64", taps="model.layers.1.*,logits")
    assert all(n.startswith("model.layers.1.") or n == "logits" for n in r2.taps) and "logits" in r2.taps
    np.testing.assert_array_equal(r2.taps["model.layers.1.out"], r.taps["model.layers.1.out"])
    assert moeoracle.run(tiny_mlx, TOKENS[:1], backend="ref64").taps == {}


@pytest.mark.parametrize("backend", ["ref64", "fast"])
@pytest.mark.parametrize("fmt,decode", [("mlx", False), ("moeflux", True)])
def test_dump_equals_the_cli_dump(cli, tiny_mlx, tiny_moeflux, tmp_path, backend, fmt, decode):
    """fixture -> run -> taps dict -> write dump -> read dump -> diff against `moeoracle run
    --dump` of the same run: the same bytes."""
    model = str(tiny_mlx if fmt == "mlx" else tiny_moeflux)
    cli_dump = tmp_path / "cli.safetensors"
    run_cli(cli, "run", "--model", model, "--tokens", ",".join(map(str, TOKENS)), "--backend", backend,
            "--dump", cli_dump, *(["--decode"] if decode else []))
    r = moeoracle.run(model, TOKENS, backend=backend, taps="*", decode=decode)
    py_dump = tmp_path / "py.safetensors"
    r.write_dump(py_dump)
    assert py_dump.read_bytes() == cli_dump.read_bytes()
    d = moeoracle.read_dump(py_dump)
    assert list(d) == list(r.taps) and d.metadata == r.metadata
    for name, t in r.taps.items():
        np.testing.assert_array_equal(d[name], t)
    diff = moeoracle.diff(cli_dump, d, threshold=0.0)
    assert diff.ok and diff.compared == len(r.taps) and diff.first_failed is None
    assert all(t["kind"] == "compared" and t["max_abs_diff"] == 0 for t in diff.taps)


def test_session_continues_and_snapshots(tiny_mlx, tmp_path):
    m = moeoracle.Model(tiny_mlx)
    whole = m.session("ref64").decode(TOKENS)
    s = m.session("ref64")  # capacity 0: the KV caches grow as tokens come
    first = s.decode(TOKENS[:3])
    assert s.pos == 3 and first.start_pos == 0
    s.save_snapshot(tmp_path / "state.mflx")
    rest = s.decode(TOKENS[3:], taps="logits")
    assert rest.start_pos == 3 and rest.metadata["start_pos"] == "3"
    np.testing.assert_array_equal(np.concatenate([first.logits, rest.logits]), whole.logits)
    s2 = m.session("ref64")
    s2.load_snapshot(tmp_path / "state.mflx", room=2)
    assert s2.pos == 3
    np.testing.assert_array_equal(s2.decode(TOKENS[3:]).logits, rest.logits)
    s.reset()
    assert s.pos == 0
    np.testing.assert_array_equal(s.decode(TOKENS).logits, whole.logits)


def test_tiers_agree_on_the_model(tiny_mlx):
    truth = moeoracle.run(tiny_mlx, TOKENS, backend="ref64").logits
    for backend in ("ref32", "fast"):
        got = moeoracle.run(tiny_mlx, TOKENS, backend=backend).logits
        assert np.max(np.abs(got - truth)) <= 1e-3 * np.max(np.abs(truth)), backend


def test_model_weights_are_read_only_views(tiny_mlx):
    m = moeoracle.Model(tiny_mlx)
    e = m.expert(0, 3)
    assert (e.hidden, e.inter) == (256, m.config["moe_inter"])
    assert not e.gate.w.flags.writeable
    x = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    ys = [ops.swiglu_expert(e, x, tier=t) for t in ops.TIERS]
    np.testing.assert_allclose(ys[1], ys[0], rtol=1e-4, atol=1e-6)
    emb = m.embed()
    np.testing.assert_array_equal(ops.embedding(emb, np.array([5], np.int32))[0], moeoracle.dequantize(emb)[5])
    with pytest.raises(moeoracle.Error, match="expert: layer 9 expert 0"):
        m.expert(9, 0)


def test_model_errors(tiny_mlx, tmp_path):
    with pytest.raises(moeoracle.Error, match="nope"):
        moeoracle.Model(tmp_path / "nope")
    vocab = moeoracle.Model(tiny_mlx).config["vocab"]
    with pytest.raises(moeoracle.Error, match=f"token id {vocab} at position 1 out of range"):
        moeoracle.run(tiny_mlx, [1, vocab], backend="ref64")
    with pytest.raises(ValueError, match="token id -1"):
        moeoracle.run(tiny_mlx, [-1], backend="ref64")
    with pytest.raises(moeoracle.Error, match="ref65"):
        moeoracle.run(tiny_mlx, [1], backend="ref65")
    with pytest.raises(moeoracle.Error, match="format 'onnx', expected mlx, moeflux or gguf"):
        moeoracle.fixture("tiny", tmp_path / "x", format="onnx")


def test_gguf_model_runs_like_its_mlx_source(tiny_mlx, tmp_path):
    """The tiny fixture as GGUF (q4_1 for its 4-bit matrices: the same exact weights): the truth's
    taps equal the MLX model's bit for bit up to layer 2, where two A_log values do not survive
    llama.cpp's ssm_a = -exp(A_log) in f32 (one f32 rounding of A_log), and within 1e-5 after."""
    gguf = moeoracle.fixture("tiny", tmp_path / "tiny.gguf", format="gguf", seed=3)
    m = moeoracle.Model(gguf)
    assert m.format == "gguf" and m.config == moeoracle.Model(tiny_mlx).config
    a = moeoracle.run(tiny_mlx, TOKENS, backend="ref64", taps="*")
    b = moeoracle.run(gguf, TOKENS, backend="ref64", taps="*")
    assert list(a.taps) == list(b.taps)
    for name in a.taps:
        if name.startswith(("tokens", "model.embed_tokens", "model.layers.0.", "model.layers.1.")):
            np.testing.assert_array_equal(a.taps[name], b.taps[name], err_msg=name)
        else:
            assert np.abs(a.taps[name] - b.taps[name]).max() <= 1e-5 * np.abs(a.taps[name]).max(), name
    with pytest.raises(moeoracle.Error, match="read its tensors with moeoracle.read_gguf"):
        m.embed()
