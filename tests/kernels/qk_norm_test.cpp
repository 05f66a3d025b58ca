#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/qk_norm.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const QkNormParams&, std::span<const float>, std::span<const float>, std::span<float>,
                    std::span<float>);
const Fn kTiers[3] = {&qk_norm_ref<double>, &qk_norm_ref<float>, &qk_norm_fast};

TEST(qk_norm, HandComputed) {
  // dk = 2, eps = 0, q = k = [3, 4]: |x| = 5, so k_out = x / 5 = [0.6, 0.8] and
  // q_out = x / (sqrt(2) * 5) = [3, 4] / 7.0710678...
  const std::vector<float> x{3, 4};
  std::vector<float> qo(2), ko(2);
  for (Fn f : kTiers) {
    f({1, 1, 2, 0.0f}, x, x, qo, ko);
    EXPECT_NEAR(ko[0], 0.6, 1e-7);
    EXPECT_NEAR(ko[1], 0.8, 1e-7);
    EXPECT_NEAR(qo[0], 0.42426406871192851, 1e-7);
    EXPECT_NEAR(qo[1], 0.56568542494923802, 1e-7);
  }
  // eps counts as dk * eps inside |x|^2: x = [1, 0], dk = 2, eps = 0.5 -> k_out = 1/sqrt(1 + 1).
  const std::vector<float> e{1, 0};
  qk_norm_ref<double>({1, 1, 2, 0.5f}, e, e, qo, ko);
  EXPECT_FLOAT_EQ(ko[0], float(1 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(qo[0], float(1 / std::sqrt(2.0) / std::sqrt(2.0)));
  EXPECT_EQ(ko[1], 0.0f);
}

TEST(qk_norm, F32TierMatchesEngineOrderBitExact) {
  // CPU-C: cpu_rms_norm_bare (sum of rounded squares, 1/sqrtf) then * q_scale or * inv_scale.
  Rng rng(11);
  const int64_t dk = 128;
  const std::vector<float> q = rng.activations(2 * dk), k = rng.activations(2 * dk);
  std::vector<float> qo(2 * dk), ko(2 * dk);
  qk_norm_ref<float>({1, 2, dk, 1e-6f}, q, k, qo, ko);
  const float inv_scale = 1.0f / std::sqrt(128.0f);
  const float q_scale = inv_scale * inv_scale;
  for (int h = 0; h < 2; ++h) {
    for (int which = 0; which < 2; ++which) {
      const float* x = (which == 0 ? q.data() : k.data()) + h * dk;
      const float* y = (which == 0 ? qo.data() : ko.data()) + h * dk;
      float ss = 0;
      for (int i = 0; i < dk; ++i) {
        const float sq = x[i] * x[i];
        ss = ss + sq;
      }
      const float inv = 1.0f / std::sqrt(ss / 128.0f + 1e-6f);
      for (int i = 0; i < dk; ++i) {
        const float xi = x[i] * inv;
        EXPECT_EQ(y[i], xi * (which == 0 ? q_scale : inv_scale)) << h << ' ' << which << ' ' << i;
      }
    }
  }
}

TEST(qk_norm, UnitNormKeysAndScaledQueries) {
  // eps = 0: every k head has L2 norm 1 and every q head 1/sqrt(dk), in every tier.
  Rng rng(3);
  const QkNormParams p{3, 16, 128, 0.0f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  const std::vector<float> q = rng.activations(n), k = rng.activations(n);
  std::vector<float> qo(n), ko(n);
  for (Fn f : kTiers) {
    f(p, q, k, qo, ko);
    for (int64_t r = 0; r < p.tokens * p.heads; ++r) {
      double sq = 0, sk = 0;
      for (int64_t i = 0; i < p.head_dim; ++i) {
        sq += double(qo[r * 128 + i]) * qo[r * 128 + i];
        sk += double(ko[r * 128 + i]) * ko[r * 128 + i];
      }
      EXPECT_NEAR(std::sqrt(sk), 1.0, 1e-5) << r;
      EXPECT_NEAR(std::sqrt(sq), 1.0 / std::sqrt(128.0), 1e-5 / std::sqrt(128.0)) << r;
    }
  }
}

TEST(qk_norm, PowerOfTwoScaleInvarianceBitExact) {
  // With eps = 0, scaling a head by 2^k scales ss by 4^k exactly and inv by 2^-k exactly, so
  // every tier returns bit-identical outputs.
  Rng rng(4);
  const QkNormParams p{2, 4, 33, 0.0f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  const std::vector<float> q = rng.activations(n), k = rng.activations(n);
  std::vector<float> q8(n), k8(n);
  for (int64_t i = 0; i < n; ++i) q8[i] = q[i] * 8.0f, k8[i] = k[i] * 0.25f;
  std::vector<float> qa(n), ka(n), qb(n), kb(n);
  for (Fn f : kTiers) {
    f(p, q, k, qa, ka);
    f(p, q8, k8, qb, kb);
    EXPECT_EQ(qa, qb);
    EXPECT_EQ(ka, kb);
  }
}

TEST(qk_norm, HfL2NormDifferenceIsTheEpsPlacement) {
  // HF l2norm: k / sqrt(|k|^2 + eps). Ours: k / sqrt(|k|^2 + dk*eps). For a head with
  // |k|^2 = 1e-4 (dk*eps = 1.28e-4) they differ by a factor sqrt((1e-4 + 1e-6) / (1e-4 + 1.28e-4)).
  const int64_t dk = 128;
  std::vector<float> k(dk, 0.0f);
  k[0] = 1e-2f;  // |k|^2 = 1e-4 (as an f32: the factor is computed from the stored value)
  std::vector<float> qo(dk), ko(dk);
  qk_norm_ref<double>({1, 1, dk, 1e-6f}, k, k, qo, ko);
  const double s = double(k[0]) * double(k[0]);
  const double hf = double(k[0]) / std::sqrt(s + double(1e-6f));
  const double ours = double(k[0]) / std::sqrt(s + dk * double(1e-6f));
  EXPECT_NEAR(ko[0], ours, 2 * kU32 * ours);
  EXPECT_GT(std::fabs(ko[0] - hf), 0.3 * hf);  // 1 - sqrt(1.01e-4 / 2.28e-4) = 0.334
}

TEST(qk_norm, InPlace) {
  Rng rng(5);
  const QkNormParams p{2, 16, 128, 1e-6f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  for (Fn f : kTiers) {
    std::vector<float> q = rng.activations(n), k = rng.activations(n), qo(n), ko(n);
    f(p, q, k, qo, ko);
    f(p, q, k, q, k);
    EXPECT_EQ(q, qo);
    EXPECT_EQ(k, ko);
  }
}

TEST(qk_norm, NanPropagatesToItsHeadOnly) {
  const int64_t dk = 8;
  std::vector<float> q(3 * dk, 1.0f), k(3 * dk, 1.0f), qo(3 * dk), ko(3 * dk);
  q[dk + 3] = std::numeric_limits<float>::quiet_NaN();
  for (Fn f : kTiers) {
    f({1, 3, dk, 1e-6f}, q, k, qo, ko);
    for (int64_t i = 0; i < 3 * dk; ++i) {
      EXPECT_EQ(std::isnan(qo[i]), i >= dk && i < 2 * dk) << i;
      EXPECT_FALSE(std::isnan(ko[i])) << i;
    }
  }
}

TEST(qk_norm, BadArguments) {
  std::vector<float> a(2 * 16 * 4), b(a.size()), c(a.size()), d(a.size());
  const QkNormParams p{2, 16, 4, 1e-6f};
  test::expect_error([&] { qk_norm_ref<double>(p, std::vector<float>(127), b, c, d); },
                     "qk_norm: q has 127 elements, expected 128");
  test::expect_error([&] { std::vector<float> small(3); qk_norm_fast(p, a, b, c, small); },
                     "qk_norm: k_out has 3 elements, expected 128");
  test::expect_error([&] { qk_norm_ref<float>({2, 16, 0, 1e-6f}, a, b, c, d); }, "head_dim=0");
  test::expect_error([&] { qk_norm_ref<float>({-1, 16, 4, 1e-6f}, a, b, c, d); }, "tokens=-1");
  test::expect_error([&] { qk_norm_ref<float>({2, 16, 4, -1.0f}, a, b, c, d); }, "qk_norm: eps=-1");
  test::expect_error([&] { qk_norm_ref<float>({2, 16, 4, std::nanf("")}, a, b, c, d); }, "qk_norm: eps=nan");
  test::expect_error([&] { qk_norm_fast({1LL << 40, 1LL << 20, 1LL << 10, 1e-6f}, a, b, c, d); }, "overflows");
  // Partial overlap of an output with its input, and an output on the other input.
  std::vector<float> big(a.size() + 1);
  test::expect_error([&] { qk_norm_ref<double>(p, std::span<const float>(big).first(128), b,
                                               std::span<float>(big).last(128), d); },
                     "q_out partially overlaps q");
  test::expect_error([&] { qk_norm_fast(p, a, b, c, std::span<float>(a)); }, "overlaps the other head tensor");
}

TEST(qk_norm, ThreeWayAgreement) { test::expect_all_pass(qk_norm_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
