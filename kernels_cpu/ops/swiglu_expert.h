// swiglu_expert: one SwiGLU expert over T tokens (docs/ops/moe.md "MoE block" step 4;
// docs/ops/norms.md "SwiGLU, residual add, sigmoid gate"; HF Qwen3NextMLP / the experts of
// Qwen3_5MoeSparseMoeBlock).
//
// Shape contract (d = hidden, I = inter):
//   e.gate [I, d], e.up [I, d], e.down [d, I]   QuantMatrix, all with bits = p.bits (any G the
//                                               layout allows; 64 in every checkpoint). Either
//                                               loose matrices or views into a packed blob
//                                               (core/expert_blob.h, expert_from_blob).
//   x [T, d] f32 row-major
//   y [T, d] f32; may be the same buffer as x (a token's x is fully read before its y is written)
//   y[t] = down( silu(gate x[t]) * up x[t] ),  silu(g) = g / (1 + exp(-g)) (division form).
// The shared expert is the same op with the three mlp.shared_expert.{gate,up,down}_proj
// matrices and I = SHARED_INTERMEDIATE (its sigmoid gate is applied in moe_combine).
// f32 tier order (CPU-C/CPU-R): g = matvec_q_ref<float>(gate, x), u = matvec_q_ref<float>(up, x),
// h[i] = (g[i] / (1 + expf(-g[i]))) * u[i], y = matvec_q_ref<float>(down, h). The f64 tier runs the
// same steps with f64 accumulation and f64 exp; g, u and h are stored as f32 like the engines.
// Fast tier: matvec_q_fast per token.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/expert_blob.h"

namespace moe {

struct SwigluExpertParams {
  int64_t tokens = 1;
  int64_t hidden = 0;  // d
  int64_t inter = 0;   // I
  int bits = 4;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("hidden", hidden), f("inter", inter), f("bits", bits);
  }
};

template <class Acc>
void swiglu_expert_ref(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                       std::span<float> y);
void swiglu_expert_fast(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                        std::span<float> y);

void swiglu_expert_validate(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                            std::span<float> y);
// The weight part of the validation, with the caller's op and expert named in the message
// (moe_permute_fuse validates every routed expert with it).
void swiglu_expert_validate_weights(const SwigluExpertParams& p, const ExpertWeights& e, std::string_view op,
                                    std::string_view what);

// Per-element error bounds of the two tiers against the truth, for every token (derivation in
// spec/swiglu_expert_spec.cpp). Used by this op's check and by moe_permute_fuse's.
struct SwigluExpertBound {
  std::vector<double> exact;  // [T, d] y computed in f64 from f64 intermediates (no f32 rounding)
  std::vector<double> ref32;  // [T, d] bound on |swiglu_expert_ref<float> - swiglu_expert_ref<double>|
  std::vector<double> fast;   // [T, d] bound on |swiglu_expert_fast - swiglu_expert_ref<double>|
};
SwigluExpertBound swiglu_expert_bound(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x);

}  // namespace moe
