"""Safetensors dumps: read, write, diff (with and without a tap map)."""
import json

import numpy as np
import pytest

import moeoracle


def test_write_read_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64": rng.standard_normal(5),
        "f16": rng.standard_normal((2, 2)).astype(np.float16),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "u8": np.arange(4, dtype=np.uint8),
        "i64": np.array([-1, 2**40], np.int64),
        "flag": np.array([True, False]),
        "w_bf16": moeoracle.f32_to_bf16(np.array([1.5, -2.0], np.float32)),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "t.safetensors"
    moeoracle.write_dump(path, tensors, {"model": "x", "seed": 3}, bf16=["w_bf16"])
    d = moeoracle.read_dump(path)
    assert list(d) == list(tensors) and d.metadata == {"model": "x", "seed": "3"}
    for name, t in tensors.items():
        assert d[name].dtype == t.dtype and d[name].shape == t.shape, name
        np.testing.assert_array_equal(d[name], t)
    # Read-only views of the mapped file, kept alive by their arrays.
    a = d["f32"]
    assert not a.flags.writeable and type(a.base).__name__ == "PyCapsule"
    del d
    np.testing.assert_array_equal(a, tensors["f32"])
    with pytest.raises(ValueError):
        a[0, 0] = 1
    # BF16 is BF16 on disk (the CLI's inspect names it).
    header = json.loads(path.read_bytes()[8:8 + int.from_bytes(path.read_bytes()[:8], "little")])
    assert header["w_bf16"]["dtype"] == "BF16" and header["f16"]["dtype"] == "F16"


def test_write_errors(tmp_path):
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="tensor 'x' is not C-contiguous"):
        moeoracle.write_dump(tmp_path / "a.st", {"x": x[:, ::2]})
    with pytest.raises(TypeError, match="tensor 'x' has dtype complex64"):
        moeoracle.write_dump(tmp_path / "a.st", {"x": x.astype(np.complex64)})
    with pytest.raises(TypeError, match="tensor 'x' is listed as bf16 but has dtype float32"):
        moeoracle.write_dump(tmp_path / "a.st", {"x": x}, bf16=["x"])
    with pytest.raises(ValueError, match="bf16 names tensor 'y'"):
        moeoracle.write_dump(tmp_path / "a.st", {"x": x}, bf16=["y"])
    with pytest.raises(TypeError, match="tensor 'x' is a list"):
        moeoracle.write_dump(tmp_path / "a.st", {"x": [1.0]})
    assert not (tmp_path / "a.st").exists()


def test_read_errors(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(moeoracle.Error, match="bad.safetensors"):
        moeoracle.read_dump(bad)
    with pytest.raises(moeoracle.Error, match="missing.safetensors"):
        moeoracle.read_dump(tmp_path / "missing.safetensors")


def test_diff_finds_the_first_divergent_tap(tmp_path):
    rng = np.random.default_rng(1)
    a = {f"model.layers.{i}.out": rng.standard_normal((3, 8)).astype(np.float32) for i in range(4)}
    b = {k: v.copy() for k, v in a.items()}
    b["model.layers.2.out"][1, 5] *= 1.01
    b["model.layers.3.out"][0, 0] = np.nan
    b["extra"] = np.zeros(2, np.float32)
    del b["model.layers.0.out"]
    r = moeoracle.diff(a, b, threshold=1e-3)
    assert not r.ok and r.failed == 2 and r.compared == 3 and r.passed == 1
    assert r.first_failed["tap"] == "model.layers.2.out"
    kinds = {t["tap"] or t["b_name"]: t for t in r.taps}
    assert kinds["model.layers.0.out"]["kind"] == "only_in_a"
    assert kinds["model.layers.3.out"]["special"] == 1 and kinds["model.layers.3.out"]["failed"]
    assert kinds["extra"]["kind"] == "only_in_b"
    a2 = a["model.layers.2.out"].astype(np.float64)
    changed = abs(float(b["model.layers.2.out"][1, 5]) - a2[1, 5])
    assert kinds["model.layers.2.out"]["max_abs_diff"] == changed
    assert kinds["model.layers.2.out"]["rel"] == pytest.approx(changed / np.abs(a2).max())
    assert "1 passed, 2 failed" in str(r)


def test_diff_with_a_map(tmp_path):
    """Another engine's dump (f16, llama.cpp-style names, logits per token) lined up by a map."""
    rng = np.random.default_rng(2)
    ours = {"model.layers.0.out": rng.standard_normal((2, 16)).astype(np.float32),
            "logits": rng.standard_normal((2, 32)).astype(np.float32)}
    engine = {"blk.0.ffn_out": ours["model.layers.0.out"].astype(np.float16),
              "t0.result_output": ours["logits"][0].copy(), "t1.result_output": ours["logits"][1].copy(),
              "unrelated": np.zeros(1, np.float32)}
    map_path = tmp_path / "map.json"
    map_path.write_text(json.dumps({"version": 1, "map": {"blk.{layer}.ffn_out": "model.layers.{layer}.out",
                                                          "t{token}.result_output": "logits"}}))
    r = moeoracle.diff(ours, engine, map=map_path, threshold=2e-3)
    assert r.ok and r.compared == 3
    rows = [t for t in r.taps if t["kind"] == "compared"]
    assert [(t["tap"], t["b_name"], t["token"]) for t in rows] == [
        ("model.layers.0.out", "blk.0.ffn_out", -1), ("logits", "t0.result_output", 0),
        ("logits", "t1.result_output", 1)]
    assert r.taps[-1]["kind"] == "unmapped" and r.taps[-1]["b_name"] == "unrelated"
    bad_map = tmp_path / "bad.json"
    bad_map.write_text("{")
    with pytest.raises(moeoracle.Error, match="bad.json"):
        moeoracle.diff(ours, engine, map=bad_map)


def test_drift_of_two_logits_arrays():
    # A uniform base and a test row with one logit raised by d: KL in closed form.
    V, d = 100, 2.0
    base = np.zeros((2, V), np.float32)
    test = base.copy()
    test[1, 3] = d
    r = moeoracle.drift(base, test, tokens=[0, 3, 3])  # row t predicts tokens[t + 1]
    lz = np.log(np.exp(d) + V - 1)
    assert r["kld_per_row"][0] == 0.0
    assert abs(r["kld_per_row"][1] - (-np.log(V) - (d - V * lz) / V)) < 1e-12
    assert r["same_top"][0] == 0.5 and r["first_top_change"] == 1
    assert r["scored"] == 2 and abs(r["dp"][0] - (np.exp(d - lz) - 1 / V) / 2) < 1e-12
    with pytest.raises(ValueError, match="expected two"):
        moeoracle.drift(base, test[:1])


def test_judge_an_engine_dump(tiny_mlx, tmp_path):
    # An honest engine (the fast tier) passes module by module. The same dump with one module's
    # output changed afterwards (1 % in some channels) fails there, and at the next module, whose
    # dumped output the engine computed from the unchanged values; every other module passes.
    model = moeoracle.Model(tiny_mlx)
    run = model.session("fast").run([3, 17, 250, 9, 41], taps="*")
    path = tmp_path / "engine.safetensors"
    run.write_dump(path)
    r = moeoracle.judge(tiny_mlx, path)
    assert r.ok and r.first_failed is None and len(r.modules) > 20 and r.storage == "f32"
    assert all(m["judged"] == 5 and m["failed"] == 0 for m in r.modules)
    taps = dict(run.taps)
    bad = "model.layers.1.linear_attn.norm"
    taps[bad] = taps[bad].copy()
    taps[bad][:, :8] *= 1.01
    moeoracle.write_dump(tmp_path / "bug.safetensors", taps, run.metadata)
    r = moeoracle.judge(tiny_mlx, tmp_path / "bug.safetensors")
    assert not r.ok and r.first_failed["tap"] == bad and r.first_failed["first_failed_token"] == 0
    failing = [m["tap"] for m in r.modules if m["failed"]]
    assert failing == [bad, "model.layers.1.linear_attn.out"]
    with pytest.raises(moeoracle.Error, match="storage"):
        moeoracle.judge(tiny_mlx, path, storage="f8")
