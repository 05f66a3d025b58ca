// Free-running generation against the truth (oracle/diverge.h): honest tiers agree or part at a
// near-tie; a candidate running another model (one routed expert instead of two) parts early and
// is not a near-tie.
#include "oracle/diverge.h"

#include "test_util.h"

namespace moe {
namespace {

const std::string kGolden = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/";

TEST(diverge, HonestTiersAgreeOrPartAtANearTie) {
  for (const char* name : {"qwen3_5_moe_tiny", "deepseek_v3_tiny"}) {
    auto m = Model::load(kGolden + name);
    DivergeOptions o;
    o.steps = 24;
    for (const char* tier : {"ref32", "fast"}) {
      const Divergence d = first_divergence(*m, std::vector<int32_t>{5, 9, 300}, tier, o);
      if (d.diverged)
        EXPECT_TRUE(d.near_tie) << name << " " << tier << " step " << d.step << " margin " << d.margin;
      else
        EXPECT_EQ(int64_t(d.agreed.size()), o.steps);
    }
  }
}

TEST(diverge, AnotherModelIsNotANearTie) {
  auto m = Model::load(kGolden + "qwen3_5_moe_tiny");
  DivergeOptions o;
  o.steps = 24;
  ForwardOptions one;
  one.experts_per_tok = 1;
  o.candidate_forward = one;
  const Divergence d = first_divergence(*m, std::vector<int32_t>{5, 9, 300}, "fast", o);
  ASSERT_TRUE(d.diverged);
  EXPECT_FALSE(d.near_tie) << "margin " << d.margin << " tolerance " << d.tolerance;
  EXPECT_GT(d.candidate_err, 100 * d.honest_err);
  EXPECT_EQ(int64_t(d.agreed.size()), d.step);
}

TEST(diverge, BadArguments) {
  auto m = Model::load(kGolden + "qwen3_5_moe_tiny");
  EXPECT_THROW(first_divergence(*m, std::vector<int32_t>{}, "fast", {}), Error);
  EXPECT_THROW(first_divergence(*m, std::vector<int32_t>{1}, "gpu", {}), Error);
  EXPECT_THROW(first_divergence(*m, std::vector<int32_t>{1 << 20}, "fast", {}), Error);
}

}  // namespace
}  // namespace moe
