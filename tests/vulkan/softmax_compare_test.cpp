// softmax on the default Vulkan device (lavapipe in CI): the bundled kernel passes every case at
// every subgroup size, and so does a kernel of another shape (tests/vulkan/data/softmax/: a
// shared-memory tree over 64 lanes); planted bugs of the op's kind (the mask broadcast taken
// head-major, the scale applied after the mask, no max subtracted) are caught on the cases where
// they change the result; a push constant declared with the wrong type is refused at load.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "compare_test_util.h"
#include "spec/softmax_spec.h"
#include "test_util.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;
const std::string kVariants = kData + "softmax/softmax_variants.json";

std::vector<CaseResult> all_shapes(const std::string& manifest) {
  std::vector<CaseResult> rs = run(manifest, "softmax", "remainders", 1);
  const std::vector<CaseResult> real = run(manifest, "softmax", "real", 1);
  rs.insert(rs.end(), real.begin(), real.end());
  return rs;
}

// The op's remainder and real shapes (spec/softmax_spec.h).
const int kRemainders = int(softmax_shapes(true, false).size()), kReal = int(softmax_shapes(false, true).size());

TEST(softmax_compare, BundledKernelPassesAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Every remainder shape x 3 seeds and the real ones.
  expect_bundled_pass("softmax", {"softmax"}, kRemainders * 3 + kReal);
}

TEST(softmax_compare, PlantedBugsAreCaughtWhereTheyChangeTheResult) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = all_shapes(kVariants);
  const auto tree = of_kernel(rs, "softmax_tree");
  EXPECT_EQ(tree.size(), size_t(kRemainders + kReal));
  for (const CaseResult* r : tree) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;

  // Head-major mask rows differ from r % mask_rows wherever several mask rows meet several heads.
  int caught = 0;
  for (const CaseResult* r : of_kernel(rs, "softmax_mask_head_major")) {
    const int64_t rows = param(*r, "rows"), mask_rows = param(*r, "mask_rows");
    if (mask_rows > 1 && rows > mask_rows) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      ++caught;
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }
  EXPECT_GE(caught, 5);
  // (x + mask) * scale equals x * scale + mask where the mask is 0 or -inf (scale > 0): only the
  // finite non-zero masks tell (the biases and the far-negative mask).
  int finite = 0;
  for (const auto& s : softmax_shapes(true, true))
    finite += s.variant.mask == SoftmaxMask::Bias || s.variant.mask == SoftmaxMask::FarNegative;
  caught = 0;
  for (const CaseResult* r : of_kernel(rs, "softmax_scale_after_mask")) {
    if (r->shape.find("finite biases") != std::string::npos || r->shape.find("mask -200") != std::string::npos) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      ++caught;
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }
  EXPECT_EQ(caught, finite);
  EXPECT_GE(caught, 4);
  // Without the max, exp overflows (z up to ~3000 at scales -64 and 30): inf / inf.
  caught = 0;
  for (const CaseResult* r : of_kernel(rs, "softmax_no_max"))
    if (r->shape.rfind("scale ", 0) == 0) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      ++caught;
    }
  EXPECT_EQ(caught, 2);
}

TEST(softmax_compare, ScaleDeclaredAsAnIntegerIsRefused) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  std::ifstream f(kVariants);
  nlohmann::json j = nlohmann::json::parse(f);
  nlohmann::json k = j["kernels"][0];
  k["push_constants"][3]["type"] = "u32";
  j["kernels"] = nlohmann::json::array({k});
  const std::string path = kData + "softmax/variant_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << j.dump(1);
  moe::test::expect_error([&] { run(path, "softmax", "remainders", 1); },
                          "push constant \"scale\": manifest type u32, shader type f32");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace moe::compare
