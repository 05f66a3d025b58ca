"""MLX affine quantization (kernels_cpu/core/mlx_quantize.h, core/quant.h).

A quantized matrix W[rows, cols] at `bits` in {2, 4, 8} is three arrays:

- ``w``: uint32 [rows, cols * bits / 32], value c of a row in bits [(c % vpw) * bits, ...) of
  word c / vpw, low bits first (vpw = 32 / bits);
- ``scales``, ``biases``: bf16 [rows, cols / group_size], one affine pair per group, held as
  their raw 16-bit patterns in **uint16** arrays (numpy has no bfloat16; ``bf16_to_f32`` widens
  them exactly, and a torch bfloat16 tensor ``t`` gives the same patterns with
  ``t.view(torch.int16).numpy().view(np.uint16)``);

and W[r][c] = q * s + b.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _core


class QuantizedMatrix(NamedTuple):
    """An MLX affine quantized matrix (see the module docstring for the layout)."""

    w: np.ndarray        # uint32 [rows, cols * bits / 32]
    scales: np.ndarray   # uint16 bf16 patterns [rows, cols / group_size]
    biases: np.ndarray   # uint16 bf16 patterns [rows, cols / group_size]
    bits: int
    group_size: int

    @property
    def rows(self) -> int:
        return int(self.w.shape[0])

    @property
    def cols(self) -> int:
        return int(self.w.shape[1]) * (32 // self.bits)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def dequantize(self, tier: str = "ref64") -> np.ndarray:
        return dequantize(self, tier=tier)


class Expert(NamedTuple):
    """One SwiGLU expert: gate and up [inter, hidden], down [hidden, inter]."""

    gate: QuantizedMatrix
    up: QuantizedMatrix
    down: QuantizedMatrix

    @property
    def hidden(self) -> int:
        return self.gate.cols

    @property
    def inter(self) -> int:
        return self.gate.rows

    @property
    def bits(self) -> int:
        return self.gate.bits

    @staticmethod
    def from_blob(blob: np.ndarray, hidden: int, inter: int, bits: int = 4) -> "Expert":
        """Views (no copy) into one packed expert blob, as stored in moeflux's
        packed_experts/layer_NN.bin (core/expert_blob.h): a uint8 array of exactly
        expert_blob_bytes(hidden, inter, bits) bytes, 4-byte aligned. Group size 64."""
        if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1:
            raise TypeError(f"Expert.from_blob: blob is {_describe(blob)}, expected a 1-D numpy.ndarray of uint8")
        off = _core.expert_blob_offsets(hidden, inter, bits)
        if blob.size != off[9]:
            raise ValueError(f"Expert.from_blob: blob has {blob.size} bytes, expected {off[9]} for hidden={hidden} "
                             f"inter={inter} bits={bits}")
        group = 64

        def mat(first: int, rows: int, cols: int) -> QuantizedMatrix:
            w = blob[off[first]:off[first + 1]].view(np.uint32).reshape(rows, cols * bits // 32)
            s = blob[off[first + 1]:off[first + 2]].view(np.uint16).reshape(rows, cols // group)
            b = blob[off[first + 2]:off[first + 2] + s.nbytes].view(np.uint16).reshape(rows, cols // group)
            return QuantizedMatrix(w, s, b, bits, group)

        return Expert(mat(0, inter, hidden), mat(3, inter, hidden), mat(6, hidden, inter))


def expert_blob_bytes(hidden: int, inter: int, bits: int = 4) -> int:
    """Bytes of one packed expert blob."""
    return int(_core.expert_blob_offsets(hidden, inter, bits)[9])


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of {x.dtype} with shape {list(x.shape)}"
    return f"a {type(x).__name__}"


def quantize(w: np.ndarray, bits: int = 4, group_size: int = 64) -> QuantizedMatrix:
    """MLX's affine quantization of a float32 [rows, cols] matrix, operation for operation as
    MLX's CPU `quantize` (scales and biases rounded to bf16 after the codes are computed, as for
    bf16 checkpoints). Every value must be finite. The result's arrays are the C++ vectors
    themselves, handed to numpy without a copy."""
    return QuantizedMatrix(*_core.quantize(w, bits, group_size))


def requantize_2bit(q4: QuantizedMatrix) -> QuantizedMatrix:
    """A 4-bit matrix requantised to 2 bits per group as the engines' expert repacker does
    (scales/biases truncated to bf16); group_size must be a multiple of 16."""
    return QuantizedMatrix(*_core.requantize_2bit(q4))


def bf16_to_f32(u16: np.ndarray) -> np.ndarray:
    """The float32 values of bf16 patterns (exact)."""
    if not isinstance(u16, np.ndarray) or u16.dtype != np.uint16:
        raise TypeError(f"bf16_to_f32: x is {_describe(u16)}, expected a numpy.ndarray of uint16 bf16 patterns")
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """bf16 patterns (uint16) of float32 values, rounded to nearest even (NaN stays NaN)."""
    return _core.f32_to_bf16(x)
