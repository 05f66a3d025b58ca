// glu: y = act(gate) * up elementwise, the gated linear unit of an MLP or expert applied
// standalone (docs/ops/activations.md "GLU"; HF Qwen3 MLP act_fn(gate_proj(x)) * up_proj(x)).
//
// Shape contract:
//   gate, up  [rows, n] f32   the two projections' outputs (one-tensor engine layouts, gate and
//                             up as the two halves of one row, are manifest views of these)
//   y         [rows, n] f32   may be the same buffer as gate or as up; any other overlap is an error
// act: 0 SiLU    y = gate / (1 + exp(-gate)) * up                                  ("SwiGLU")
//      1 GELU, tanh approximation: y = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * up
//                                  (HF "gelu_pytorch_tanh", ggml's geglu)
//      2 GELU, erf: y = 0.5 g (1 + erf(g / sqrt 2)) * up                            (HF "gelu")
// The f32 tier's order (ggml's Vulkan glu forms): SiLU as above; tanh GELU with
// v = c g (1 + k g g) (c = sqrt(2/pi), k = 0.044715 as f32 constants) and
// 1 + tanh(v) = 2 - 2 / (exp(2 v) + 1); erf GELU with x = g * (1/sqrt 2)_f32 and erff. The truth
// takes the cancellation-free forms 1 + tanh(v) = 2 / (1 + exp(-2 v)) and 1 + erf(x) = erfc(-x)
// in f64 (docs/ops/activations.md "GLU" says why). NaN in gate or up reaches y; infinities follow
// the formulas: act(-inf) is NaN for every act (-inf / inf, or -inf * 0).
#pragma once
#include <cstdint>
#include <span>

namespace moe {

enum class GluAct : int64_t { Silu = 0, GeluTanh = 1, GeluErf = 2 };

struct GluParams {
  int64_t rows = 1;
  int64_t n = 0;
  int64_t act = 0;  // GluAct
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("n", n), f("act", act);
  }
};

template <class Acc>
void glu_ref(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y);
void glu_fast(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void glu_validate(const GluParams& p, std::span<const float> gate, std::span<const float> up,
                  std::span<const float> y);

// The f32 constants of the engines' GELU forms.
inline constexpr float kGeluTanhC = 0.7978845608028654f;  // sqrt(2/pi)
inline constexpr float kGeluTanhK = 0.044715f;
inline constexpr float kInvSqrt2 = 0.7071067811865476f;

}  // namespace moe
