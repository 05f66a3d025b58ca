"""Shared fixtures of the Python tests (run by CTest: python.*; see python/CMakeLists.txt)."""
import os
import subprocess

import numpy as np
import pytest

import moeoracle

U32 = 2.0 ** -24            # f32 unit roundoff (kernels_cpu/core/check_util.h kU32)
MIN_NORMAL32 = 2.0 ** -126  # kMinNormal32


def gamma_n(n, u=U32):
    """Higham's gamma_n (check_util.h gamma_n)."""
    return n * u / (1.0 - n * u)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def cli():
    """The moeoracle executable of the same build (CTest sets MOE_CLI)."""
    path = os.environ.get("MOE_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("MOE_CLI (the moeoracle executable) is not set")
    return path


def run_cli(cli, *args):
    r = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"{cli} {' '.join(map(str, args))}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="session")
def tiny_mlx(tmp_path_factory):
    """The tiny synthetic model (4 layers, hidden 256, 8 experts) in MLX format."""
    return moeoracle.fixture("tiny", tmp_path_factory.mktemp("models") / "tiny-mlx", format="mlx", seed=3)


@pytest.fixture(scope="session")
def tiny_moeflux(tmp_path_factory):
    return moeoracle.fixture("tiny", tmp_path_factory.mktemp("models") / "tiny-moeflux", format="moeflux", seed=3)
