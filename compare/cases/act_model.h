// The expert's act = silu(gate x) * (up x), exact over the quantized weights, with its error
// bounds: shared by the cases of expert_gate_up, swiglu_expert and moe_permute_fuse (and its
// stages). Defined in expert_gate_up_case.cpp, where the bounds are derived.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "compare/cases/cases.h"
#include "core/quant.h"
#include "ops/swiglu_expert.h"

namespace moe::compare {

struct ActModel {
  // Per element of act: the exact value (f64), and |error| bounds of a GPU kernel (f32 sums,
  // Vulkan silu), of the engines' f32 order and of the f64 truth.
  std::vector<double> h, gpu, ref32, ref64;
  // act itself as expert_gate_up decides it: the GPU's error and the truth's, plus the smallest
  // normal (a flushed subnormal act).
  double act_bound(size_t i) const;
  // The down projection's input bound per element, v in |y error| <= sum_i |Wd_i| v_i (the
  // derivation is in swiglu_expert_case.cpp): the GPU's act error and the f32 rounding of act,
  // carried through a down matmul of I = h.size() terms.
  std::vector<double> down_input_bound() const;
};

ActModel act_model(const QuantMatrix& gate, const QuantMatrix& up, const double* x);
// The same over an f32 row of x.
ActModel act_model(const QuantMatrix& gate, const QuantMatrix& up, std::span<const float> x);

// act [rows, I] as expert_gate_up decides it, one ActModel per row: the tensor, the truth h and
// the bound act_bound per element, the flops of the row's two d-term projections.
// expert_gate_up_case.cpp.
void add_act_output(OpCase& c, std::span<const ActModel> rows, int64_t d);

// Per row of m: the exact m . v and sum |m| |v| (either nullptr: not wanted). matmul_q_case.cpp.
void quant_rows(const QuantMatrix& m, const double* v, double* exact, double* mag);

// An expert stage's variables: swiglu_expert's plus group_size (kExpertGroupSize), the names the
// swiglu_expert chain hands its stages. expert_gate_up_case.cpp.
void set_expert_vars(OpCase& c, const SwigluExpertParams& p);

}  // namespace moe::compare
