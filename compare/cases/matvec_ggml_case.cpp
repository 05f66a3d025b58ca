#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/matvec_ggml.h"
#include "spec/matvec_ggml_spec.h"

namespace moe::compare {

// matvec_ggml's GPU cases: the shapes, inputs and bound of spec/matvec_ggml_spec.h under the
// device's precision model (0 for the exact inputs); truth matvec_ggml_ref<double>. W is uploaded
// as its GGUF bytes in u32 words (block_tensor).
OpCase matvec_ggml_instance(const std::string& label, uint64_t seed, const MatvecGgmlParams& p, const BlockMatrix& W,
                            std::span<const float> x, bool exact) {
  OpCase c = new_case("matvec_ggml", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.tokens * p.rows));
  matvec_ggml_ref<double>(p, W, x, y);
  c.tensors["W"] = block_tensor({W.data, W.bytes()});
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(int64_t(y.size()));
  set_reduction_output(c, "y", widen(y),
                       exact ? std::vector<double>(y.size(), 0.0) : matvec_ggml_bound(p, W, x, y, device_model()));
  c.flops = 2.0 * double(p.tokens * p.rows * p.cols);
  return c;
}

std::vector<OpCase> matvec_ggml_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(matvec_ggml_shapes(rem, real), [&](const MatvecGgmlShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    const MatvecGgmlInputs in = matvec_ggml_inputs(s.p, seed + s.seed_offset, s.variant.exact);
    return matvec_ggml_instance(s.label, seed + s.seed_offset, s.p, in.view(s.p), in.x, s.variant.exact);
  });
}

}  // namespace moe::compare
