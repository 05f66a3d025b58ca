#include <cstring>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/matvec_ggml.h"
#include "spec/matvec_ggml_spec.h"

namespace moe::compare {

// matvec_ggml's GPU cases: the shapes, inputs and bound of spec/matvec_ggml_spec.h under the
// device's precision model (0 for the exact inputs); truth matvec_ggml_ref<double>. W is uploaded
// as its GGUF bytes, packed little-endian into u32 words (the last word zero-padded): a kernel
// binds it as its own block structs.
namespace {

HostTensor block_tensor(std::span<const uint8_t> bytes) {
  HostTensor t;
  t.type = ElemType::U32;
  t.words.assign((bytes.size() + 3) / 4, 0u);
  std::memcpy(t.words.data(), bytes.data(), bytes.size());
  t.elems = int64_t(t.words.size());
  return t;
}

OpCase matvec_ggml_case(const MatvecGgmlShape& s, uint64_t seed) {
  const MatvecGgmlParams& p = s.p;
  const MatvecGgmlInputs in = matvec_ggml_inputs(p, seed, s.variant.exact);
  const BlockMatrix W = in.view(p);
  OpCase c = new_case("matvec_ggml", s.label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.tokens * p.rows));
  matvec_ggml_ref<double>(p, W, in.x, y);
  c.tensors["W"] = block_tensor(in.W);
  c.tensors["x"] = f32_tensor(in.x);
  c.tensors["y"] = output_f32(int64_t(y.size()));
  set_reduction_output(c, "y", widen(y),
                       s.variant.exact ? std::vector<double>(y.size(), 0.0)
                                       : matvec_ggml_bound(p, W, in.x, y, device_model()));
  c.flops = 2.0 * double(p.tokens * p.rows * p.cols);
  return c;
}

}  // namespace

std::vector<OpCase> matvec_ggml_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(matvec_ggml_shapes(rem, real), [&](const MatvecGgmlShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    return matvec_ggml_case(s, seed + s.seed_offset);
  });
}

}  // namespace moe::compare
