// Kernels written in another engine's conventions, judged through a manifest's "conventions"
// (docs/manifests.md "Conventions"): a delta_net kernel in ggml's (log decay, head h % Hk, output
// scale) passes with them declared and fails without; a planted head-grouping mistake fails
// exactly where the groupings differ; qk_norm as ggml's one-tensor l2_norm run on q then k (a
// sequence) passes. And a wrong "conventions" is refused with a message naming what is wrong.
#include <unistd.h>

#include <bit>
#include <cmath>
#include <map>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using test::have_device, test::of_kernel, test::param;

const std::string kDir = test::kData + "conventions/";

const std::vector<CaseResult>& delta_results() {
  static const std::vector<CaseResult> rs = test::run(kDir + "delta_net_ggml.json", "delta_net", "remainders", 1);
  return rs;
}

TEST(conventions_compare, DeltaNetInGgmlConventionsPasses) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<const CaseResult*> rs = of_kernel(delta_results(), "delta_net_ggml");
  EXPECT_GE(rs.size(), 8u);
  for (const CaseResult* r : rs) {
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
    // The verdict line says the conventions it was judged in.
    EXPECT_NE(r->params.find("decay_log=1 head_group=1"), std::string::npos) << r->params;
  }
}

TEST(conventions_compare, SameKernelWithoutConventionsFailsEveryCase) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<const CaseResult*> rs = of_kernel(delta_results(), "delta_net_ggml_undeclared");
  EXPECT_GE(rs.size(), 8u);
  for (const CaseResult* r : rs) {
    EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
    EXPECT_EQ(r->params.find("decay_log"), std::string::npos) << r->params;
  }
}

TEST(conventions_compare, HeadGroupMistakeFailsWhereTheGroupingsDiffer) {
  // h / (Hv / Hk) and h % Hk read the same head for every h only when Hk = 1 or Hv = Hk.
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int differ = 0;
  for (const CaseResult* r : of_kernel(delta_results(), "delta_net_ggml_head_div")) {
    const bool same = param(*r, "k_heads") == 1 || param(*r, "v_heads") == param(*r, "k_heads");
    differ += !same;
    EXPECT_EQ(r->status(), same ? CaseResult::Status::Pass : CaseResult::Status::Fail) << case_line(*r);
  }
  EXPECT_GE(differ, 2);
}

// router_noaux's slot order (ggml's topk_moe writes its slots in the order it picks them, by the
// biased score c; the bundled kernels by weight): the same (expert, weight) pairs per row, in c's
// order, and some rows really reordered (otherwise the convention would be untested).
TEST(conventions_compare, RouterNoauxSlotOrderKeepsThePairs) {
  const std::vector<OpCase> by_w = make_cases("router_noaux", "remainders", 1, "", {}, "test");
  const std::vector<OpCase> by_c = make_cases("router_noaux", "remainders", 1, "", {{"slot_order", "1"}}, "test");
  ASSERT_EQ(by_w.size(), by_c.size());
  int reordered = 0;
  for (size_t i = 0; i < by_w.size(); ++i) {
    const OpCase &a = by_w[i], &b = by_c[i];
    const size_t K = size_t(b.vars.at("k")), E = size_t(b.vars.at("experts"));
    const std::vector<double>&ia = a.truth.at("idx"), &wa = a.truth.at("w"), &ib = b.truth.at("idx"), &wb = b.truth.at("w");
    ASSERT_EQ(ia.size(), ib.size()) << b.shape;
    for (size_t r0 = 0; r0 < ib.size(); r0 += K) {
      std::map<double, double> pa, pb;
      for (size_t j = 0; j < K; ++j) pa[ia[r0 + j]] = wa[r0 + j], pb[ib[r0 + j]] = wb[r0 + j];
      EXPECT_EQ(pa.size(), pb.size()) << b.shape;
      for (const auto& [e, w] : pa)
        if (!std::isnan(w)) {
          EXPECT_EQ(pb.count(e) ? pb[e] : -1.0, w) << b.shape << " row " << r0 / K;
        }
      bool same = true;
      for (size_t j = 0; j < K; ++j) same &= ia[r0 + j] == ib[r0 + j];
      reordered += !same;
      if (ib[r0] < 0) continue;  // a NaN token: no order
      // c = sigmoid(logit) + bias, non-increasing along the slots.
      const size_t row = r0 / K;
      auto c_of = [&](double e) {
        const float x = std::bit_cast<float>(b.tensors.at("logits").words[row * E + size_t(e)]);
        const float bias = std::bit_cast<float>(b.tensors.at("bias").words[size_t(e)]);
        return 1.0 / (1.0 + std::exp(-double(x))) + double(bias);
      };
      for (size_t j = 1; j < K; ++j) EXPECT_GE(c_of(ib[r0 + j - 1]), c_of(ib[r0 + j])) << b.shape << " row " << row;
    }
  }
  EXPECT_GT(reordered, 0);
}

TEST(conventions_compare, QkNormAsOneTensorL2NormSequencePasses) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kDir + "qk_l2_norm.json", "qk_norm", "all", 1);
  const std::vector<const CaseResult*> ran = of_kernel(rs, "l2_norm_q -> l2_norm_k");
  EXPECT_GE(ran.size(), 8u);
  for (const CaseResult* r : ran) {
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
    EXPECT_NE(r->params.find("eps_form=2 scaled=0"), std::string::npos) << r->params;
  }
}

// --- refused manifests ---------------------------------------------------------------------

fs::path temp_dir() {
  static const moe::test::Scratch s("conventions_test");
  fs::create_directories(s.dir);
  return s.dir;
}

json read_manifest(const std::string& name) {
  std::ifstream f(kDir + name);
  json j = json::parse(f);
  for (auto& k : j["kernels"]) k["glsl"] = kDir + k["glsl"].get<std::string>();
  return j;
}

std::string write(const json& j, const std::string& name) {
  const std::string path = (temp_dir() / (name + ".json")).string();
  std::ofstream(path) << j.dump(1);
  return path;
}

// The load error of manifest `j` (written as <name>.json).
std::string load_error(const json& j, const std::string& name) {
  const std::string path = write(j, name);
  return moe::test::error_of([&] { load_manifest(path); });
}

TEST(conventions_compare, UnknownConventionListsTheOpsOnes) {
  json j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["conventions"]["decay"] = "1";
  const std::string e = load_error(j, "unknown");
  EXPECT_NE(e.find("kernel 0 'delta_net_ggml': conventions: unknown convention \"decay\" (op 'delta_net' has "
                   "conventions decay_log, head_group, out_scale)"),
            std::string::npos)
      << e;
}

TEST(conventions_compare, OpWithoutConventionsSaysSo) {
  json j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["ops"] = {"rmsnorm"};
  const std::string e = load_error(j, "rmsnorm");
  EXPECT_NE(e.find("conventions: unknown convention \"decay_log\" (op 'rmsnorm' has no conventions)"),
            std::string::npos)
      << e;
}

TEST(conventions_compare, MalformedConventionsAreRefused) {
  json j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["conventions"] = "1";
  EXPECT_NE(load_error(j, "string").find("conventions: expected an object of field: expression, found string \"1\""),
            std::string::npos)
      << load_error(j, "string");
  j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["conventions"]["out_scale"] = "1 / ";
  EXPECT_NE(load_error(j, "syntax").find("conventions.out_scale: "), std::string::npos) << load_error(j, "syntax");
  j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["ops"] = {"delta_net", "qk_norm"};
  EXPECT_NE(load_error(j, "fused").find("conventions: conventions apply to a kernel of one op, found 2 ops"),
            std::string::npos)
      << load_error(j, "fused");
}

TEST(conventions_compare, SequenceKernelsMustAgree) {
  json j = read_manifest("qk_l2_norm.json");
  j["kernels"][1]["conventions"]["eps_form"] = "1";
  const std::string e = load_error(j, "sequence");
  EXPECT_NE(e.find("sequences[0].kernels: kernel \"l2_norm_k\" declares other conventions than \"l2_norm_q\" "
                   "(eps_form=1 scaled=0 versus eps_form=2 scaled=0)"),
            std::string::npos)
      << e;
}

TEST(conventions_compare, BadValuesAreRefusedPerCaseNamingTheKernel) {
  // Values are expressions over the case's params, so they are checked when a case is built.
  auto run_error = [](json j, const std::string& name) {
    while (j["kernels"].size() > 1) j["kernels"].erase(1);  // the first kernel alone
    const std::string path = write(j, name);
    return moe::test::error_of([&] { test::run(path, "delta_net", "remainder dk 257, dv 17, 16 steps", 1); });
  };
  json j = read_manifest("delta_net_ggml.json");
  j["kernels"][0]["conventions"]["decay_log"] = "2";
  std::string e = run_error(j, "value");
  EXPECT_NE(e.find(": kernel 'delta_net_ggml': conventions decay_log=2 head_group=1 out_scale=1 / sqrt(value_dim): "
                   "delta_net: decay_log=2, expected 0 or 1"),
            std::string::npos)
      << e;
  j["kernels"][0]["conventions"]["decay_log"] = "key_dim / 2.0";
  e = run_error(j, "fraction");  // the first shape built has key_dim 1
  EXPECT_NE(e.find("decay_log = key_dim / 2.0 = 0.5, expected an integer"), std::string::npos) << e;
  j["kernels"][0]["conventions"]["decay_log"] = "dv";
  e = run_error(j, "unknown_var");
  EXPECT_NE(e.find("kernel 'delta_net_ggml': conventions"), std::string::npos) << e;
  EXPECT_NE(e.find("dv"), std::string::npos) << e;
}

}  // namespace
}  // namespace moe::compare
