// rope_yarn's bundled kernel and cases on the default Vulkan device (lavapipe in CI): the kernel
// passes every case at every subgroup size, and each planted bug (tests/vulkan/data/
// planted_rope_yarn*.comp: the ways engines are known to or could get DeepSeek-V3's YaRN wrong) is
// caught by the per-element bound on exactly the cases where it changes the result.
#include <cmath>
#include <sstream>

#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "ops/rope_yarn.h"
#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;

// The case's params back from "tokens=8 heads=3 rotary_dim=6 theta=10000 ..." (floats print with
// six digits, which every case value survives).
RopeYarnParams params_of(const CaseResult& r) {
  RopeYarnParams p;
  std::istringstream in(r.params);
  std::string kv;
  while (in >> kv) {
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq);
    const double v = std::stod(kv.substr(eq + 1));
    if (k == "tokens") p.tokens = int64_t(v);
    else if (k == "heads") p.heads = int64_t(v);
    else if (k == "rotary_dim") p.rotary_dim = int64_t(v);
    else if (k == "theta") p.theta = float(v);
    else if (k == "factor") p.factor = float(v);
    else if (k == "original_max_position") p.original_max_position = int64_t(v);
    else if (k == "beta_fast") p.beta_fast = float(v);
    else if (k == "beta_slow") p.beta_slow = float(v);
    else if (k == "mscale") p.mscale = float(v);
    else if (k == "mscale_all_dim") p.mscale_all_dim = float(v);
    else if (k == "interleaved") p.interleaved = v != 0;
  }
  return p;
}

// Some pair interpolates (ramp weight > 0) with a factor that changes its frequency: where HF's
// YaRN differs from plain RoPE and from MFR's (factor theta)^-e.
bool interpolates(const RopeYarnParams& p) {
  const YarnRange rg = rope_yarn_range(p);
  bool any = false;
  for (int64_t i = 0; i < p.rotary_dim / 2; ++i) any |= (double(i) - rg.low) / (rg.high - rg.low) > 0;
  return any && p.factor != 1.0f;
}

bool failed_by_element(const CaseResult& r) {
  return r.error.empty() && r.outputs.size() == 1 && !r.outputs[0].pass && (r.outputs[0].failed & kElement) &&
         r.outputs[0].unwritten == 0;
}

TEST(rope_yarn_compare, BundledKernelPassesAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_bundled_pass("rope_yarn", {"rope_yarn"}, 3 * 8 + 5);
}

TEST(rope_yarn_compare, PlantedBugsAreCaughtWhereTheyChangeTheResult) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  std::vector<CaseResult> rs = run(kData + "planted_rope_yarn.json", "rope_yarn", "remainders", 1);
  const std::vector<CaseResult> real = run(kData + "planted_rope_yarn.json", "rope_yarn", "real", 1);
  rs.insert(rs.end(), real.begin(), real.end());
  // Which cases each bug changes (every case has a position > 0 but for a 1-in-163840 draw):
  //   MFR's interpolation frequency and no ramp at all: an interpolating pair;
  //   m left out: m != 1 (mscale != mscale_all_dim, or an absent mscale_all_dim);
  //   half-split pairs on interleaved data: R >= 4 (at R = 2 both layouts pair (0, 1)).
  struct Bug {
    const char* kernel;
    bool (*wrong)(const RopeYarnParams&);
  };
  const Bug bugs[] = {
      {"rope_yarn_mfr_freq", &interpolates},
      {"rope_yarn_no_ramp", &interpolates},
      {"rope_yarn_ignores_m",
       [](const RopeYarnParams& p) { return std::fabs(rope_yarn_attention_factor<double>(p) - 1.0) > 1e-6; }},
      {"rope_yarn_halfsplit_pairs", [](const RopeYarnParams& p) { return p.interleaved && p.rotary_dim >= 4; }},
  };
  for (const Bug& b : bugs) {
    int wrong = 0, right = 0;
    for (const CaseResult* r : of_kernel(rs, b.kernel)) {
      if (b.wrong(params_of(*r))) {
        ++wrong;
        EXPECT_TRUE(failed_by_element(*r)) << b.kernel << ": " << case_line(*r);
      } else {
        ++right;
        EXPECT_EQ(r->status(), CaseResult::Status::Pass) << b.kernel << ": " << case_line(*r);
      }
    }
    EXPECT_GE(wrong, 2) << b.kernel << ": too few cases where the bug matters";
    EXPECT_GE(right + wrong, 12) << b.kernel;
  }
}

}  // namespace
}  // namespace moe::compare
