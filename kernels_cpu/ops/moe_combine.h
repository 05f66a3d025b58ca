// moe_combine: the end of the MoE block, routed sum + gated shared expert + residual
// (docs/ops/moe.md "MoE block" step 6, "Combine order"; HF Qwen3_5MoeSparseMoeBlock + the decoder's
// residual).
//
// Shape contract:
//   h_mid [T, d] f32   hidden after the attention residual
//   e     [T, K, d]    routed expert outputs, slot k of token t at (t*K + k)*d
//   w     [T, K]       routing weights (slot order = the router's order)
//   sh    [T, d]       shared expert output
//   gamma [T]          shared_expert_gate logit (pre-sigmoid); ignored when !gated (DeepSeek-V3
//                      adds its shared experts ungated): then it may be empty
//   out   [T, d]       may be the same buffer as h_mid or sh (elementwise)
//   out = h_mid + sum_k w_k e_k + sigmoid(gamma) sh     (gated)
//   out = h_mid + sum_k w_k e_k + sh                    (!gated)
// f32 tier order (CPU-C moe_forward): moe = 0, moe = fma(w_k, e_k, moe) for k = 0..K-1,
// sh_g = sh * sigmoid(gamma) with sigmoid = 1 / (1 + expf(-gamma)), out = (h_mid + moe) + sh_g.
// A zero weight still multiplies its e_k, so a NaN expert output reaches out (as in the engines).
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct MoeCombineParams {
  int64_t tokens = 1;
  int64_t dim = 0;  // d
  int64_t k = 0;    // K routed slots per token
  bool gated = true;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("dim", dim), f("k", k), f("gated", gated);
  }
};

template <class Acc>
void moe_combine_ref(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                     std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                     std::span<float> out);
void moe_combine_fast(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                      std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                      std::span<float> out);

void moe_combine_validate(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                          std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                          std::span<float> out);

}  // namespace moe
