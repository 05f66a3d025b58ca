"""The Vulkan kernel gate from Python (needs a Vulkan device: lavapipe on a machine without GPU)."""
import json

import pytest

import moeoracle

pytestmark = pytest.mark.skipif(not moeoracle.devices(), reason="no Vulkan device")


def test_devices():
    d = moeoracle.devices()[0]
    assert {"index", "name", "driver", "type", "subgroup_sizes"} <= set(d)


def test_bundled_kernels_one_op_one_seed_pass(tmp_path):
    r = moeoracle.compare(ops=["rmsnorm"], seed=3, shapes="remainders", precision="spec",
                          json=tmp_path / "report.json")
    assert len(r) > 0 and r.ok and r.summary["failed"] == 0
    for c in r:
        assert c["op"] == "rmsnorm" and c["seed"] == 3 and c["status"] == "PASS", c
        assert {"kernel", "shape", "subgroup", "error", "repro", "outputs"} <= set(c)
        out = c["outputs"][0]
        assert out["name"] == "y" and out["pass"] and 0 <= out["budget_used"] <= 1
        assert {"worst_index", "expected", "found", "bound", "cosine", "norm_ratio", "max_abs_rel"} <= set(out)
    # The report file the CLI's --json writes, with the same cases.
    assert len(json.loads((tmp_path / "report.json").read_text())["cases"]) == len(r)


def test_isolated_workers(cli):
    """worker= the moeoracle executable: each kernel's cases run in a worker process, as the CLI's
    default; the results are the same cases."""
    inproc = moeoracle.compare(ops="residual_add", seed=2, shapes="remainders", precision="spec")
    isolated = moeoracle.compare(ops="residual_add", seed=2, shapes="remainders", precision="spec", worker=cli)
    assert isolated.ok and [c["shape"] for c in isolated] == [c["shape"] for c in inproc]


def test_broken_manifest_is_a_clear_error(tmp_path):
    bad = tmp_path / "engine.json"
    bad.write_text(json.dumps({"name": "engine", "version": 1, "kernels": [
        {"name": "norm", "ops": ["rmsnorm"], "glsl": "norm.comp", "bindngs": [], "dispatch": [1, 1, 1]}]}))
    with pytest.raises(moeoracle.Error, match=r"engine\.json.*bindngs|bindngs.*engine\.json"):
        moeoracle.compare(bad, ops="rmsnorm", precision="spec")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{ not json")
    with pytest.raises(moeoracle.Error, match="garbage.json"):
        moeoracle.compare(garbage, precision="spec")
    with pytest.raises(moeoracle.Error, match="no_such_op"):
        moeoracle.compare(ops="no_such_op", precision="spec")
    with pytest.raises(moeoracle.Error, match="precision"):
        moeoracle.compare(ops="rmsnorm", precision="exact")
