// Outputs a kernel stores as f16 (docs/manifests.md "f16 outputs"): an f32 op output bound to an
// "out" binding declared "type": "f16" is read back widened and decided with one f16 spacing added
// to its bound. Our own q8_0 dequantiser in an engine's to-f16 idiom
// (tests/vulkan/data/f16_out/dequant_q8_0_f16.comp) passes; planted bugs of a few f16 spacings
// and of the codes' sign fail; the same kernel declared as writing f32 fails; a narrowing the
// harness cannot decide (bf16) is refused with the reason.
#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device, test::of_kernel;
const std::string kManifest = test::kData + "f16_out/dequant_q8_0_f16.json";

const std::vector<CaseResult>& results() {
  static const std::vector<CaseResult> rs = test::run(kManifest, "dequant_ggml", "remainders", 2);
  return rs;
}

TEST(f16_output, DequantiserStoringF16Passes) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const auto rs = of_kernel(results(), "dequant_q8_0_f16");
  ASSERT_GE(rs.size(), 8u);
  for (const CaseResult* r : rs) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
}

TEST(f16_output, PlantedBugsFail) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  for (const char* k : {"dequant_q8_0_f16_scaled", "dequant_q8_0_f16_unsigned"}) {
    const auto rs = of_kernel(results(), k);
    ASSERT_GE(rs.size(), 8u) << k;
    for (const CaseResult* r : rs) EXPECT_EQ(r->status(), CaseResult::Status::Fail) << k << " " << case_line(*r);
  }
}

TEST(f16_output, F16StoresReadAsF32Fail) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const auto rs = of_kernel(results(), "dequant_q8_0_f16_undeclared");
  ASSERT_GE(rs.size(), 8u);
  for (const CaseResult* r : rs) EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
}

TEST(f16_output, Bf16OutputIsRefusedWithTheReason) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::string path = test::manifest_variant(
      kManifest, "dequant_q8_0_f16", [](nlohmann::json& k) { k["bindings"][1]["type"] = "bf16"; }, "f16_out_variant");
  const std::vector<CaseResult> rs = test::run_variant(path, "dequant_ggml");
  const auto ran = of_kernel(rs, "dequant_q8_0_f16");
  ASSERT_FALSE(ran.empty());
  for (const CaseResult* r : ran) {
    EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
    EXPECT_NE(r->error.find("an f32 output may be stored as f16"), std::string::npos) << r->error;
  }
}

}  // namespace
}  // namespace moe::compare
