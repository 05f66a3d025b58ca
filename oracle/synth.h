// Deterministic synthetic models (`moeoracle fixture`): an MLX checkpoint directory of the
// qwen3_5_moe family with realistic statistics — every projection MLX-quantized from a Gaussian
// N(0, 1/fan_in) (router and shared-expert gate at 8 bits like Qwen3.6-35B-A3B), norm weights near
// 1 (stored with the +1 folded, as mlx-lm writes them), router weights scaled so the logits spread
// with std ~ 2, A_log = log U(1, 16), dt_bias N(0, 0.5^2), conv N(0, 0.3^2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "oracle/config.h"

namespace moe {

// Presets: "tiny" (the golden model's shape: 4 layers, hidden 256, 8 experts), "a3b-2layers" and
// "a17b-2layers" (one linear and one full-attention layer at the real Qwen3.6-35B-A3B /
// Qwen3.5-397B-A17B shapes, all experts, real vocabulary; for benchmarks). `layers` (real-shape
// presets only): 0 keeps those two; N > 0 takes the real model's first N layers instead (models
// larger than a machine's memory: the A17B's experts are 7.3 MB each, 3.7 GB a layer).
ModelConfig synthetic_preset(const std::string& name, int64_t layers = 0);
std::vector<std::string> synthetic_preset_names();

// Writes config.json + model.safetensors into `dir` (built under a temporary name beside it and
// renamed into place; oracle/atomic_file.h). Same seed, same bytes.
void write_synthetic_mlx(const ModelConfig& cfg, uint64_t seed, const std::string& dir);
// `moeoracle fixture`: format "mlx" (the above) or "moeflux" (that, exported by export_moeflux).
void write_synthetic(const ModelConfig& cfg, uint64_t seed, const std::string& dir, const std::string& format);

}  // namespace moe
