// swiglu_expert's spec: its shapes and seeded inputs, and those of its GPU stage expert_gate_up
// (act = silu(gate x) * (up x)), read by the CPU three-way check
// (kernels_cpu/check/swiglu_expert_check.cpp) and the GPU cases (compare/cases/swiglu_expert_case.cpp,
// compare/cases/expert_gate_up_case.cpp, also for mutate). The error bounds: the CPU tiers'
// swiglu_expert_bound (ops/swiglu_expert.h, derived in swiglu_expert_spec.cpp), the GPU's act_model
// (compare/cases/act_model.h). The op itself: kernels_cpu/ops/swiglu_expert.h.
#pragma once
#include <string>
#include <vector>

#include "core/expert_blob.h"
#include "ops/swiglu_expert.h"
#include "spec/shape.h"

namespace moe {

// A random expert as random_expert draws it (Rng fork 1: gate, up, down); x [T, d] activations
// with outlier channels (fork 2).
struct SwigluExpertInputs {
  ExpertStorage e;
  std::vector<float> x;
};
SwigluExpertInputs swiglu_expert_inputs(const SwigluExpertParams& p, uint64_t seed);

struct SwigluExpertVariant {
  bool via_blob = false;  // the CPU check reads the expert from one packed blob, as engines do
  bool cpu = true;        // false: a GPU shape too slow for the CPU's f64 truth (16 tokens of A17B)
  bool gpu = true;        // false: a CPU check shape the GPU cases cover under other labels
};
using SwigluExpertShape = SpecShape<SwigluExpertParams, SwigluExpertVariant>;
// Remainders: d and I multiples of the group (64), T around the kernels' 8-token tiles, every bit
// width, odd group counts, past the 8192-float staging of x and of act. Real: the A17B and A3B
// experts (routed and shared share their shapes), decode and 16-token prefill, from a blob.
std::vector<SwigluExpertShape> swiglu_expert_shapes(bool remainders, bool real);

// "remainder T 7 d 64 I 320 4-bit": the GPU cases' labels, of both ops.
std::string expert_label(const std::string& what, const SwigluExpertParams& p);

// expert_gate_up, GPU only: gate and up as random_quant draws them (forks 1, 2), x activations
// times x_scale (fork 3; x_scale > 1 pushes |g| past exp's overflow, the silu edge).
struct ExpertGateUpInputs {
  QuantStorage gate, up;
  std::vector<float> x;
};
ExpertGateUpInputs expert_gate_up_inputs(const SwigluExpertParams& p, uint64_t seed, float x_scale);
// Remainders: I around the rows per workgroup, T around the 8-token tiles, d of 1 to 65 groups and
// past the 8192 and 16384 floats engines stage x in, every bit width, |g| past exp's overflow.
// Real: the A17B and A3B experts, decode and 16 tokens, 4-bit and requantised 2-bit.
std::vector<SpecShape<SwigluExpertParams, float>> expert_gate_up_shapes(bool remainders, bool real);

}  // namespace moe
