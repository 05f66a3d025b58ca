#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/qk_norm.h"
#include "spec/qk_norm_spec.h"

namespace moe::compare {

// qk_norm's GPU cases: the shapes, inputs and bound of spec/qk_norm_spec.h, under the norms'
// precision model.
OpCase qk_norm_instance(const std::string& label, uint64_t seed, const QkNormParams& p, std::span<const float> q,
                        std::span<const float> k) {
  OpCase c = new_case("qk_norm", label, seed);
  set_vars(c, p);
  std::vector<float> tq(q.size()), tk(k.size());
  qk_norm_ref<double>(p, q, k, tq, tk);
  c.tensors["q"] = f32_tensor(q);
  c.tensors["k"] = f32_tensor(k);
  QkNormBounds b = qk_norm_bound(p, tq, tk, norm_device_model());
  add_reduction_output(c, "q_out", tq, std::move(b.q));
  add_reduction_output(c, "k_out", tk, std::move(b.k));
  return c;
}

std::vector<OpCase> qk_norm_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : qk_norm_shapes(rem, real)) {
    if (s.variant) continue;  // CPU only
    const QkNormInputs in = qk_norm_inputs(s.p, seed + s.seed_offset);
    out.push_back(qk_norm_instance(s.label, seed + s.seed_offset, s.p, in.q, in.k));
  }
  return out;
}

}  // namespace moe::compare
