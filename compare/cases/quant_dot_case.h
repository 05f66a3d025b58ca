// The GPU case of a quantized dot product (matvec_q, matmul_q): W, x and y [tokens, rows], y
// bound by spec/quant_dot_spec.h under the device's precision model (0 for the exact inputs);
// `truth(y)` fills the truth from the op's f64 reference.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "spec/quant_dot_spec.h"

namespace moe::compare {

template <class Params, class Truth>
OpCase quant_dot_case(const char* op, const std::string& label, uint64_t seed, const Params& p, const QuantMatrix& W,
                      std::span<const float> x, bool exact, Truth truth) {
  OpCase c = new_case(op, label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(int64_t(x.size()) / W.cols * W.rows));
  truth(std::span<float>(y));
  add_quant_tensors(c, "W", W);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(int64_t(y.size()));
  set_reduction_output(c, "y", widen(y),
                       exact ? std::vector<double>(y.size(), 0.0) : quant_dot_bound(W, x, y, device_model()));
  return c;
}

}  // namespace moe::compare
