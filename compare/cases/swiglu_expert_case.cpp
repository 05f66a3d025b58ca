#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/expert_blob.h"
#include "ops/swiglu_expert.h"
#include "spec/swiglu_expert_spec.h"

namespace moe::compare {

// ---- swiglu_expert, the whole op: y [T, d] = down . (silu(gate x) * (up x)) per token, run by
// the chain expert_gate_up -> matmul_q (act [T, I] f32 in between, poisoned, not decided: y
// carries every error). Truth: swiglu_expert_ref<double> (f64 sums and silu; g, u and act
// rounded to f32 like the engines, y rounded to f32).
// Bound, against the exact y = Wd h (h exact, act_model), first order in u:
//   GPU:   act_gpu = h + e (|e| <= gpu_h, act_model), then the down matmul of act_gpu in f32, any
//          order (spec/quant_dot_spec.h): |y_gpu - Wd h| <= |Wd| gpu_h + gamma_{I+1} mag(|h| + gpu_h).
//   Truth: |y_T - Wd h| <= |Wd| ref32_h + gamma64_{I+1} mag(|h| + ref32_h) + u |y_T|.
// |Wd| v <= mag(v) (|q s + b| <= |q s| + |b|) and mag is linear in a non-negative v, so one pass
// over down with v = (1 + gamma) gpu_h + ref32_h + gamma |h| + gamma64 (|h| + ref32_h) gives
// both; plus (I + 2) 2^-126 for flushed subnormal products and sums.
OpCase swiglu_expert_instance(const std::string& label, uint64_t seed, const SwigluExpertParams& p,
                              const ExpertWeights& e, std::span<const float> x) {
  const int64_t T = p.tokens, d = p.hidden, I = p.inter;
  MOE_CHECK(e.gate.group_size == kExpertGroupSize && e.up.group_size == kExpertGroupSize &&
                e.down.group_size == kExpertGroupSize,
            "swiglu_expert: expert matrices with group size " << e.gate.group_size << ", the kernels take "
                                                              << kExpertGroupSize);
  OpCase c = new_case("swiglu_expert", label, seed);
  set_expert_vars(c, p);  // group_size: the chain's matmul_q stage reads it
  std::vector<float> y(static_cast<size_t>(T * d));
  swiglu_expert_ref<double>(p, e, x, y);
  add_quant_tensors(c, "gate", e.gate);
  add_quant_tensors(c, "up", e.up);
  add_quant_tensors(c, "down", e.down);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["act"] = output_f32(T * I);
  c.tensors["y"] = output_f32(T * d);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  s.bound.resize(y.size());
  for_blocks(T, 1, [&](int64_t t0, int64_t t1) {  // tokens are independent: each on its own core
    std::vector<double> xd(static_cast<size_t>(d)), yx(static_cast<size_t>(d)), mag(static_cast<size_t>(d));
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t k = 0; k < d; ++k) xd[size_t(k)] = x[size_t(t * d + k)];
      const ActModel m = act_model(e.gate, e.up, xd.data());
      const std::vector<double> v = m.down_input_bound();
      quant_rows(e.down, v.data(), yx.data(), mag.data());
      for (int64_t r = 0; r < d; ++r) {
        const size_t j = size_t(t * d + r);
        s.bound[j] = mag[size_t(r)] + kU32 * std::fabs(double(y[j])) + double(I + 2) * kMinNormal32;
      }
    }
  });
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  c.flops = 6.0 * double(T) * double(I) * double(d);
  return c;
}

// The shapes and inputs of spec/swiglu_expert_spec.h.
std::vector<OpCase> swiglu_expert_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(swiglu_expert_shapes(rem, real), [&](const SwigluExpertShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    const SwigluExpertInputs in = swiglu_expert_inputs(s.p, seed + s.seed_offset);
    return swiglu_expert_instance(s.label, seed + s.seed_offset, s.p, in.e.view(), in.x);
  });
}

}  // namespace moe::compare
