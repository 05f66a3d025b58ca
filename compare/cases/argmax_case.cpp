#include <string>

#include "compare/cases/case_util.h"
#include "ops/argmax.h"
#include "spec/argmax_spec.h"

namespace moe::compare {

// argmax's GPU cases: the shapes and inputs of spec/argmax_spec.h. Kind indices with rows of 1 and
// NO scores: decide_indices then demands equality. (With the values as scores and bound 0 the
// near-tie rule would accept any index of an exact tie, so returning the last of tied maxima, a
// bug against the contract, would pass.)
std::vector<OpCase> argmax_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& sh : argmax_shapes(rem, real)) {
    const ArgmaxParams& p = sh.p;
    OpCase c = new_case("argmax", sh.label, seed + sh.seed_offset);
    set_vars(c, p);
    const std::vector<float> x = argmax_inputs(p, seed + sh.seed_offset, sh.variant);
    std::vector<int32_t> idx(static_cast<size_t>(p.rows));
    argmax_ref<double>(p, x, idx);
    c.tensors["x"] = f32_tensor(x);
    c.tensors["idx"] = output_i32(p.rows);
    OutputSpec s;
    s.name = "idx", s.kind = Kind::Indices, s.row = 1;
    c.outputs["idx"] = s;
    c.truth["idx"] = std::vector<double>(idx.begin(), idx.end());
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace moe::compare
