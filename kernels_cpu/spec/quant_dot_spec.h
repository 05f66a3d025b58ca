// The quantized dot products Y [tokens, rows] = X W^T that matvec_q (one token) and matmul_q share:
// their seeded inputs, the exactly computable variant, the error bound, and the row sums the
// expert bounds build on (compare/cases/act_model.h). Read by spec/matvec_q_spec.h,
// spec/matmul_q_spec.h, their checks (kernels_cpu/check/quant_dot_check.h) and GPU cases. The
// quantized format: core/quant.h.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/rng.h"
#include "ops/matmul_q.h"
#include "spec/precision_model.h"

namespace moe {

// The quantized projections of Qwen3.5-397B-A17B and Qwen3.6-35B-A3B at their real shapes
// (docs/ops/models.md "Shape constants", docs/ops/formats.md "Tensor catalog",
// docs/ops/verification.md "Shapes to cover"; out x in), one entry per distinct (rows, cols, bits)
// of each model. The matvec and matmul cases run every entry at T = 1 (decode): an engine's decode
// kernel hard-wired to one model's widths (cols 4096, or its row count) meets the other
// model's here. Left out: lm_head [248320, d] (0.25-0.5 GB at 4 bits, beyond lavapipe's
// 128 MiB storage buffers); embedding_case.cpp covers the real vocabulary's addressing.
struct Projection {
  const char* model;  // "A17B" or "A3B"
  const char* name;   // the checkpoint tensors with this shape
  int64_t rows, cols;
  int bits;
};

inline const std::vector<Projection>& real_projections() {
  static const std::vector<Projection> list = {
      // A17B: d 4096, 32 q / 2 kv heads of 256, 64 v / 16 k linear heads of 128, 512 experts, I 1024.
      {"A17B", "q_proj (+gate)", 16384, 4096, 4},
      {"A17B", "k/v_proj, router mlp.gate", 512, 4096, 4},
      {"A17B", "o_proj, linear out_proj", 4096, 8192, 4},
      {"A17B", "linear in_proj_qkv", 12288, 4096, 4},
      {"A17B", "linear in_proj_z", 8192, 4096, 4},
      {"A17B", "linear in_proj_a/b", 64, 4096, 4},
      {"A17B", "shared_expert_gate", 1, 4096, 4},
      {"A17B", "expert gate/up", 1024, 4096, 4},
      {"A17B", "expert down", 4096, 1024, 4},
      {"A17B", "expert gate/up (requantised)", 1024, 4096, 2},
      {"A17B", "expert down (requantised)", 4096, 1024, 2},
      // A3B: d 2048, 16 q / 2 kv heads of 256, 32 v / 16 k linear heads of 128, 256 experts, I 512.
      {"A3B", "q_proj (+gate), linear in_proj_qkv", 8192, 2048, 4},
      {"A3B", "k/v_proj, expert gate/up", 512, 2048, 4},
      {"A3B", "o_proj, linear out_proj", 2048, 4096, 4},
      {"A3B", "linear in_proj_z", 4096, 2048, 4},
      {"A3B", "linear in_proj_a/b", 32, 2048, 4},
      {"A3B", "router mlp.gate", 256, 2048, 8},
      {"A3B", "shared_expert_gate", 1, 2048, 8},
      {"A3B", "expert down", 2048, 512, 4},
      {"A3B", "expert gate/up (requantised)", 512, 2048, 2},
      {"A3B", "expert down (requantised)", 2048, 512, 2},
  };
  return list;
}

// "A3B decode T 1 router mlp.gate 256x2048 8-bit"
inline std::string decode_label(const Projection& pr) {
  return std::string(pr.model) + " decode T 1 " + pr.name + " " + std::to_string(pr.rows) + "x" +
         std::to_string(pr.cols) + " " + std::to_string(pr.bits) + "-bit";
}

// What a quantized dot product's shape varies besides its params.
struct QuantDotVariant {
  bool exact = false;   // the exactly computable inputs below: bound 0
  int64_t window = 64;  // past 3 windows' rows, the CPU check's scalar tiers compare 3 windows of as many rows
  bool gpu = true;      // false: a CPU check shape that the GPU cases cover under other labels
};

// W [rows, cols]: random codes, scales and biases as random_quant draws them (Rng fork 1); X
// [tokens, cols]: activations with outlier channels (fork 2).
struct QuantDotInputs {
  QuantStorage W;
  std::vector<float> x;
};
QuantDotInputs quant_dot_inputs(const MatmulQParams& p, uint64_t seed, bool exact);

// Exactly computable inputs (exact): every bias 0, the scales of odd groups 1, of even groups
// 1 + 2^-7 (bf16 0x3F81), and x one-hot per token (x = 1 at a column of an odd group, 1 or 3 of
// the 4; 0 elsewhere). Every value any correct evaluation can form (q s, q s + b, s x, b x, W x,
// any partial sum, in any order, fused or not) is 0, an integer of magnitude < 2^8, or (even
// groups, times x = 0 after) q (1 + 2^-7) with a 16-bit significand: exact in f32 (< 2^24, no
// bits below 2^-7 q); Vulkan's add, mul and fma are correctly rounded, so they are exact on
// these values and every conforming kernel returns the truth exactly: bound 0 is a derivation,
// not a guess. It reaches sub-rounding errors the gamma bounds must allow: a scale of an odd
// group read with the even neighbour's low bit leaking into its mantissa (the even scale's bf16
// bit 0 is set: 1 + 2^-23 instead of 1, and y moves by at least one ulp wherever q >= 1), a
// weight rounded twice. Odd groups: bf16 element g sits in the high half of word g / 2 (4 groups
// per row, so g and the group index have the same parity).
inline constexpr int64_t kExactCols = 256;  // 4 groups of 64
QuantStorage exact_quant_weights(Rng rng, int64_t rows, int bits);
std::vector<float> exact_quant_inputs(Rng rng, int64_t tokens);

// Per row r of W and a vector v (f64): exact[r] = sum_c W[r][c] v[c] (W = q s + b exact in f64;
// f64 rounding of the sum only) and mag[r] (either nullptr: not wanted), the magnitude an f32 dot
// product's roundings scale with: sum_c |W v| where the weight is rounded once, else
// sum_c (|q s| + |b|) |v| (PrecisionModel::quant_weight_rounded_once).
void quant_row_sums(const QuantMatrix& W, const double* v, double* exact, double* mag, bool weight_rounded_once);

// Per element (t, r) of Y, given the truth's Y (f64 sums, rounded once to f32), first order in u.
// Each term is the weight q s + b rounded once (fma(q, s, b): u |W x|) or s x and b x rounded
// apart (fma(q, s x, b x): u (|q s x| + |b x|), which u |W x| does not cover where q s and b
// cancel), then its product rounded once or fused; the cols terms are summed in any order
// (lanes, subgroup trees, token tiles): |Y - sum W x| <= m.sum(cols + 1) mag (quant_row_sums).
// A kernel factored per 32 codes, s (sum q x) + b (sum x) (compare/shaders/matvec_q4.comp),
// rounds the same magnitudes |q s x| and |b x|, at worst about 34 + cols/32 times: within cols + 1.
// q s is exact in f32 at 2, 4 and 8 bits and any group size (q < 2^8 times an 8-bit bf16
// significand). The truth adds its f64 sums' gamma_{cols+1}(2^-53) mag and its rounding u |Y|.
// Floor: a GPU may flush subnormal products and partial sums to zero (Vulkan allows it without
// shaderDenormPreserveFloat32): each of the cols + 1 roundings may lose up to 2^-126, so
// (cols + 2) 2^-126 (~1e-34, far below any bound of these data).
std::vector<double> quant_dot_bound(const QuantMatrix& W, std::span<const float> x, std::span<const float> truth,
                                    const PrecisionModel& m);

}  // namespace moe
