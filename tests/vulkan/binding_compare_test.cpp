// Bindings that match engines' buffers (docs/manifests.md "Engine layouts"): a state read from
// one binding and written to another (in one kernel and across a sequence, carried between
// steps), one buffer at two bindings ("same_as"), op inputs converted exactly into a binding of
// another type (f32, f16), generated values. Kernels in tests/vulkan/data/layouts/bindings.json;
// each feature passes a correct kernel, catches a planted bug, and refuses a wrong manifest
// with the reason.
#include <bit>
#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "compare/cases/cases.h"
#include "compare/manifest/manifest.h"
#include "compare/run/elem_convert.h"
#include "compare/run/plan.h"
#include "compare_test_util.h"
#include "test_util.h"

namespace moe::compare {
namespace {

using test::have_device;
using test::of_kernel;
using test::run_variant;
const std::string kBindings = test::kData + "layouts/bindings.json";

// `name` (with the rest of its sequence) from bindings.json, edited.
std::string variant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  return test::manifest_variant(kBindings, name, edit, "bindings_variant");
}

std::string load_error(const std::string& path) {
  std::string m = moe::test::error_of([&] { load_manifest(path); });
  std::remove(path.c_str());
  return m;
}

// Every compared output of `r` whose name starts with `prefix` ("state" also matches
// "state@t=3"): how many there are and how many failed.
std::pair<int, int> outputs_failed(const CaseResult& r, const std::string& prefix) {
  int n = 0, failed = 0;
  for (const Verdict& v : r.outputs)
    if (v.output.rfind(prefix, 0) == 0) ++n, failed += !v.pass;
  return {n, failed};
}

TEST(bindings, StateReadFromOneBindingAndWrittenToAnotherPasses) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kBindings, "conv1d_step", "remainders", 2);
  // One kernel (state in at binding 2; y and the new state packed at binding 3), and a sequence
  // whose second kernel alone writes the state (binding 4), as a graph's copy would.
  for (const char* k : {"conv1d_split", "conv1d_pass_y -> conv1d_pass_state"}) {
    const auto ran = of_kernel(rs, k);
    int passed = 0, multi_step = 0;
    for (const CaseResult* r : ran) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
      passed += r->status() == CaseResult::Status::Pass;
      // Decode cases run one token per step: the harness carried the state between them.
      multi_step += r->params.find("steps=") != std::string::npos && r->status() == CaseResult::Status::Pass;
    }
    EXPECT_GE(passed, 8) << k;
    EXPECT_GE(multi_step, 2) << k;
  }
}

TEST(bindings, StateNotWrittenOrOneTokenLateIsCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kBindings, "conv1d_step", "remainders", 1);
  for (const char* k : {"conv1d_split_skips_state", "conv1d_split_late_state"}) {
    const auto ran = of_kernel(rs, k);
    ASSERT_GE(ran.size(), 4u) << k;
    for (const CaseResult* r : ran) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      const auto [n, failed] = outputs_failed(*r, "state");
      EXPECT_GE(n, 1) << case_line(*r);
      EXPECT_EQ(failed, n) << k << ": every step's state must fail: " << case_line(*r);
    }
  }
  // The state never written still holds the poison the harness put in its written place (its
  // input lives in the "in" binding), not the input state.
  for (const CaseResult* r : of_kernel(rs, "conv1d_split_skips_state"))
    for (const Verdict& v : r->outputs)
      if (v.output.rfind("state", 0) == 0) {
        EXPECT_NE(v.reason.find("poison"), std::string::npos) << v.reason;
      }
}

TEST(bindings, AStepThatUploadsTheStateIsNotCarried) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Steps compared in isolation: each step from 1 on uploads the state (here the truth of the
  // step before, exact since conv1d's state is moved data). The kernel that never writes the
  // state then still computes every y from the uploaded state; had the harness carried the
  // (poisoned) written place instead, y would be NaN from step 1 on.
  const Manifest m = load_kernels(kBindings);
  std::string why;
  const std::vector<Plan> plans = plans_for(m, "conv1d_step", &why);
  const auto plan = std::find_if(plans.begin(), plans.end(), [](const Plan& p) { return p.label == "conv1d_split_skips_state"; });
  ASSERT_NE(plan, plans.end()) << why;
  vk::Context ctx("");
  int ran = 0;
  for (OpCase c : make_cases("conv1d_step", "remainders", 1)) {
    if (c.steps.size() < 2 || c.vars.at("kernel") < 2) continue;
    for (size_t s = 1; s < c.steps.size(); ++s) {
      const std::vector<double>& before = c.steps[s - 1].truth.at("state");
      c.steps[s].upload["state"] = c.tensors.at("state");
      for (size_t e = 0; e < before.size(); ++e) c.steps[s].upload["state"].words[e] = std::bit_cast<uint32_t>(float(before[e]));
    }
    const CaseResult r = run_plan_case(ctx, m, *plan, c, 0, 20000);
    ASSERT_TRUE(r.error.empty()) << r.error;
    for (const Verdict& v : r.outputs) EXPECT_EQ(v.pass, v.output.rfind("y", 0) == 0) << case_line(r) << " " << v.output;
    ++ran;
  }
  EXPECT_GE(ran, 1);
}

TEST(bindings, AliasBindsTheRootsBuffer) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kBindings, "residual_add", "remainders", 1);
  const auto good = of_kernel(rs, "residual_add_alias");
  ASSERT_GE(good.size(), 4u);
  for (const CaseResult* r : good) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
  // In place through two descriptors of one buffer: b read readonly, y written writeonly.
  const auto split = of_kernel(rs, "residual_add_inplace_split");
  ASSERT_GE(split.size(), 4u);
  for (const CaseResult* r : split) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
  // Reading the alias one element ahead: caught wherever there is a next element.
  for (const CaseResult* r : of_kernel(rs, "residual_add_alias_reads_next"))
    if (test::param(*r, "n") > 1) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
    }
}

TEST(bindings, AliasRefusals) {
  // A writable shader buffer aliasing an "in" buffer: the kernel could change an input.
  std::string m = load_error(variant("residual_add_alias", [](nlohmann::json& k) {
    k["defines"] = {{"WRITABLE_ALIAS", ""}};
  }));
  EXPECT_NE(m.find("the manifest's binding 2 (tensor \"same_as 0 (a)\") aliases binding 0, an \"in\" buffer, but the "
                   "shader's storage buffer 'A2' (set 0, binding 2) is writable"),
            std::string::npos)
      << m;
  // An inout buffer whose every descriptor is readonly: nothing could write it.
  m = load_error(variant("residual_add_inplace_split", [](nlohmann::json& k) { k["defines"] = {{"READONLY_OUT", ""}}; }));
  for (const char* part : {"the manifest's binding 1 (tensor \"b\") has access \"inout\", but the shader's",
                           "storage buffer 'B' (set 0, binding 1)", "storage buffer 'Y' (set 0, binding 2)", "are all readonly"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  // Nothing else may be declared on an alias.
  m = load_error(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][2]["access"] = "in"; }));
  EXPECT_NE(m.find("bindings[2]: \"access\" cannot be declared on an alias (\"same_as\")"), std::string::npos) << m;
  // An alias of a binding that does not exist, of itself, and a cycle.
  m = load_error(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][2]["same_as"] = 7; }));
  EXPECT_NE(m.find("binding 2: same_as 7 is not a binding of this kernel"), std::string::npos) << m;
  m = load_error(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][2]["same_as"] = 2; }));
  EXPECT_NE(m.find("bindings[2].same_as: binding 2 aliases itself"), std::string::npos) << m;
  m = load_error(variant("residual_add_alias", [](nlohmann::json& k) {
    k["bindings"][1] = {{"binding", 1}, {"same_as", 2}};
    k["bindings"][2]["same_as"] = 1;
  }));
  EXPECT_NE(m.find("same_as forms a cycle (1 -> 2 -> 1)"), std::string::npos) << m;
  // A chain of aliases resolves to its root.
  const std::string path = variant("residual_add_alias", [](nlohmann::json& k) {
    k["bindings"][1] = {{"binding", 1}, {"same_as", 2}};
  });
  const Manifest man = load_manifest(path);
  std::remove(path.c_str());
  ASSERT_EQ(man.kernels.size(), 1u);
  EXPECT_EQ(man.kernels[0].bindings[1].same_as, 0);
  EXPECT_EQ(man.kernels[0].bindings[1].access, Access::In);
  EXPECT_EQ(man.kernels[0].bindings[1].tensor, "same_as 0 (a)");
}

TEST(bindings, GeneratedValuesAndExactConversionsPass) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kBindings, "residual_add,rmsnorm", "remainders", 1);
  // A generated i32 permutation and f16 table; rmsnorm's bf16 w bound as f32 and as f16.
  for (const char* k : {"residual_add_generated", "rmsnorm_w_f32", "rmsnorm_w_f16"}) {
    const auto ran = of_kernel(rs, k);
    EXPECT_GE(ran.size(), 4u) << k;
    for (const CaseResult* r : ran) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
  }
  // Multiplying by the generated row of zeros instead of ones.
  const auto row0 = of_kernel(rs, "residual_add_generated_row0");
  ASSERT_GE(row0.size(), 4u);
  for (const CaseResult* r : row0) EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
}

TEST(bindings, GeneratedF16GapsHoldTheF16Poison) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Only row 0 of the f16 table generated; row 1 (read by the kernel) is the fill: the f16 NaN
  // pattern, so every y is NaN (with the 32-bit pattern, every other half would be 0x0BAD, a
  // small finite f16, and y there a plausible b).
  const auto rs = run_variant(variant("residual_add_generated", [](nlohmann::json& k) {
    k["bindings"][4]["shape"] = {"1", "n"};
    k["bindings"][4]["size"] = "2 * n";
  }), "residual_add");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
    const Verdict* v = test::verdict(r, "y");
    ASSERT_NE(v, nullptr);
    // Every element NaN (the 32-bit pattern would leave every other one finite).
    std::string all_nan(1, '(');  // built by appends: GCC 12 warns falsely on "(" + to_string
    all_nan += std::to_string(test::param(r, "n"));
    all_nan += " NaN found";
    EXPECT_NE(v->reason.find(all_nan), std::string::npos)
        << case_line(r) << " " << v->reason;
  }
}

TEST(bindings, ConversionAndGenerationRefusals) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // An f32 input that f16 cannot hold exactly: the first element named with its value.
  auto rs = run_variant(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][1]["type"] = "f16"; }),
                        "residual_add");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) {
    EXPECT_NE(r.error.find("bindings_variant_"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("'residual_add_alias': binding 1: element 0 of tensor 'b' = "), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("(f32) is not exactly representable in the binding's type f16"), std::string::npos) << r.error;
  }
  // An output may be declared f16 (the kernel stores it narrowed: f16_output_test.cpp); this
  // kernel writes f32 there, past the f16 buffer's views, and fails.
  rs = run_variant(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][3]["type"] = "f16"; }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
  // An in/out state keeps the op's type.
  rs = run_variant(variant("conv1d_split", [](nlohmann::json& k) { k["bindings"][2]["type"] = "f16"; }), "conv1d_step");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs.back().error.find("tensor 'state' is f32: only an op input"), std::string::npos) << rs.back().error;
  // A pair with no exact conversion.
  rs = run_variant(variant("residual_add_alias", [](nlohmann::json& k) { k["bindings"][1]["type"] = "u32"; }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs[0].error.find("(exact conversions: bf16 -> f32 | f16, f32 -> f16, i32 <-> u32; an f32 output may be "
                             "stored as f16 through an \"out\" binding)"),
            std::string::npos)
      << rs[0].error;
  // Generated values that the type cannot hold: a fraction as i32, 0.1 as f16.
  rs = run_variant(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][3]["generate"] = "i0 / 2.0"; }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs.back().error.find("binding 3 generate (i0 / 2.0) at [1] = 0.5 does not fit an i32"), std::string::npos)
      << rs.back().error;
  rs = run_variant(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][4]["generate"] = "0.1"; }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs[0].error.find("binding 4 generate (0.1) at [0, 0] = 0.1 is not exactly representable in f16"),
            std::string::npos)
      << rs[0].error;
}

TEST(bindings, GenerateAndTypeRefusalsAtLoad) {
  std::string m = load_error(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][3].erase("shape"); }));
  EXPECT_NE(m.find("bindings[3]: \"generate\" needs a \"shape\""), std::string::npos) << m;
  m = load_error(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][3]["access"] = "inout"; }));
  EXPECT_NE(m.find("bindings[3]: \"generate\" needs access \"in\""), std::string::npos) << m;
  m = load_error(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][3]["from"] = "1"; }));
  EXPECT_NE(m.find("bindings[3]: \"from\" does not apply to generated values"), std::string::npos) << m;
  m = load_error(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][3]["generate"] = "i0 +"; }));
  EXPECT_NE(m.find("bindings[3].generate: expression 'i0 +'"), std::string::npos) << m;
  m = load_error(variant("residual_add_generated", [](nlohmann::json& k) { k["bindings"][4]["type"] = "f8"; }));
  EXPECT_NE(m.find("bindings[4].type: expected one of f32 | bf16 | f16 | u32 | i32, found \"f8\""), std::string::npos)
      << m;
}

TEST(bindings, ExactConversionRules) {
  auto f32 = [](float f) { return std::bit_cast<uint32_t>(f); };
  auto bf16 = [](float f) { return std::bit_cast<uint32_t>(f) >> 16; };  // f exactly a bf16
  // f32 -> f16: the largest finite f16, the smallest subnormal, one ulp above 1; one past each
  // is refused (overflow, underflow, a lost bit).
  EXPECT_EQ(convert_exact(f32(65504.0f), ElemType::F32, ElemType::F16), 0x7BFFu);
  EXPECT_EQ(convert_exact(f32(std::ldexp(1.0f, -24)), ElemType::F32, ElemType::F16), 0x0001u);
  EXPECT_EQ(convert_exact(f32(1.0f + std::ldexp(1.0f, -10)), ElemType::F32, ElemType::F16), 0x3C01u);
  EXPECT_EQ(convert_exact(f32(-2.0f), ElemType::F32, ElemType::F16), 0xC000u);
  EXPECT_FALSE(convert_exact(f32(65520.0f), ElemType::F32, ElemType::F16));
  EXPECT_FALSE(convert_exact(f32(std::ldexp(1.0f, -25)), ElemType::F32, ElemType::F16));
  EXPECT_FALSE(convert_exact(f32(1.0f + std::ldexp(1.0f, -11)), ElemType::F32, ElemType::F16));
  EXPECT_FALSE(convert_exact(f32(NAN), ElemType::F32, ElemType::F16));
  EXPECT_EQ(convert_exact(f32(INFINITY), ElemType::F32, ElemType::F16), 0x7C00u);
  // bf16 -> f32 always; bf16 -> f16 only inside f16's range and precision.
  EXPECT_EQ(convert_exact(bf16(1e30f) , ElemType::BF16, ElemType::F32), bf16(1e30f) << 16);
  EXPECT_EQ(convert_exact(bf16(0.5f), ElemType::BF16, ElemType::F16), 0x3800u);
  EXPECT_FALSE(convert_exact(bf16(std::ldexp(1.0f, -30)), ElemType::BF16, ElemType::F16));
  // i32 <-> u32 where the value fits.
  EXPECT_EQ(convert_exact(7u, ElemType::I32, ElemType::U32), 7u);
  EXPECT_FALSE(convert_exact(std::bit_cast<uint32_t>(-1), ElemType::I32, ElemType::U32));
  EXPECT_FALSE(convert_exact(0x80000000u, ElemType::U32, ElemType::I32));
  EXPECT_FALSE(convertible(ElemType::F32, ElemType::BF16));  // would round
  // Generated values: exact or refused; infinities are exact (masks).
  EXPECT_EQ(generated_unit(-INFINITY, ElemType::F16, "g"), 0xFC00u);
  EXPECT_EQ(generated_unit(3, ElemType::I32, "g"), 3u);
  EXPECT_NE(moe::test::error_of([] { generated_unit(0.1, ElemType::F32, "g"); }).find("g = 0.1 is not exactly representable in f32"),
            std::string::npos);
  // The f16 fill: a quiet NaN in both halves.
  EXPECT_TRUE(std::isnan(unit_value(fill_pattern(ElemType::F16, kPoison) & 0xFFFFu, ElemType::F16)));
  EXPECT_TRUE(std::isnan(unit_value(fill_pattern(ElemType::F16, kPoison) >> 16, ElemType::F16)));
  EXPECT_EQ(fill_pattern(ElemType::F32, kPoison), kPoison);
}

}  // namespace
}  // namespace moe::compare
