// The comparator itself: an injected error fails, exact agreement passes, NaN/Inf handled.
#include <cmath>
#include <limits>

#include "core/check_util.h"
#include "test_util.h"

namespace moe {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(check_util, ExactAgreementPasses) {
  TierReport t("ref32");
  const std::vector<float> a{1, 2, 3};
  t.add("y", a, a, 0.0);
  EXPECT_TRUE(t.pass());
  EXPECT_EQ(t.worst_ratio, 0.0);
  EXPECT_EQ(t.compared, 3);
}

TEST(check_util, ErrorBeyondBoundFailsWithEvidence) {
  TierReport t("fast");
  const std::vector<float> e{1, 2, 3}, f{1, 2.5f, 3};
  t.add("y", e, f, 0.25);
  EXPECT_FALSE(t.pass());
  EXPECT_EQ(t.worst_index, 1);
  EXPECT_DOUBLE_EQ(t.worst_ratio, 2.0);
  EXPECT_EQ(t.expected, 2.0);
  EXPECT_EQ(t.found, 2.5);
  CheckResult r{"op", "shape", "n=3", 5};
  EXPECT_NE(describe(r, t).find("y[1] expected 2 found 2.5"), std::string::npos) << describe(r, t);
}

TEST(check_util, ZeroBoundDemandsBitEquality) {
  TierReport t("fast");
  const std::vector<float> e{1.0f}, f{std::nextafter(1.0f, 2.0f)};
  t.add("y", e, f, 0.0);
  EXPECT_FALSE(t.pass());
}

TEST(check_util, NanAndInfMustMatch) {
  {
    TierReport t("ref32");
    t.add("y", std::vector<float>{kNaN, kInf}, std::vector<float>{kNaN, kInf}, 0.0);
    EXPECT_TRUE(t.pass());
  }
  {
    TierReport t("ref32");
    t.add("y", std::vector<float>{1.0f}, std::vector<float>{kNaN}, 1e30);
    EXPECT_FALSE(t.pass());
    EXPECT_EQ(t.special_mismatch, 1);
  }
  {
    TierReport t("ref32");
    t.add("y", std::vector<float>{kInf}, std::vector<float>{-kInf}, 1e30);
    EXPECT_FALSE(t.pass());
  }
  {
    TierReport t("ref32");  // a NaN truth is not matched by a number
    t.add("y", std::vector<float>{kNaN}, std::vector<float>{0.0f}, 1e30);
    EXPECT_FALSE(t.pass());
  }
}

TEST(check_util, NothingComparedIsNotAPass) {
  TierReport t("fast");
  EXPECT_FALSE(t.pass());
}

TEST(check_util, ExactIntegers) {
  TierReport t("fast");
  t.add_exact("idx", std::vector<int32_t>{1, 2}, std::vector<int32_t>{1, 3});
  EXPECT_FALSE(t.pass());
  EXPECT_EQ(t.worst_index, 1);
}

TEST(check_util, GammaIsHighamsConstant) {
  EXPECT_NEAR(gamma_n(1), kU32 / (1 - kU32), 1e-30);
  EXPECT_GT(gamma_n(4096), 4096 * kU32);
}

}  // namespace
}  // namespace moe
