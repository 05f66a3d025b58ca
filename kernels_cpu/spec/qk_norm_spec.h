// qk_norm's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/qk_norm_check.cpp), the GPU cases (compare/cases/qk_norm_case.cpp, also
// for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/qk_norm.h.
#pragma once
#include <span>
#include <vector>

#include "ops/qk_norm.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// q and k as they leave the conv's SiLU: activations with outlier channels, every 5th head shrunk
// by 1e-3 so that eps takes part (spec/norm_bound.h).
struct QkNormInputs {
  std::vector<float> q, k;
};
QkNormInputs qk_norm_inputs(const QkNormParams& p, uint64_t seed);

// The variant: CPU only (the 128-token prefill reaches the fast tier's threads, from 2^18
// elements; on the GPU the 64-token prefill stands for it).
using QkNormShape = SpecShape<QkNormParams, bool>;
// Remainders: the per-head norms' (spec/norm_bound.h). Real: the linear attention of both A17B
// and A3B (Hk 16, dk 128), decode and prefill.
std::vector<QkNormShape> qk_norm_shapes(bool remainders, bool real);

// Per element of q_out and k_out, given the truth's (f64, rounded once to f32), first order in u:
//   inv = 1/sqrt(ss / dk + eps): norm_inv_rel(dk) (spec/norm_bound.h).
//   Scales: s = 1/sqrt(dk): m.rsqrt_rel; q's 1/dk as s * s: 2 rsqrt_rel + u, or 1/dk: division_rel.
//   Two more products per element (x * inv then * scale, or x * (inv * scale)): 2u. (The
//   engines' q * inv * s * s, three left-associated products: 3u + 2 rsqrt_rel, no more.)
//   The truth's own rounding to f32: u.
// q: |q_out| (inv + q scale + 3u), k: |k_out| (inv + rsqrt_rel + 3u), plus the smallest normal.
// CPU: q gamma_dk/2 + 11.5u, k + 8.5u; Vulkan rules: q sum(dk)/2 + 19.5u, k + 14.5u.
// Conventions (ops/qk_norm.h), same reasoning:
//   eps_form 1, inv = 1/sqrt(ss + eps): ss + eps (m.sum(dk) + u) halved by the root, then
//     1/sqrt (m.rsqrt_rel) or sqrt and a division of x by it (m.sqrt_rel + m.division_rel, the
//     division standing in for the product x * inv): the larger.
//   eps_form 2, inv = 1/max(sqrt(ss), eps): m.sum(dk) / 2 + m.sqrt_rel (max is exact and
//     1-Lipschitz: it never grows an error) + m.division_rel.
//   Factors: forms 1 and 2 scaled: q's 1/sqrt(dk) m.rsqrt_rel + one product u, k none;
//   scaled = 0: none. Then the product x * inv and the truth's rounding: 2u.
double qk_norm_inv_rel(const QkNormParams& p, const PrecisionModel& m);
struct QkNormBounds {
  std::vector<double> q, k;
};
QkNormBounds qk_norm_bound(const QkNormParams& p, std::span<const float> q_truth, std::span<const float> k_truth,
                           const PrecisionModel& m);

}  // namespace moe
