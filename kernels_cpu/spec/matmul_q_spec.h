// matmul_q's spec: its shapes, its seeded inputs and its error bound (those of
// spec/quant_dot_spec.h), read by the CPU three-way check (kernels_cpu/check/matmul_q_check.cpp),
// the GPU cases (compare/cases/matmul_q_case.cpp, also for mutate) and, through the GPU backend,
// bisect. The op itself: kernels_cpu/ops/matmul_q.h.
#pragma once
#include <vector>

#include "ops/matmul_q.h"
#include "spec/quant_dot_spec.h"
#include "spec/shape.h"

namespace moe {

using MatmulQShape = SpecShape<MatmulQParams, QuantDotVariant>;

// Remainders: tokens around the kernels' 8-token tiles (1, 2, 7, 9, 16, 19, 64, 67), rows around
// the rows per workgroup and past the bundled kernels' thresholds, cols of 1 to 5 groups and past
// the 8192 and 16384 floats engines stage x in, every bit width, group sizes 32 and 128, and the
// exact inputs. Real: every projection of both models at decode (real_projections) and prefill
// chunks; on the CPU, the tensor catalog's shapes at prefill token counts on row windows.
std::vector<MatmulQShape> matmul_q_shapes(bool remainders, bool real);

}  // namespace moe
