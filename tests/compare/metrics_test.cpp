// Comparator self-tests: every criterion is shown to catch the error it exists for, and to stay
// quiet on a correct result (design.md "How a comparison decides"; docs/compare-thresholds.md).
#include "compare/decide/metrics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "test_util.h"

namespace moe::compare {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// Random f32-representable truth in [-1, 1] and its exact copy as found.
struct Data {
  std::vector<double> truth;
  std::vector<float> found;
};
Data random_data(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Data d;
  for (size_t i = 0; i < n; ++i) {
    const float x = dist(rng);
    d.truth.push_back(x);
    d.found.push_back(x);
  }
  return d;
}

OutputSpec reduction(std::vector<double> bound) {
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction, s.bound = std::move(bound);
  return s;
}
OutputSpec elementwise(std::vector<double> budget) {
  OutputSpec s;
  s.name = "y", s.kind = Kind::Elementwise, s.ulp_budget = std::move(budget);
  return s;
}
OutputSpec exact() {
  OutputSpec s;
  s.name = "y", s.kind = Kind::Exact;
  return s;
}

TEST(Metrics, IdenticalPassesAtZeroPercent) {
  const Data d = random_data(257, 1);
  for (const OutputSpec& spec : {reduction({1e-6}), elementwise({1.0}), exact()}) {
    const Verdict v = decide(spec, d.truth, d.found);
    EXPECT_TRUE(v.pass) << kind_name(spec.kind) << ": " << v.reason;
    EXPECT_EQ(v.failed, 0u);
    EXPECT_EQ(v.budget_used, 0.0);
    EXPECT_EQ(v.compared, 257);
    EXPECT_FALSE(v.warn);
  }
  const Verdict r = decide(reduction({1e-6}), d.truth, d.found);
  EXPECT_DOUBLE_EQ(r.cosine, 1.0);
  EXPECT_DOUBLE_EQ(r.norm_ratio, 1.0);
  EXPECT_EQ(r.max_abs_rel, 0.0);
}

TEST(Metrics, UlpOfVulkanDefinition) {
  EXPECT_EQ(ulp_f32(1.5), 0x1.0p-23);
  EXPECT_EQ(ulp_f32(1.0), 0x1.0p-24);   // at a power of two: the smaller gap, below
  EXPECT_EQ(ulp_f32(-1.0), 0x1.0p-24);
  EXPECT_EQ(ulp_f32(0x1.0p-126), 0x1.0p-149);  // smallest normal: both gaps are the subnormal one
  EXPECT_EQ(ulp_f32(1e-40), 0x1.0p-149);
  EXPECT_EQ(ulp_f32(0.0), 0x1.0p-149);
  EXPECT_EQ(ulp_f32(FLT_MAX), 0x1.0p104);
  EXPECT_EQ(ulp_f32(1e39), 0x1.0p104);
  EXPECT_TRUE(std::isnan(ulp_f32(kInf)));
}

TEST(Metrics, OneUlpNudgeIsOneUlp) {
  const float x = 1.75f;
  const float up = std::nextafter(x, 2.0f);
  EXPECT_EQ(ulp_distance(up, x), 1.0);
  EXPECT_EQ(ulp_error(up, x), 1.0);
  EXPECT_EQ(ulp_distance(std::nextafter(0.0f, 1.0f), -0.0), 1.0);  // through zero
  EXPECT_EQ(ulp_distance(-std::nextafter(0.0f, 1.0f), std::nextafter(0.0f, 1.0f)), 2.0);
  EXPECT_EQ(ulp_distance(-0.0f, 0.0), 0.0);
  EXPECT_EQ(ulp_distance(std::nanf(""), 1.0), kInf);

  const std::vector<double> truth = {x, 0.25, -3.0};
  const std::vector<float> found = {up, 0.25f, -3.0f};
  const Verdict v = decide(elementwise({1.0}), truth, found);
  EXPECT_TRUE(v.pass) << v.reason;
  EXPECT_EQ(v.max_ulp, 1.0);
  EXPECT_EQ(v.worst_index, 0);
  EXPECT_TRUE(v.warn);  // 100% of a 1-ULP budget
  const Verdict strict = decide(elementwise({0.5}), truth, found);
  EXPECT_FALSE(strict.pass);
  EXPECT_TRUE(has(strict.reason, "y[0] expected 1.75 found 1.75000012: 1 ULP, 200% of its 0.5 ULP budget"))
      << strict.reason;
}

TEST(Metrics, FractionalUlpBudgetsOfVulkan) {
  // Division: 2.5 ULP of the exact result. Exact 1 + 0.5 ulp; found 1 + 3 ulp is 2.5 away.
  const double t = 1.0 + 0.5 * 0x1.0p-23;
  const std::vector<double> truth = {t};
  const Verdict ok = decide(elementwise({vk_ulp::kDivision}), truth, std::vector<float>{float(1.0 + 3 * 0x1.0p-23)});
  EXPECT_TRUE(ok.pass) << ok.reason;
  EXPECT_DOUBLE_EQ(ok.max_ulp, 2.5);
  const Verdict bad = decide(elementwise({vk_ulp::kDivision}), truth, std::vector<float>{float(1.0 + 4 * 0x1.0p-23)});
  EXPECT_FALSE(bad.pass);
  EXPECT_DOUBLE_EQ(bad.max_ulp, 3.5);

  // exp: 3 + 2|x| ULP, per element. At x = 0.5 (budget 4) three floats up from the rounded
  // value is < 3.5 ULP: passes. exp(0) = 1 is a power of two, where Vulkan's ulp is the gap
  // below (2^-24), so two floats up is 4 ULP: beyond the budget 3 there.
  const std::vector<double> et = {std::exp(0.5), 1.0};
  std::vector<float> ef = {float(et[0]), 1.0f};
  for (int i = 0; i < 3; ++i) ef[0] = std::nextafter(ef[0], 10.0f);
  for (int i = 0; i < 2; ++i) ef[1] = std::nextafter(ef[1], 10.0f);
  EXPECT_LE(ulp_error(ef[0], et[0]), 3.5);
  EXPECT_EQ(ulp_error(ef[1], et[1]), 4.0);
  EXPECT_EQ(vk_ulp::exp(-0.5), 4.0);
  const Verdict ve = decide(elementwise({vk_ulp::exp(0.5), vk_ulp::exp(0.0)}), et, ef);
  EXPECT_FALSE(ve.pass);
  EXPECT_EQ(ve.worst_index, 1) << ve.reason;
  EXPECT_EQ(ve.over_budget, 1);

  // log near 1 is absolute (2^-21) and sin/cos absolute 2^-11, expressed in ULP of the result.
  EXPECT_EQ(vk_ulp::log(1.5, std::log(1.5)), 0x1.0p-21 / ulp_f32(std::log(1.5)));
  EXPECT_EQ(vk_ulp::log(10.0, std::log(10.0)), 3.0);
  EXPECT_EQ(vk_ulp::sincos(1.0, std::sin(1.0)), 0x1.0p-11 / ulp_f32(std::sin(1.0)));
  test::expect_error([] { vk_ulp::sincos(4.0, std::sin(4.0)); }, "outside [-pi, pi]");
}

TEST(Metrics, DenormalFlushAllowedForElementwise) {
  const std::vector<double> truth = {1e-40, 2.0};
  const Verdict v = decide(elementwise({1.0}), truth, std::vector<float>{0.0f, 2.0f});
  EXPECT_TRUE(v.pass) << v.reason;
  // ...but not a wrong non-zero value there.
  const Verdict w = decide(elementwise({1.0}), truth, std::vector<float>{1e-39f, 2.0f});
  EXPECT_FALSE(w.pass);
}

TEST(Metrics, ErrorBeyondBoundFailsWithTheElement) {
  std::vector<double> truth = {0.1, -0.2, 0.3, 0.5, 0.7};
  std::vector<float> found(truth.begin(), truth.end());
  found[3] = 0.5312f;  // 0.0312 off, 312% of a 0.01 bound
  const Verdict v = decide(reduction({0.01}), truth, found);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(v.failed & kElement);
  EXPECT_EQ(v.worst_index, 3);
  EXPECT_EQ(v.over_budget, 1);
  EXPECT_NEAR(v.budget_used, 3.12, 1e-6);
  EXPECT_TRUE(has(v.reason, "y[3] expected 0.5 found 0.531199992: 312% of its bound 0.01 (1 of 5 elements over)"))
      << v.reason;
  // A spike in one element is also beyond the max-abs limit the bounds imply.
  EXPECT_TRUE(v.failed & kMaxAbs) << v.reason;

  // Per-element bounds: the same error passes where its bound is large enough.
  const Verdict w = decide(reduction({0.01, 0.01, 0.01, 0.04, 0.01}), truth, found);
  EXPECT_TRUE(w.pass) << w.reason;
  EXPECT_NEAR(w.budget_used, 0.78, 1e-6);
}

TEST(Metrics, WarnNearTheBudget) {
  const std::vector<double> truth = {1.0, 2.0};
  const Verdict v = decide(reduction({0.001}), truth, std::vector<float>{1.0f, 2.00095f});
  EXPECT_TRUE(v.pass) << v.reason;
  EXPECT_TRUE(v.warn);
  EXPECT_TRUE(has(v.reason, "WARNING")) << v.reason;
}

TEST(Metrics, UniformScaleErrorKeepsCosineButFailsNormRatio) {
  Data d = random_data(4096, 2);
  std::vector<double> bound;
  for (double t : d.truth) bound.push_back(0x1.0p-12 * std::fabs(t) + 1e-30);  // 2.4e-4 relative
  // Control: a correct result passes these bounds.
  ASSERT_TRUE(decide(reduction(bound), d.truth, d.found).pass);
  for (size_t i = 0; i < d.found.size(); ++i) d.found[i] = float(d.truth[i] * (1 + 1e-3));
  const Verdict v = decide(reduction(bound), d.truth, d.found);
  EXPECT_FALSE(v.pass);
  EXPECT_GT(v.cosine, 1 - 1e-12);          // cosine cannot see a scale error...
  EXPECT_FALSE(v.failed & kCosine);
  EXPECT_TRUE(v.failed & kNormRatio);      // ...the norm ratio does
  EXPECT_NEAR(v.norm_ratio, 1.001, 1e-6);
  EXPECT_NEAR(v.norm_ratio_tol, 0x1.0p-12, 1e-9);
  EXPECT_TRUE(has(v.reason, "norm ratio")) << v.reason;
}

TEST(Metrics, DirectionErrorKeepsNormButFailsCosine) {
  // Swapping two outputs (a wrong row index) keeps the norm exactly and turns the direction.
  Data d = random_data(64, 3);
  d.truth[5] = 0.9f, d.truth[6] = -0.8f;
  d.found[5] = -0.8f, d.found[6] = 0.9f;
  std::vector<double> bound(d.truth.size(), 0.01);
  const Verdict v = decide(reduction(bound), d.truth, d.found);
  EXPECT_FALSE(v.pass);
  EXPECT_DOUBLE_EQ(v.norm_ratio, 1.0);
  EXPECT_FALSE(v.failed & kNormRatio);
  EXPECT_TRUE(v.failed & kCosine) << v.reason;
  EXPECT_LT(v.cosine, v.cosine_min);
}

TEST(Metrics, CosineResolvesAnglesAtRoundingScale) {
  // Two nearly equal outputs swapped: an angle of ~1e-6 rad, where cos = 1 - 5e-13 is lost in
  // the rounding of tf / (|t| |f|) plus its slack. The chord measure still sees it against
  // bounds of one f32 rounding (beta ~ 6e-8).
  Data d = random_data(1000, 4);
  d.truth[5] = 0.5f, d.truth[6] = 0.50001f;
  d.found[5] = 0.50001f, d.found[6] = 0.5f;
  std::vector<double> bound;
  for (double t : d.truth) bound.push_back(0x1.0p-24 * std::fabs(t) + 1e-30);
  const Verdict v = decide(reduction(bound), d.truth, d.found);
  EXPECT_TRUE(v.failed & kCosine) << v.reason;
  EXPECT_LT(v.cosine, 1.0);
  EXPECT_FALSE(v.failed & kNormRatio) << v.reason;
}

TEST(Metrics, ImpliedThresholdsNeverFailAResultWithinItsBounds) {
  // Every element pushed to exactly its bound, all in the direction that moves the aggregates
  // most: the aggregate checks, derived from the bounds, must still pass.
  for (uint32_t seed = 0; seed < 20; ++seed) {
    Data d = random_data(1000, 100 + seed);
    std::vector<double> bound;
    std::vector<double> truth;
    for (size_t i = 0; i < d.found.size(); ++i) {
      const double b = 0x1.0p-10 * (1 + (i % 7));
      bound.push_back(b);
      const double t = double(d.found[i]) - (seed % 2 ? b : -b) * (i % 3 == 0 ? 1 : 0.999);
      truth.push_back(t);
    }
    const Verdict v = decide(reduction(bound), truth, d.found);
    EXPECT_TRUE(v.pass) << "seed " << seed << ": " << v.reason;
  }
}

TEST(Metrics, RandomErrorsWithinBudgetNeverFail) {
  // Zero false alarms: random errors anywhere inside the budgets, over many seeds.
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> unit(-0.999, 0.999);
  std::uniform_real_distribution<float> mag(1.1f, 1.9f);  // no powers of two: one gap per ULP
  std::uniform_int_distribution<int> steps(-2, 2);
  for (int seed = 0; seed < 200; ++seed) {
    const size_t n = 1 + size_t(seed) * 7;
    std::vector<double> truth(n), bound(n);
    std::vector<float> found(n);
    for (size_t i = 0; i < n; ++i) {
      found[i] = (i % 2 ? -1.0f : 1.0f) * mag(rng);
      bound[i] = 1e-4 * (1 + double(i % 5));
      truth[i] = double(found[i]) - bound[i] * unit(rng);
    }
    const Verdict r = decide(reduction(bound), truth, found);
    ASSERT_TRUE(r.pass) << "seed " << seed << ": " << r.reason;
    for (size_t i = 0; i < n; ++i) {
      truth[i] = found[i];
      for (int k = steps(rng); k != 0; k += k > 0 ? -1 : 1) found[i] = std::nextafter(found[i], k > 0 ? 2.0f : -2.0f);
    }
    const Verdict e = decide(elementwise({2.0}), truth, found);
    ASSERT_TRUE(e.pass) << "seed " << seed << ": " << e.reason;
  }
}

TEST(Metrics, NaNFailsUnlessTheTruthIsNaN) {
  const std::vector<double> truth = {1.0, kNaN, 3.0};
  for (const OutputSpec& spec : {reduction({0.1}), elementwise({3.0}), exact()}) {
    const Verdict ok = decide(spec, truth, std::vector<float>{1.0f, std::nanf(""), 3.0f});
    EXPECT_TRUE(ok.pass) << ok.reason;
    const Verdict nan_found = decide(spec, truth, std::vector<float>{1.0f, std::nanf(""), std::nanf("")});
    EXPECT_FALSE(nan_found.pass);
    EXPECT_EQ(nan_found.nan_found, 1);
    EXPECT_TRUE(has(nan_found.reason, "y[2] expected 3 found nan: NaN where the truth is finite")) << nan_found.reason;
    const Verdict missing = decide(spec, truth, std::vector<float>{1.0f, 2.0f, 3.0f});
    EXPECT_FALSE(missing.pass);
    EXPECT_EQ(missing.nan_missing, 1);
  }
}

TEST(Metrics, InfinityMustMatchInSign) {
  const std::vector<double> truth = {kInf, -kInf, 1.0};
  for (const OutputSpec& spec : {reduction({0.1}), elementwise({3.0}), exact()}) {
    EXPECT_TRUE(decide(spec, truth, std::vector<float>{INFINITY, -INFINITY, 1.0f}).pass);
    const Verdict flipped = decide(spec, truth, std::vector<float>{-INFINITY, -INFINITY, 1.0f});
    EXPECT_FALSE(flipped.pass);
    EXPECT_EQ(flipped.inf_mismatch, 1);
    EXPECT_TRUE(flipped.failed & kSpecial);
    const Verdict spurious = decide(spec, truth, std::vector<float>{INFINITY, -INFINITY, INFINITY});
    EXPECT_FALSE(spurious.pass);
    EXPECT_EQ(spurious.inf_mismatch, 1);
  }
  // Vulkan allows +-FLT_MAX where the exact result overflows; bit-exact data movement does not.
  EXPECT_TRUE(decide(elementwise({3.0}), truth, std::vector<float>{FLT_MAX, -FLT_MAX, 1.0f}).pass);
  EXPECT_FALSE(decide(exact(), truth, std::vector<float>{FLT_MAX, -FLT_MAX, 1.0f}).pass);
  // A truth beyond FLT_MAX may be returned as an infinity of its sign.
  EXPECT_TRUE(decide(elementwise({3.0}), std::vector<double>{1e39}, std::vector<float>{INFINITY}).pass);
  EXPECT_FALSE(decide(elementwise({3.0}), std::vector<double>{1e39}, std::vector<float>{-INFINITY}).pass);
  // ... or as the largest finite value of its sign.
  EXPECT_TRUE(decide(elementwise({3.0}), std::vector<double>{1e39}, std::vector<float>{FLT_MAX}).pass);
  EXPECT_FALSE(decide(elementwise({3.0}), std::vector<double>{1e39}, std::vector<float>{-FLT_MAX}).pass);
  // Where the allowed range stays below FLT_MAX, an infinity is an error.
  EXPECT_FALSE(decide(elementwise({3.0}), std::vector<double>{1e38}, std::vector<float>{INFINITY}).pass);
  EXPECT_FALSE(decide(reduction({1e30}), std::vector<double>{1e38}, std::vector<float>{INFINITY}).pass);
  EXPECT_TRUE(decide(reduction({1e38}), std::vector<double>{3e38}, std::vector<float>{INFINITY}).pass);
}

TEST(Metrics, UnwrittenPoisonFails) {
  const std::vector<double> truth = {1.0, 2.0, 3.0, 4.0};
  const float poison = std::bit_cast<float>(kPoison);
  for (const OutputSpec& spec : {reduction({0.1}), elementwise({3.0}), exact()}) {
    const Verdict v = decide(spec, truth, std::vector<float>{1.0f, 2.0f, poison, poison});
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.unwritten, 2);
    EXPECT_TRUE(v.failed & kUnwritten);
    EXPECT_EQ(v.nan_found, 0);  // a poisoned element is unwritten, not a NaN the kernel made
    EXPECT_TRUE(has(v.reason, "y[2] still holds the poison pattern: never written, or computed from a poisoned value (2 of 4 elements)"))
        << v.reason;
  }
  // Even where the truth is NaN, the poison's payload says the kernel never wrote it.
  EXPECT_FALSE(decide(exact(), std::vector<double>{kNaN}, std::vector<float>{poison}).pass);
  // Another NaN payload is a NaN the kernel wrote.
  const Verdict other = decide(exact(), std::vector<double>{1.0}, std::vector<float>{std::nanf("")});
  EXPECT_EQ(other.unwritten, 0);
  EXPECT_EQ(other.nan_found, 1);
}

TEST(Metrics, ExactCatchesSignOfZero) {
  const std::vector<double> truth = {-0.0, 0.0, 1.5};
  EXPECT_TRUE(decide(exact(), truth, std::vector<float>{-0.0f, 0.0f, 1.5f}).pass);
  const Verdict v = decide(exact(), truth, std::vector<float>{0.0f, 0.0f, 1.5f});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.worst_index, 0);
  EXPECT_TRUE(has(v.reason, "y[0] expected -0 found 0: not bit-equal (0x80000000 vs 0x00000000")) << v.reason;
  // The same values compare equal as numbers: a reduction with a zero bound accepts them.
  EXPECT_TRUE(decide(reduction({0.0}), truth, std::vector<float>{0.0f, 0.0f, 1.5f}).pass);
  // One ULP is one too many for data movement.
  EXPECT_FALSE(decide(exact(), truth, std::vector<float>{-0.0f, 0.0f, std::nextafter(1.5f, 2.0f)}).pass);
  test::expect_error([] { decide(exact(), std::vector<double>{0.1}, std::vector<float>{0.1f}); },
                     "not an f32 value");
}

TEST(Metrics, DecideBits) {
  const OutputSpec spec = exact();
  const std::vector<uint32_t> truth = {1, 2, 0xFFFFFFFFu};
  EXPECT_TRUE(decide_bits(spec, truth, std::vector<uint32_t>{1, 2, 0xFFFFFFFFu}).pass);
  const Verdict v = decide_bits(spec, truth, std::vector<uint32_t>{1, 3, 0xFFFFFFFFu});
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(has(v.reason, "y[1] expected 0x00000002 found 0x00000003")) << v.reason;
  const Verdict u = decide_bits(spec, truth, std::vector<uint32_t>{1, 2, kPoison});
  EXPECT_TRUE(u.failed & kUnwritten);
  test::expect_error([&] { decide_bits(spec, std::vector<uint32_t>{kPoison}, std::vector<uint32_t>{0}); },
                     "equals the poison");
}

TEST(Metrics, BadInputIsAClearError) {
  const std::vector<double> truth = {1.0, 2.0};
  const std::vector<float> found = {1.0f, 2.0f};
  test::expect_error([&] { decide(reduction({0.1}), truth, std::vector<float>{1.0f}); },
                     "output 'y': truth has 2 elements, found 1");
  test::expect_error([&] { decide(reduction({0.1, 0.1, 0.1}), truth, found); }, "3 bound values for 2 elements");
  test::expect_error([&] { decide(reduction({-1.0}), truth, found); }, "bound[0] = -1: must be finite and >= 0");
  test::expect_error([&] { decide(reduction({kNaN}), truth, found); }, "must be finite");
  test::expect_error([&] { decide(reduction({}), truth, found); }, "0 bound values");
  test::expect_error([&] { decide(elementwise({}), truth, found); }, "0 ulp_budget values");
  test::expect_error([&] { decide(reduction({0.1}), std::vector<double>{}, std::vector<float>{}); },
                     "is empty");
  OutputSpec idx;
  idx.name = "idx", idx.kind = Kind::Indices, idx.row = 2;
  test::expect_error([&] { decide(idx, truth, found); }, "use decide_indices");
}

TEST(Metrics, ReasonsAreOneLine) {
  const std::vector<double> truth = {1.0, kNaN, kInf, 4.0};
  const std::vector<float> found = {std::bit_cast<float>(kPoison), 2.0f, -INFINITY, 40.0f};
  for (const OutputSpec& spec : {reduction({0.1}), elementwise({3.0}), exact()}) {
    const Verdict v = decide(spec, truth, found);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.failed & (kUnwritten | kSpecial | kElement), kUnwritten | kSpecial | kElement) << v.reason;
    EXPECT_EQ(v.reason.find('\n'), std::string::npos) << v.reason;
    EXPECT_TRUE(has(v.reason, "; also ")) << v.reason;  // the other failing criteria, in short
  }
}

OutputSpec indices(int64_t k) {
  OutputSpec s;
  s.name = "idx", s.kind = Kind::Indices, s.row = k;
  return s;
}

TEST(Metrics, IndexSetsEqualInAnyOrder) {
  const std::vector<int32_t> truth = {3, 1, 7, 0, 2, 5};
  const Verdict v = decide_indices(indices(3), truth, std::vector<int32_t>{1, 7, 3, 5, 0, 2});
  EXPECT_TRUE(v.pass) << v.reason;
  EXPECT_EQ(v.compared, 2);
  const Verdict w = decide_indices(indices(3), truth, std::vector<int32_t>{1, 7, 4, 0, 2, 5});
  EXPECT_FALSE(w.pass);
  EXPECT_EQ(w.worst_index, 0);
  EXPECT_TRUE(has(w.reason, "idx row 0: expected {1, 3, 7} found {1, 4, 7}: sets differ")) << w.reason;
  // A NaN token's "no expert" row must be matched exactly.
  EXPECT_TRUE(decide_indices(indices(2), std::vector<int32_t>{-1, -1}, std::vector<int32_t>{-1, -1}).pass);
  EXPECT_FALSE(decide_indices(indices(2), std::vector<int32_t>{-1, -1}, std::vector<int32_t>{0, 1}).pass);
  // Unwritten slots.
  const Verdict u = decide_indices(indices(3), truth, std::vector<int32_t>{1, 7, 3, 5, 0, int32_t(kPoison)});
  EXPECT_TRUE(u.failed & kUnwritten) << u.reason;
}

TEST(Metrics, IndexNearTies) {
  // One row, E = 5, K = 2. Scores: expert 1 (0.9) is clear; experts 3 and 4 tie for second place
  // within the bound 1e-6; expert 0 is far below.
  const std::vector<double> scores = {0.1, 0.9, 0.2, 0.5, 0.5 - 1e-7};
  const std::vector<double> bound = {1e-6};
  const std::vector<int32_t> truth = {1, 3};
  // The tied alternative passes, counted as a near-tie.
  const Verdict tie = decide_indices(indices(2), truth, std::vector<int32_t>{4, 1}, scores, bound);
  EXPECT_TRUE(tie.pass) << tie.reason;
  EXPECT_EQ(tie.near_ties, 1);
  // Without the bound, the scores differ: no tie.
  const Verdict strict = decide_indices(indices(2), truth, std::vector<int32_t>{4, 1}, scores, {});
  EXPECT_FALSE(strict.pass);
  // Replacing the clear winner is not a tie, even though 3/4 is one.
  const Verdict wrong = decide_indices(indices(2), truth, std::vector<int32_t>{3, 4}, scores, bound);
  EXPECT_FALSE(wrong.pass);
  EXPECT_TRUE(has(wrong.reason, "idx row 0: expected {1, 3} found {3, 4}: expert 4 (score 0.4999999 +- 1e-06) "
                                "cannot rank above expert 1 (score 0.9 +- 1e-06)"))
      << wrong.reason;
  EXPECT_EQ(wrong.expected, 1);
  EXPECT_EQ(wrong.found, 4);
  // A non-tied expert in place of the tied one fails.
  EXPECT_FALSE(decide_indices(indices(2), truth, std::vector<int32_t>{1, 2}, scores, bound).pass);
  // Duplicates and out-of-range experts are never a tie.
  EXPECT_FALSE(decide_indices(indices(2), truth, std::vector<int32_t>{1, 1}, scores, bound).pass);
  const Verdict range = decide_indices(indices(2), truth, std::vector<int32_t>{1, 5}, scores, bound);
  EXPECT_TRUE(has(range.reason, "not 2 distinct experts in [0, 5)")) << range.reason;
  // Per-score bounds: only expert 4's score is uncertain enough to reach expert 3's.
  const std::vector<double> per = {0, 0, 0, 0, 2e-7};
  EXPECT_TRUE(decide_indices(indices(2), truth, std::vector<int32_t>{1, 4}, scores, per).pass);
  test::expect_error([&] { decide_indices(indices(2), truth, truth, std::vector<double>{1.0}, {}); },
                     "1 scores for 1 rows");
  test::expect_error([&] { decide_indices(indices(3), truth, truth); }, "not a positive multiple of K = 3");
}

TEST(Metrics, IndexExactTiesGoToTheLowestIndex) {
  // E = 5, K = 2: expert 0 is clear; experts 1, 2 and 4 tie exactly (equal inputs), expert 3 is
  // within the bound of them. Every engine takes expert 1 (the lowest of the tie).
  const std::vector<double> scores = {0.9, 0.5, 0.5, 0.5 - 1e-7, 0.5};
  const std::vector<double> bound = {1e-6};
  const std::vector<int32_t> truth = {0, 1};
  EXPECT_TRUE(decide_indices(indices(2), truth, std::vector<int32_t>{1, 0}, scores, bound).pass);
  // A near-tie that is no exact tie still passes: expert 3's score may round above the tied 0.5s.
  const Verdict near = decide_indices(indices(2), truth, std::vector<int32_t>{0, 3}, scores, bound);
  EXPECT_TRUE(near.pass) << near.reason;
  EXPECT_EQ(near.near_ties, 1);
  for (int32_t later : {2, 4}) {
    const Verdict v = decide_indices(indices(2), truth, std::vector<int32_t>{0, later}, scores, bound);
    EXPECT_FALSE(v.pass) << later;
    EXPECT_TRUE(v.failed & kIndexSet);
    EXPECT_TRUE(has(v.reason, "experts 1 and " + std::to_string(later) + " tie exactly (score 0.5): the lower index "
                              "must win"))
        << v.reason;
    EXPECT_EQ(v.expected, 1);
    EXPECT_EQ(v.found, later);
  }
}

}  // namespace
}  // namespace moe::compare
