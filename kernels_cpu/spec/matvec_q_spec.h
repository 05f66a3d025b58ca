// matvec_q's spec: its shapes, its seeded inputs and its error bound (those of
// spec/quant_dot_spec.h at one token), read by the CPU three-way check
// (kernels_cpu/check/matvec_q_check.cpp), the GPU cases (compare/cases/matvec_q_case.cpp, also for
// mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/matvec_q.h.
#pragma once
#include <vector>

#include "ops/matvec_q.h"
#include "spec/quant_dot_spec.h"
#include "spec/shape.h"

namespace moe {

using MatvecQShape = SpecShape<MatvecQParams, QuantDotVariant>;

// Remainders: rows around the kernels' 4-row workgroups and the fast tier's 4-row blocks, cols of
// 1 to 5 groups and a 4096-wide row plus one group, every bit width, group sizes 32, 128 and 256,
// past the 8192 and 16384 floats engines stage x in, row counts past the bundled kernels' rows
// per workgroup, and the exact inputs. Real: every projection of both models (real_projections)
// and, on the CPU, the tensor catalog's shapes with an lm_head block.
std::vector<MatvecQShape> matvec_q_shapes(bool remainders, bool real);

inline QuantDotInputs matvec_q_inputs(const MatvecQParams& p, uint64_t seed, bool exact) {
  return quant_dot_inputs(MatmulQParams{p, 1}, seed, exact);
}

}  // namespace moe
