// Exactly computable quantized cases (matvec_q, matmul_q): drawn and derived in
// kernels_cpu/spec/quant_dot_spec.h (exact_quant_weights, exact_quant_inputs).
#pragma once
#include "spec/quant_dot_spec.h"

namespace moe::compare {

using moe::exact_quant_inputs;
using moe::exact_quant_weights;
using moe::kExactCols;

}  // namespace moe::compare
