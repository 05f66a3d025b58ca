#include "compare/cases/case_util.h"
#include "ops/dequant.h"
#include "spec/dequant_spec.h"

namespace moe::compare {

// dequant's GPU cases: the shapes and inputs of spec/dequant_spec.h, decided Kind::Exact (the
// identical float, derived there); truth dequant_ref<double>.
std::vector<OpCase> dequant_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const DequantShape& s : dequant_shapes(rem, real)) {
    if (!s.variant.gpu) continue;
    const QuantStorage W = dequant_inputs(s.p, seed + s.seed_offset);
    OpCase c = new_case("dequant", s.label, seed + s.seed_offset);
    set_vars(c, s.p);
    std::vector<float> y(static_cast<size_t>(s.p.rows * s.p.cols));
    dequant_ref<double>(s.p, W.view(), y);
    add_quant_tensors(c, "W", W);
    c.tensors["y"] = output_f32(s.p.rows * s.p.cols);
    set_exact_output(c, "y", y);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace moe::compare
