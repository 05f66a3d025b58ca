#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/dequant.h"

namespace moe {
namespace {

CheckResult run_case(const std::string& label, const DequantParams& p, uint64_t seed) {
  const QuantStorage W = random_quant(Rng(seed).fork(1), p.rows, p.cols, p.bits, p.group_size);
  std::vector<float> truth(p.rows * p.cols), r32(truth.size()), fast(truth.size());

  CheckResult res{"dequant", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { dequant_ref<double>(p, W.view(), truth); });
  res.ref32.seconds = time_call([&] { dequant_ref<float>(p, W.view(), r32); });
  res.fast.seconds = time_call([&] { dequant_fast(p, W.view(), fast); });

  // Bound 0 (bit-exact): q*s is exact in f32 (q < 2^8 times an 8-bit bf16 significand fits in
  // 24 bits), so every tier performs exactly one rounding, of the same exact value q*s + b:
  // the f32 tier in its fma, the fast tier in its fma, the truth when its f64 sum of two f32
  // values is rounded to f32 (correctly rounded since 53 >= 2*24 + 2).
  res.ref32.add("y", truth, r32, 0.0);
  res.fast.add("y", truth, fast, 0.0);
  return res;
}

}  // namespace

std::vector<CheckResult> dequant_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    // Row counts off every power of two; one group, a few groups, and 65 groups per row; every
    // bit width; group sizes 32/64/128.
    uint64_t k = 0;
    for (int bits : {2, 4, 8})
      for (int64_t rows : {1, 31, 33, 67})
        for (int64_t cols : {64, 192, 4160}) {
          const std::string label = "remainder " + std::to_string(rows) + "x" + std::to_string(cols);
          out.push_back(run_case(label, {rows, cols, bits, 64}, seed + ++k));
        }
    for (int gs : {32, 128}) out.push_back(run_case("remainder group " + std::to_string(gs), {33, 1024, 4, gs}, seed + ++k));
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B embedding row", {1, 4096, 4, 64}, seed));
    out.push_back(run_case("A17B expert gate/up", {1024, 4096, 4, 64}, seed + 1));
    out.push_back(run_case("A17B expert down", {4096, 1024, 4, 64}, seed + 2));
    out.push_back(run_case("A17B expert gate 2-bit", {1024, 4096, 2, 64}, seed + 3));
    out.push_back(run_case("A3B embedding row", {1, 2048, 4, 64}, seed + 4));
    out.push_back(run_case("A3B expert gate/up", {512, 2048, 4, 64}, seed + 5));
    out.push_back(run_case("A3B mlp.gate 8-bit", {256, 2048, 8, 64}, seed + 6));
    out.push_back(run_case("A3B shared_expert_gate 8-bit", {1, 2048, 8, 64}, seed + 7));
  }
  return out;
}

}  // namespace moe
