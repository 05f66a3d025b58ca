#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/conventions.h"
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

// The cases with a kernel's conventions set on every shape (compare/cases/conventions.h).
std::vector<OpCase> qk_norm_conv_cases(bool rem, bool real, uint64_t seed, const Conventions& conv) {
  std::vector<OpCase> out;
  for (const auto& s : qk_norm_shapes(rem, real)) {
    if (s.variant) continue;  // CPU only
    const QkNormParams p = with_conventions(s.p, conv);
    const QkNormInputs in = qk_norm_inputs(p, seed + s.seed_offset);
    out.push_back(qk_norm_instance(s.label, seed + s.seed_offset, p, in.q, in.k));
  }
  return out;
}

std::vector<OpCase> qk_norm_cases(bool rem, bool real, uint64_t seed) { return qk_norm_conv_cases(rem, real, seed, {}); }

}  // namespace moe::compare
