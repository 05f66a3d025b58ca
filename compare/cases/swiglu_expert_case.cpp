#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/expert_blob.h"
#include "core/rng.h"
#include "ops/swiglu_expert.h"

namespace moe::compare {

namespace {

// ---- swiglu_expert, the whole op: y [T, d] = down . (silu(gate x) * (up x)) per token, run by
// the chain expert_gate_up -> matmul_q (act [T, I] f32 in between, poisoned, not decided: y
// carries every error). Truth: swiglu_expert_ref<double> (f64 sums and silu; g, u and act
// rounded to f32 like the engines, y rounded to f32).
// Bound, against the exact y = Wd h (h exact, act_model), first order in u:
//   GPU:   act_gpu = h + e (|e| <= gpu_h, act_model), then the down matmul of act_gpu in f32, any
//          order (matmul_q_case.cpp): |y_gpu - Wd h| <= |Wd| gpu_h + gamma_{I+1} mag(|h| + gpu_h).
//   Truth: |y_T - Wd h| <= |Wd| ref32_h + gamma64_{I+1} mag(|h| + ref32_h) + u |y_T|.
// |Wd| v <= mag(v) (|q s + b| <= |q s| + |b|) and mag is linear in a non-negative v, so one pass
// over down with v = (1 + gamma) gpu_h + ref32_h + gamma |h| + gamma64 (|h| + ref32_h) gives
// both; plus (I + 2) 2^-126 for flushed subnormal products and sums.
OpCase swiglu_expert_case(const std::string& label, int64_t T, int64_t d, int64_t I, int bits, uint64_t seed) {
  SwigluExpertParams p;
  p.tokens = T, p.hidden = d, p.inter = I, p.bits = bits;
  Rng rng(seed);
  const ExpertStorage e = random_expert(rng.fork(1), d, I, bits);
  const std::vector<float> x = rng.fork(2).activations(T * d);
  return swiglu_expert_instance(label, seed, p, e.view(), x);
}

}  // namespace

OpCase swiglu_expert_instance(const std::string& label, uint64_t seed, const SwigluExpertParams& p,
                              const ExpertWeights& e, std::span<const float> x) {
  const int64_t T = p.tokens, d = p.hidden, I = p.inter;
  MOE_CHECK(e.gate.group_size == kExpertGroupSize && e.up.group_size == kExpertGroupSize &&
                e.down.group_size == kExpertGroupSize,
            "swiglu_expert: expert matrices with group size " << e.gate.group_size << ", the kernels take "
                                                             << kExpertGroupSize);
  OpCase c = new_case("swiglu_expert", label, seed);
  set_vars(c, p);
  c.vars["group_size"] = kExpertGroupSize;  // the chain's matmul_q stage reads it
  c.params += " group_size=" + std::to_string(kExpertGroupSize);
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
  std::vector<double> xd(static_cast<size_t>(d)), yx(static_cast<size_t>(d)), mag(static_cast<size_t>(d));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < d; ++k) xd[size_t(k)] = x[size_t(t * d + k)];
    const ActModel m = act_model(e.gate, e.up, xd.data());
    const std::vector<double> v = m.down_input_bound();
    quant_rows(e.down, v.data(), yx.data(), mag.data());
    for (int64_t r = 0; r < d; ++r) {
      const size_t j = size_t(t * d + r);
      s.bound[j] = mag[size_t(r)] + kU32 * std::fabs(double(y[j])) + double(I + 2) * kMinNormal32;
    }
  }
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  c.flops = 6.0 * double(T) * double(I) * double(d);
  return c;
}

std::vector<OpCase> swiglu_expert_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  auto add = [&](const std::string& label, int64_t T, int64_t d, int64_t I, int bits, uint64_t s) {
    out.push_back(swiglu_expert_case(label + " T " + std::to_string(T) + " d " + std::to_string(d) + " I " +
                                         std::to_string(I) + " " + std::to_string(bits) + "-bit",
                                     T, d, I, bits, s));
  };
  if (rem) {
    // d and I multiples of the group (64), T around the kernels' 8-token tiles.
    add("remainder", 1, 64, 64, 4, seed + 1);
    add("remainder", 2, 192, 128, 4, seed + 2);
    add("remainder", 7, 64, 320, 4, seed + 3);
    add("remainder", 16, 128, 192, 4, seed + 4);
    add("remainder partial tile", 67, 64, 64, 4, seed + 5);
    // Other widths, for engines' kernels (the bundled chain's matmul_q4 skips them).
    add("remainder", 3, 128, 192, 8, seed + 6);
    add("remainder", 3, 128, 192, 2, seed + 7);
    // Past the 8192-float staging of x (gate/up's cols = d) and of act (down's cols = I), one
    // token (decode).
    add("remainder", 1, 8256, 64, 4, seed + 8);
    add("remainder", 1, 128, 8256, 4, seed + 9);
  }
  if (real) {
    // Routed and shared experts share their shapes (docs/ops/verification.md "Shapes to cover"): A17B d 4096
    // I 1024, A3B d 2048 I 512.
    add("A17B expert", 1, 4096, 1024, 4, seed + 20);
    add("A17B expert", 16, 4096, 1024, 4, seed + 21);
    add("A3B expert", 1, 2048, 512, 4, seed + 22);
    add("A3B expert", 16, 2048, 512, 4, seed + 23);
  }
  return out;
}

}  // namespace moe::compare
