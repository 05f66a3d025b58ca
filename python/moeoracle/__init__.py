"""moeoracle: the CPU ground truth and differential oracle for streaming-MoE inference engines,
from Python (docs/python.md).

- ``moeoracle.ops``: every op of the op list in each tier (ref64 = the f64 truth, ref32, fast)
- ``quantize`` / ``dequantize``: MLX affine quantization
- ``Model``, ``Session``, ``run``, ``fixture``: the whole forward with taps as numpy arrays
- ``read_dump``, ``write_dump``, ``diff``, ``drift``: safetensors dumps, their tap diff and logits drift
- ``read_gguf``: GGUF files (metadata, tensors, exact values of ggml's block formats)
- ``compare``, ``devices``: the Vulkan kernel gate
- ``selfcheck``: each op's tiers against the truth with the C++ error bounds

Errors found by the C++ side are ``moeoracle.Error`` (a ValueError) naming what was expected
and what was found; wrong dtypes are TypeErrors.
"""
import os as _os

from . import _core
from ._core import Error, __version__, get_threads, set_threads, simd_pin, simd_target, simd_targets
from . import ops
from .compare import CompareResult, compare, devices
from .dumps import DiffResult, Dump, JudgeResult, diff, drift, judge, read_dump, write_dump
from .gguf import GgufFile, GgufTensor, read_gguf
from .model import Model, RunResult, Session, fixture, fixture_presets, run
from .ops import dequantize, selfcheck
from .quant import (Expert, QuantizedMatrix, bf16_to_f32, expert_blob_bytes, f32_to_bf16, quantize,
                    requantize_2bit)

# As the CLI: MOE_SIMD=NAME runs the fast tier on another SIMD target than the best.
if _os.environ.get("MOE_SIMD"):
    simd_pin(_os.environ["MOE_SIMD"])

__all__ = ["Error", "__version__", "ops", "quantize", "dequantize", "requantize_2bit", "QuantizedMatrix", "Expert",
           "expert_blob_bytes", "bf16_to_f32", "f32_to_bf16", "Model", "Session", "RunResult", "run", "fixture",
           "fixture_presets", "Dump", "read_dump", "write_dump", "diff", "drift", "DiffResult", "judge", "JudgeResult", "GgufFile", "GgufTensor", "read_gguf", "compare", "CompareResult",
           "devices", "selfcheck", "simd_target", "simd_targets", "simd_pin", "set_threads", "get_threads"]
