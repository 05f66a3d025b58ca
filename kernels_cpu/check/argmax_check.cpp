#include <cmath>
#include <limits>
#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "ops/argmax.h"

namespace moe {
namespace {

enum class Data { Logits, Ties, NanRows };

// Logits: N(0, 3) (a greedy head's spread). Ties: values on the grid {-4, ..., 4}, so the
// maximum is repeated in almost every row and only the first occurrence is right. NanRows:
// logits with a NaN planted in every other row (and a second, later NaN in some).
std::vector<float> make_input(const ArgmaxParams& p, Data d, Rng rng) {
  std::vector<float> x = rng.fork(1).normal_vec(p.rows * p.n, 3.0);
  if (d == Data::Ties) {
    for (auto& v : x) v = std::round(std::fmax(-4.0f, std::fmin(4.0f, v)));
  }
  if (d == Data::NanRows) {
    Rng pick = rng.fork(2);
    for (int64_t r = 0; r < p.rows; r += 2) {
      float* row = x.data() + r * p.n;
      row[pick.below(p.n)] = std::numeric_limits<float>::quiet_NaN();
      if (r % 4 == 0) row[p.n - 1] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  return x;
}

CheckResult run_case(const std::string& label, const ArgmaxParams& p, Data d, uint64_t seed) {
  const std::vector<float> x = make_input(p, d, Rng(seed));
  std::vector<int32_t> truth(p.rows), r32(p.rows), fast(p.rows);
  CheckResult res{"argmax", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { argmax_ref<double>(p, x, truth); });
  res.ref32.seconds = time_call([&] { argmax_ref<float>(p, x, r32); });
  res.fast.seconds = time_call([&] { argmax_fast(p, x, fast); });
  // Comparisons only, no arithmetic: every tier must return the very same index.
  res.ref32.add_exact("idx", truth, r32);
  res.fast.add_exact("idx", truth, fast);
  return res;
}

}  // namespace

std::vector<CheckResult> argmax_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t n : {1, 2, 31, 33, 67, 4099}) {
      const std::string label = "remainder n " + std::to_string(n);
      out.push_back(run_case(label, {5, n}, Data::Logits, seed + n));
      out.push_back(run_case(label + " ties", {5, n}, Data::Ties, seed + n + 1));
      out.push_back(run_case(label + " NaN", {5, n}, Data::NanRows, seed + n + 2));
    }
  }
  if (scope_has_real(scope)) {
    // Vocabulary 248320 (Qwen3.5-397B-A17B and Qwen3.6-35B-A3B, docs/ops/models.md "Shape constants").
    out.push_back(run_case("greedy token, vocab 248320", {1, 248320}, Data::Logits, seed));
    out.push_back(run_case("4 tokens, vocab 248320, ties", {4, 248320}, Data::Ties, seed + 1));
    out.push_back(run_case("4 tokens, vocab 248320, NaN", {4, 248320}, Data::NanRows, seed + 2));
    // Cogito-V2 (DeepSeek-V3) vocabulary.
    out.push_back(run_case("greedy token, vocab 128815", {1, 128815}, Data::Logits, seed + 3));
  }
  return out;
}

}  // namespace moe
