#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/dequant_ggml.h"
#include "spec/dequant_ggml_spec.h"

namespace moe::compare {

OpCase dequant_ggml_instance(const std::string& label, uint64_t seed, const DequantGgmlParams& p,
                             const BlockMatrix& W) {
  OpCase c = new_case("dequant_ggml", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.rows * p.cols));
  dequant_ggml_ref<double>(p, W, y);
  c.tensors["W"] = block_tensor({W.data, W.bytes()});
  c.tensors["y"] = output_f32(p.rows * p.cols);
  // Bound 0 on the value, not the bits: the exact value 0 may come as -0 (spec/dequant_ggml_spec.h).
  set_reduction_output(c, "y", widen(y), std::vector<double>(y.size(), 0.0));
  return c;
}

// dequant_ggml's GPU cases: the shapes and inputs of spec/dequant_ggml_spec.h, each value equal to
// the truth's (bound 0; derived there); truth dequant_ggml_ref<double>. W as its GGUF bytes in u32
// words (block_tensor).
std::vector<OpCase> dequant_ggml_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const DequantGgmlShape& s : dequant_ggml_shapes(rem, real)) {
    const std::vector<uint8_t> bytes = dequant_ggml_inputs(s.p, seed + s.seed_offset);
    out.push_back(dequant_ggml_instance(s.label, seed + s.seed_offset, s.p,
                                        BlockMatrix{uint32_t(s.p.type), bytes.data(), s.p.rows, s.p.cols}));
  }
  return out;
}

}  // namespace moe::compare
