"""Safetensors dumps (oracle/safetensors.h): read into numpy (no copy: read-only views of the
mapped file), write from numpy (no copy: straight from the arrays' buffers), the tap-by-tap
diff of two dumps (`moeoracle diff`, oracle/dump_diff.h), and the drift of two runs' next-token
distributions (`moeoracle drift`, oracle/drift.h), and judge (`moeoracle judge`, oracle/judge.h):
per-module verdicts on an engine's own forward from its dump.

dtypes: numpy has no bfloat16, so BF16 tensors read as their uint16 patterns
(moeoracle.bf16_to_f32 widens them) and are written back as BF16 when named in ``bf16=``.
"""
from __future__ import annotations

import json as _json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from . import _core


class TensorMapping(Mapping):
    """A read-only mapping tensor name -> tensor over ``self.tensors`` (a dict in file order)."""

    tensors: dict

    def __getitem__(self, name: str):
        return self.tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)


class Dump(TensorMapping):
    """A read dump: a mapping tensor name -> read-only numpy array in file order (the forward
    order for the oracle's dumps), plus the file's __metadata__. The arrays view the mapped file
    and keep it mapped while any of them lives; .copy() one to modify it."""

    def __init__(self, path: str, tensors: dict[str, np.ndarray], metadata: dict[str, str]):
        self.path = path
        self.tensors = tensors
        self.metadata = metadata

    def __repr__(self) -> str:
        return f"Dump({self.path!r}: {len(self)} tensors, metadata {self.metadata})"


def read_dump(path: str | os.PathLike) -> Dump:
    """Every tensor of a safetensors file (validated against the file size first)."""
    path = os.fspath(path)
    tensors, metadata = _core.read_dump(path)
    return Dump(path, dict(tensors), dict(metadata))


def write_dump(path: str | os.PathLike, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None,
               *, bf16=()) -> None:
    """Writes tensors (in the mapping's order) and metadata (str -> str) as a safetensors file,
    through a temporary file renamed into place. Arrays must be C-contiguous, native byte
    order; uint16 arrays named in bf16 are written as BF16."""
    items = list(tensors.items())
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    _core.write_dump(os.fspath(path), items, meta, [str(n) for n in bf16])


@dataclass
class DiffResult:
    """The diff of dumps A (reference) and B (candidate): one dict per line of `moeoracle diff`
    in A's forward order (then B's tensors only in B, then B's tensors no map rule names), with
    kind ("compared", "mismatch", "only_in_a", "only_in_b", "unmapped"), tap, b_name, token (>= 0:
    B holds that token's row), shape, max_abs_diff, max_abs_a, rel (= max|A-B| / max|A|), cosine,
    special (NaN/Inf mismatches), failed, problem (for mismatches)."""

    taps: list[dict] = field(default_factory=list)
    first_failed: dict | None = None
    compared: int = 0
    failed: int = 0
    threshold: float = 0.0

    @property
    def passed(self) -> int:
        return self.compared - self.failed

    @property
    def ok(self) -> bool:
        """No compared tap over the threshold (what `moeoracle diff` exits 0 for)."""
        return self.failed == 0

    def __str__(self) -> str:
        lines = []
        for t in self.taps:
            name = t["tap"] if not t["b_name"] or t["b_name"] == t["tap"] else f"{t['tap']} <- {t['b_name']}"
            if t["kind"] == "compared":
                lines.append(f"{name:56} {t['shape']:14} {t['max_abs_diff']:12.4g} {t['rel']:12.4g} "
                             f"{t['cosine']:10.7f}  {'OVER' if t['failed'] else 'ok'}")
            else:
                lines.append(f"{name:56} {t['kind']} {t['problem']}".rstrip())
        lines.append(f"{self.passed} passed, {self.failed} failed")
        return "\n".join(lines)


def _as_path(x, tmpdir: str, name: str) -> str:
    """A dump path for x: a path as is; a Dump's file; a RunResult or a mapping written to a
    temporary file (with its metadata, if any)."""
    if isinstance(x, (str, os.PathLike)):
        return os.fspath(x)
    if isinstance(x, Dump):
        return x.path
    path = os.path.join(tmpdir, name + ".safetensors")
    if hasattr(x, "write_dump"):  # a RunResult (model.py imports this module, not the other way)
        x.write_dump(path)
    elif isinstance(x, Mapping):
        write_dump(path, x)
    else:
        raise TypeError(f"diff: {name} is a {type(x).__name__}, expected a dump path, a Dump, a RunResult or a "
                        "mapping of name -> array")
    return path


def diff(a, b, *, map: str | os.PathLike | None = None, threshold: float = 1e-5) -> DiffResult:
    """`moeoracle diff A B [--map MAP] [--threshold T]` as data. a and b: dump paths, Dumps,
    RunResults or mappings of name -> array. map: a JSON file naming B's tensors (another
    engine's dump) as our taps (oracle/tap_map.h). A tap fails when NaN/Inf differ or
    max|A-B| / max|A| > threshold."""
    with tempfile.TemporaryDirectory(prefix="moeoracle-diff-") as tmp:
        r = _core.diff(_as_path(a, tmp, "a"), _as_path(b, tmp, "b"), "" if map is None else os.fspath(map),
                       threshold)
    taps = list(r["taps"])
    first = taps[r["first_failed"]] if r["first_failed"] >= 0 else None
    return DiffResult(taps, first, r["compared"], r["failed"], threshold)


def drift(base: np.ndarray, test: np.ndarray, tokens=None) -> dict:
    """`moeoracle drift` of two logits arrays [tokens, vocab] (float32; the truth first): KL
    divergence per position (``kld_per_row``; ``kld`` = (mean, standard error), ``kld_max``,
    ``kld_p999``, ``kld_p99``, ``kld_p90``, ``kld_median``, ``kld_min``), ``same_top`` (share of
    positions with the same most likely token, with its error) and ``first_top_change`` (-1: none),
    and with ``tokens`` (the positions' token ids; row t predicts tokens[t + 1]) ``dp`` (change of
    the next token's probability), ``dp_rms``, ``dp_max``, ``dp_min`` and ``ln_ppl_ratio``
    (ln PPL(test) / PPL(base)). Computed in float64."""
    base = np.ascontiguousarray(base, dtype=np.float32)
    test = np.ascontiguousarray(test, dtype=np.float32)
    if base.ndim != 2 or test.shape != base.shape:
        raise ValueError(f"drift: base {base.shape} and test {test.shape}, expected two [tokens, vocab] arrays")
    toks = None if tokens is None else np.ascontiguousarray(tokens, dtype=np.int32).reshape(-1)
    return _core.drift(base, test, toks, base.shape[0], base.shape[1])


@dataclass
class JudgeResult:
    """`moeoracle judge` as data: ``modules`` in forward order, one dict per tapped module (tap,
    layer, fed: the replay went on with the engine's values there, judged / failed token counts,
    first_failed_token (-1: none), worst_ratio (error / bound at the worst token), err and bound
    per token (-1: not judged), note); ``first_failed``: the first failing module's dict or None;
    ``not_judged``: engine taps this model's forward has not; ``unmapped``: engine tensors no map
    rule names."""

    modules: list[dict] = field(default_factory=list)
    first_failed: dict | None = None
    tokens: int = 0
    storage: str = "f32"
    multiple: float = 16.0
    not_judged: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every judged token of every module within its bound: what `moeoracle judge` exits 0 for."""
        return self.first_failed is None


def judge(model: str | os.PathLike, dump: str | os.PathLike, *, tokens=None, map: str | os.PathLike | None = None,
          storage: str = "f32", multiple: float = 16.0, experts_per_token: int = 0,
          qk_norm_eps: str = "hf") -> JudgeResult:
    """Each tapped module of an engine's dump re-run by the truth on the engine's own inputs and
    held to the calibrated bound (docs/judge.md). model: a checkpoint directory or GGUF file;
    dump: the engine's taps (our names, or its own with ``map``, a `diff --map` file); tokens:
    the ids (None: the dump's "tokens" tensor or metadata); storage: how the engine keeps the
    dumped tensors (f32, f16, bf16). A bad file raises moeoracle.Error naming it."""
    toks = [] if tokens is None else [int(t) for t in tokens]
    text = _core.judge(os.fspath(model), os.fspath(dump), toks, "" if map is None else os.fspath(map), storage,
                       float(multiple), int(experts_per_token), qk_norm_eps)
    j = _json.loads(text)
    mods = j["modules"]
    first = next((m for m in mods if m["tap"] == j["first_failed"]), None) if j["first_failed"] else None
    return JudgeResult(mods, first, j["tokens"], j["storage"], j["multiple"], j["not_judged"], j["unmapped"])

