// moe_permute_fuse's spec: its shapes and seeded inputs, and those of its GPU stages
// permute_gate_up and permute_down_scatter, and the bound of the routed sum
// out = out_in + sum_r w_r y_r given each row's expert bound. Read by the CPU three-way check
// (kernels_cpu/check/moe_permute_fuse_check.cpp) and the GPU cases
// (compare/cases/moe_permute_fuse_case.cpp, also for mutate). The rows' bounds are swiglu_expert's:
// the CPU tiers' swiglu_expert_bound (moe_permute_fuse_cpu_rows, below), the GPU's act_model
// (compare/cases/act_model.h). The op itself: kernels_cpu/ops/moe_permute_fuse.h.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "core/expert_blob.h"
#include "ops/moe_permute_fuse.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

struct MoePermuteFuseVariant {
  int64_t k = 1;             // routed experts per token
  int64_t pool = 1;          // P: the experts the tokens draw from (bounds the buckets B, the GPU's buffers)
  float x_scale = 1.0f;      // x times this (300: |g| past exp's overflow)
  bool cpu = true;           // the CPU check runs it (the GPU's real shapes cost it 8 to 128 full experts a tier)
  bool whole = true;         // the GPU's moe_permute_fuse runs it (inter % 64 == 0: the down projection's groups)
  bool gate_up = true;       // the GPU's permute_gate_up runs it
  bool down_scatter = true;  // the GPU's permute_down_scatter runs it
  bool gpu() const { return whole || gate_up || down_scatter; }
};
using MoePermuteFuseShape = SpecShape<MoePermuteFuseParams, MoePermuteFuseVariant>;

// Remainders: d, I multiples of the group (64), buckets of 1 row to past the 8-token tiles, every
// bit width, every token on the same experts, |g| past exp's overflow, K 17 and 64 (the manifest's
// limit), d or I past the 8192 floats of a staged row, inter not a multiple of a workgroup's rows
// (gate_up alone); the CPU's own: 1 to 12 experts, K 1 to 10, many shared buckets. Real: the A3B,
// A17B and DeepSeek-V3 experts, decode and prefill.
std::vector<MoePermuteFuseShape> moe_permute_fuse_shapes(bool remainders, bool real);

// A routed prefill batch: T tokens each routed to K distinct experts drawn from a pool of P of the
// E experts (Rng fork 1), weights positive and renormalised per token like top-K routing; buckets
// from expert_buckets_ref (the op's row order). Each routed expert as random_expert draws it (fork
// 100 + id; down's columns I rounded up to the group), x activations times x_scale (fork 2), out_in
// a residual-like h (activations, fork 3) that out accumulates into.
struct MoePermuteFuseInputs {
  ExpertBuckets b;
  std::vector<ExpertStorage> store;    // [B] the routed experts, bucket order
  std::vector<ExpertWeights> experts;  // [E] by expert id (the op's view; unrouted ids empty)
  std::vector<float> x, out_in;
};
MoePermuteFuseInputs moe_permute_fuse_inputs(const MoePermuteFuseParams& p, const MoePermuteFuseVariant& v,
                                             uint64_t seed);

// The GPU's shapes: "remainder T 3 K 2 E 8 B 5 d 128 I 128 8-bit" (B: the drawn buckets); the
// CPU's own shapes keep their label.
std::string moe_permute_fuse_label(const MoePermuteFuseShape& s, const MoePermuteFuseInputs& in);

// Calls f(r, bucket, token) for every routed row r, in bucket order.
template <class F>
void for_each_row(const ExpertBuckets& b, F&& f) {
  for (size_t k = 0; k + 1 < b.offsets.size(); ++k)
    for (uint32_t r = b.offsets[k]; r < b.offsets[k + 1]; ++r) f(int64_t(r), k, int64_t(b.token_idx[r]));
}

// Per routed row r and output column i, [rows, d]: err bounds |y_r[i] - (Wd h)_r[i]| of the
// implementation's row plus the truth's, mag bounds |y_r[i]| as the implementation forms it.
struct PermuteRowBounds {
  std::vector<double> err, mag;
};

// The CPU tiers' rows: swiglu_expert_bound per row (spec/swiglu_expert_spec.cpp: the f32 tier's
// fixed order, the fast tier's any order, the truth's share in both), mag = |Wd h| + err.
struct PermuteCpuRowBounds {
  PermuteRowBounds ref32, fast;
};
PermuteCpuRowBounds moe_permute_fuse_cpu_rows(const MoePermuteFuseParams& p, const MoePermuteFuseInputs& in);

// Per element out[t][i], first order in u. Each of the K + 1 terms (out_in, and w_r y_r of t's rows)
// carries its row's error |w_r| err_r; the sum of the K + 1 terms (a product and a sum, or an fma,
// per row) in any order adds m.sum(K + 1) (|out_in| + sum_r |w_r| mag_r), and the products' errors
// pass through it scaled by at most 1 + m.sum(K + 1). The truth sums in f64 (gamma_{K+1}(2^-53) of
// the same magnitudes) and, where it is stored as f32 (truth not empty), rounds once: u |truth|.
// Floor: (K + 2) 2^-126 for flushed subnormal products and partial sums.
// The rows' bounds come from the judge (moe_permute_fuse_cpu_rows, the GPU's act_model) because
// swiglu_expert's own bound is two functions, the CPU tiers' and the GPU's; one formula for both
// would change swiglu_expert's and expert_gate_up's bounds.
std::vector<double> moe_permute_fuse_bound(const MoePermuteFuseParams& p, int64_t K, const ExpertBuckets& b,
                                           std::span<const float> out_in, const PermuteRowBounds& rows,
                                           std::span<const float> truth, const PrecisionModel& m);

}  // namespace moe
