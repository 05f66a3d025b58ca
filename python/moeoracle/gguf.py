"""GGUF files (llama.cpp's models; oracle/gguf.h, docs/gguf.md): the metadata as Python values,
every tensor's raw bytes as a read-only numpy view of the mapped file, and the exact values of the
block formats moeoracle decodes (float64, numpy's dimension order).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from .dumps import TensorMapping


@dataclass(frozen=True)
class GgufTensor:
    """One tensor: its ggml type name ("q4_K"), ``ne`` in ggml's order (ne[0] the row length),
    ``shape`` in numpy's (reversed ne) and ``raw``, its bytes (read-only, no copy)."""
    name: str
    type: str
    ne: tuple[int, ...]
    raw: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(reversed(self.ne))

    @property
    def decodable(self) -> bool:
        """Whether values() decodes this type."""
        return bool(_core.ggml_decodes(self.type))

    def values(self) -> np.ndarray:
        """The exact values as float64, shaped ``shape`` (a copy). moeoracle.Error for a type not
        decoded (see docs/gguf.md)."""
        n = int(np.prod(self.ne, dtype=np.int64))
        return _core.ggml_values(self.type, self.raw, n).reshape(self.shape)


class GgufFile(TensorMapping):
    """A read GGUF file: a mapping tensor name -> GgufTensor in file order, plus ``metadata``
    (key -> value: int, float, bool, str or a list), ``metadata_types`` (key -> GGUF type name),
    ``version`` and ``alignment``. The raw arrays keep the file mapped while any of them lives."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        version, alignment, metadata, tensors = _core.read_gguf(self.path)
        self.version = int(version)
        self.alignment = int(alignment)
        self.metadata: dict[str, Any] = {k: v for k, _, v in metadata}
        self.metadata_types: dict[str, str] = {k: t for k, t, _ in metadata}
        self.tensors: dict[str, GgufTensor] = {
            name: GgufTensor(name, type_, tuple(int(d) for d in ne), raw) for name, type_, ne, raw in tensors}

    def __repr__(self) -> str:
        arch = self.metadata.get("general.architecture", "?")
        return f"GgufFile({self.path!r}: version {self.version}, {arch}, {len(self)} tensors)"


def read_gguf(path: str | os.PathLike) -> GgufFile:
    """A GGUF file, validated against its size before use (moeoracle.Error names the entry)."""
    return GgufFile(path)
