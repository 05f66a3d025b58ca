"""Models: load an MLX or moeflux directory and run the forward (oracle/forward.h) on a CPU
backend tier, with taps (HuggingFace module paths, leading dimension = token) returned as numpy
arrays. This is what `moeoracle run` does (cli/run.cpp); a RunResult writes the same dump.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from . import _core
from .dumps import write_dump
from .quant import Expert, QuantizedMatrix

BACKENDS = ("ref64", "ref32", "fast")


@dataclass
class RunResult:
    """What one run produced: logits [tokens, vocab] float32; taps name -> array [tokens, cols]
    (float32, int32 for the router's expert indices) in forward order; the metadata a dump of
    this run records (as `moeoracle run --dump` writes it); the position of the first token."""

    logits: np.ndarray
    taps: dict[str, np.ndarray] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    start_pos: int = 0

    @property
    def argmax(self) -> np.ndarray:
        """The greedy token of each position (NaN counts as the maximum, as the CLI's table)."""
        return np.argmax(self.logits, axis=-1)

    def write_dump(self, path: str | os.PathLike) -> None:
        """The taps as a safetensors dump with this run's metadata: the same bytes as
        `moeoracle run --dump` for the same run."""
        write_dump(path, self.taps, self.metadata)


def _tokens(tokens) -> list[int]:
    if isinstance(tokens, (int, np.integer)):
        ids = [int(tokens)]
    elif isinstance(tokens, str):
        ids = [int(t) for t in tokens.replace(",", " ").split()]
    else:
        ids = [int(t) for t in np.asarray(tokens).reshape(-1)]
    for i, t in enumerate(ids):
        if not 0 <= t < 2**31:
            raise ValueError(f"run: token id {t} at position {i} is not a non-negative int32 id")
    return ids


def _taps(taps) -> str | list[str] | None:
    """None: no taps; "*" or "a,b": globs; a list of globs."""
    if taps is None or isinstance(taps, str):
        return taps
    return [str(t) for t in taps]


def _core_attr(core: str, name: str, doc: str | None = None) -> property:
    """A read-only property that is attribute `name` of the C++ object self.<core>."""
    return property(lambda self: getattr(getattr(self, core), name), doc=doc)


class Model:
    """A loaded checkpoint: an MLX directory (config.json, model*.safetensors) or moeflux
    artifacts (model_weights.bin/.json, packed_experts/). Every tensor is validated at load; the
    weights stay memory-mapped."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)  # as given: recorded in dump metadata like the CLI's --model
        self._m = _core.Model(self.path)

    config = _core_attr("_m", "config", "The model's shape and conventions (oracle/config.h), layer kinds included.")
    format = _core_attr("_m", "format", '"mlx", "moeflux" or "gguf".')

    def session(self, backend: str = "fast", *, experts_per_token: int = 0, qk_norm_eps: str = "hf",
                capacity: int = 0, seed: int = 0) -> "Session":
        return Session(self, backend, experts_per_token=experts_per_token, qk_norm_eps=qk_norm_eps,
                       capacity=capacity, seed=seed)

    def embed(self) -> QuantizedMatrix:
        """The embedding table [vocab, hidden] (read-only views into the mapped checkpoint)."""
        return QuantizedMatrix(*self._m.embed())

    def lm_head(self) -> QuantizedMatrix:
        """The output projection [vocab, hidden] (read-only views)."""
        return QuantizedMatrix(*self._m.lm_head())

    def expert(self, layer: int, expert: int) -> Expert:
        """Routed expert `expert` of `layer` (read-only views): feed it to ops.swiglu_expert."""
        return Expert(*(QuantizedMatrix(*m) for m in self._m.expert(layer, expert)))

    def run(self, tokens, **kwargs) -> RunResult:
        """moeoracle.run(self, tokens, ...)."""
        return run(self, tokens, **kwargs)

    def __repr__(self) -> str:
        c = self.config
        return (f"Model({self.path!r}: {c['family']}, {self.format}, {c['layers']} layers, hidden {c['hidden']}, "
                f"{c['experts']} experts)")


class Session:
    """One sequence through the forward: the KV caches and linear-attention states carry from
    call to call, positions continue (the caches grow as needed). After an error mid-run the
    state is undefined: reset() it."""

    def __init__(self, model: Model | str | os.PathLike, backend: str = "fast", *, experts_per_token: int = 0,
                 qk_norm_eps: str = "hf", capacity: int = 0, seed: int = 0):
        self.model = model if isinstance(model, Model) else Model(model)
        self.seed = seed  # recorded in the metadata, as the CLI's --seed
        self._s = _core.Session(self.model._m, backend, experts_per_token, qk_norm_eps, capacity)

    pos = _core_attr("_s", "pos", "The next token's position.")
    backend = _core_attr("_s", "backend")
    experts_per_token = _core_attr("_s", "experts_per_token")

    def run(self, tokens, *, taps=None, decode: bool = False) -> RunResult:
        """Runs tokens from the current position: one prefill call, or one call per token with
        decode=True. taps: None (none), "*" (all), "glob,glob" or a list of globs (fnmatch, as the
        CLI's --taps)."""
        ids = _tokens(tokens)
        logits, tap_list, start = self._s.run(ids, _taps(taps), decode)
        # The metadata of `moeoracle run --dump` (cli/run.cpp), key for key.
        meta = {"model": self.model.path, "tokens": ",".join(str(t) for t in ids), "backend": self.backend,
                "version": _core.__version__, "seed": str(self.seed), "start_pos": str(start),
                "experts_per_token": str(self.experts_per_token)}
        return RunResult(logits, dict(tap_list), meta, start)

    def prefill(self, tokens, *, taps=None) -> RunResult:
        return self.run(tokens, taps=taps, decode=False)

    def decode(self, tokens, *, taps=None) -> RunResult:
        return self.run(tokens, taps=taps, decode=True)

    def reset(self) -> None:
        """Back to position 0 with zero state."""
        self._s.reset()

    def save_snapshot(self, path: str | os.PathLike, version: int = 1) -> None:
        """The state as an MFLX snapshot (1: the C engine's, 2: the Rust port's)."""
        self._s.save_snapshot(os.fspath(path), version)

    def load_snapshot(self, path: str | os.PathLike, room: int = 0) -> None:
        """Restores an MFLX snapshot (validated against the model first), with KV room for
        `room` more tokens."""
        self._s.load_snapshot(os.fspath(path), room)


def run(model: Model | str | os.PathLike, tokens, *, backend: str = "fast", taps=None, decode: bool = False,
        experts_per_token: int = 0, qk_norm_eps: str = "hf", threads: int = 0, snapshot_in=None, snapshot_out=None,
        snapshot_version: int = 1, seed: int = 0, dump=None) -> RunResult:
    """`moeoracle run`: tokens (ids: a list, an array or "1,2,3") through the model on a backend
    tier (ref64 the truth, ref32, fast), as one prefill or decoded one at a time. taps as in
    Session.run; dump: also write them to this safetensors file (taps None then means all, as
    the CLI's --dump without --taps). threads: the fast tier's OpenMP threads (process-wide).
    snapshot_in/out: MFLX engine state restored before / saved after."""
    m = model if isinstance(model, Model) else Model(model)
    ids = _tokens(tokens)
    if threads > 0:
        _core.set_threads(threads)
    if dump is not None and taps is None:
        taps = "*"
    s = Session(m, backend, experts_per_token=experts_per_token, qk_norm_eps=qk_norm_eps, capacity=len(ids),
                seed=seed)
    if snapshot_in is not None:
        s.load_snapshot(snapshot_in, room=len(ids))
    result = s.run(ids, taps=taps, decode=decode)
    if dump is not None:
        result.write_dump(dump)
    if snapshot_out is not None:
        s.save_snapshot(snapshot_out, snapshot_version)
    return result


def fixture(preset: str = "tiny", out: str | os.PathLike = "", *, format: str = "mlx", seed: int = 1) -> str:
    """`moeoracle fixture`: a deterministic synthetic model (same seed, same bytes) written to
    `out` in MLX or moeflux format (a directory) or GGUF (one file, llama.cpp's qwen35moe /
    qwen3next layout, the MLX weights without loss: docs/gguf.md). Presets: tiny (4 layers, hidden 256, 8
    experts), a3b-2layers, a17b-2layers (Qwen real shapes), ds3-tiny (DeepSeek-V3, the golden
    model's shapes), cogito-2layers (Cogito-V2's real shapes, 7.5 GB). Returns out."""
    out = os.fspath(out)
    if not out:
        raise ValueError("fixture: out is empty, expected the directory to write")
    _core.fixture(preset, out, format, seed)
    return out


def fixture_presets() -> list[str]:
    return list(_core.fixture_presets())
