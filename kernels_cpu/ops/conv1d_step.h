// conv1d_step: causal depthwise conv1d + SiLU over T tokens, carrying the last K-1 raw inputs
// (docs/ops/linear-attention.md "Conv1d step"; HF causal_conv1d_update / torch_causal_conv1d_update).
//
// Shape contract (C = channels = 2*Hk*dk + Hv*dv, K = kernel, 4 in every Qwen model):
//   x     [T, C] f32, row-major       raw in_proj_qkv outputs, one row per token
//   w     [C, K] f32, flat c*K + j    depthwise taps (bf16 in checkpoints, widened exactly);
//                                     tap K-1 multiplies the current token (cross-correlation)
//   state [K-1, C] f32, in/out        raw inputs of the last K-1 tokens, slot 0 = oldest,
//                                     slot K-2 = newest; zero at sequence start
//   y     [T, C] f32                  may be the same buffer as x; x and y must not overlap state,
//                                     nor y w (checked)
// Per token t and channel c:
//   acc = sum_{j<K-1} state[j][c] * w[c][j] + x[t][c] * w[c][K-1],   y[t][c] = silu(acc)
//   then state[j] <- state[j+1] (j < K-2), state[K-2] <- x[t]     (exact data movement)
// silu is the division form acc / (1 + exp(-acc)) of every engine (docs/ops/README.md "Scalar helpers").
// f32 tier order (CPU-R, bit-exact with it): acc = fma(S0, w0, 0) -> fma(S1, w1, .) ->
// fma(S2, w2, .) -> fma(x, w3, .); silu in f32 with expf. A T-token call equals T one-token
// calls bit-for-bit in every tier (the state is raw inputs, no rounding is carried).
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct Conv1dStepParams {
  int64_t tokens = 1;
  int64_t channels = 0;
  int64_t kernel = 4;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("channels", channels), f("kernel", kernel);
  }
};

template <class Acc>
void conv1d_step_ref(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                     std::span<float> state, std::span<float> y);
void conv1d_step_fast(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                      std::span<float> state, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void conv1d_step_validate(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                          std::span<float> state, std::span<float> y);

}  // namespace moe
