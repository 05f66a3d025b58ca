// Gated GQA attention on the default Vulkan device (lavapipe in CI): the five bundled stage
// kernels pass their own cases and, run back to back, the whole op's prefill and multi-step
// decode cases, at every subgroup size; each planted bug (tests/vulkan/data/planted_attn*) is
// caught by the criterion that exists for it.
#include <algorithm>

#include "compare/run/driver.h"
#include "compare/decide/metrics.h"
#include "compare/vk/runner.h"
#include "test_util.h"

namespace moe::compare {
namespace {

const std::string kData = std::string(MOE_SOURCE_DIR) + "/tests/vulkan/data/";
const std::string kStages = "kv_append,attention_scores,attention_softmax,attention_values,attention_gate";

bool have_device() { return !vk::list_devices().empty(); }

std::vector<CaseResult> run(const std::string& manifest, const std::string& ops, const std::string& shapes,
                            int seeds) {
  CompareOptions o;
  o.kernels = manifest, o.ops = ops, o.shapes = shapes, o.seeds = seeds, o.quiet = true;
  return compare_cases(o);
}

std::vector<const CaseResult*> of_kernel(const std::vector<CaseResult>& rs, const std::string& kernel,
                                         const std::string& shape = "") {
  std::vector<const CaseResult*> out;
  for (const CaseResult& r : rs)
    if (r.kernel == kernel && (shape.empty() || r.shape == shape) && r.status() != CaseResult::Status::Skip)
      out.push_back(&r);
  return out;
}

const Verdict* verdict(const CaseResult& r, const std::string& output) {
  for (const Verdict& v : r.outputs)
    if (v.output == output) return &v;
  return nullptr;
}

uint32_t subgroup_of(const CaseResult& r) { return r.subgroup ? r.subgroup : vk::Context("").info().subgroup_size; }

TEST(attn_compare, BundledKernelsPassAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  std::vector<CaseResult> rs = run("", kStages + ",attention", "remainders", 3);
  const std::vector<CaseResult> real = run("", kStages + ",attention", "real", 1);
  rs.insert(rs.end(), real.begin(), real.end());
  std::map<std::string, int> passed;
  bool chain_ran = false, decode_ran = false;
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error;
    passed[r.op] += r.status() == CaseResult::Status::Pass;
    if (r.op == "attention") {
      chain_ran |= r.kernel == "kv_append -> attention_scores -> attention_softmax -> attention_values -> attention_gate";
      // A decode case decides o and both caches at each of its >= 16 steps.
      if (r.outputs.size() >= 3 * 16) decode_ran = true;
    }
  }
  // Per op: 10 remainder cases x 3 seeds + 4 real stage cases (kv_append adds 2 remainder and 4
  // real multi-step cases; whole op: 13 x 3 + 7), at least one subgroup size each.
  for (const char* op : {"attention_scores", "attention_softmax", "attention_values", "attention_gate"})
    EXPECT_GE(passed[op], 10 * 3 + 4) << op;
  EXPECT_GE(passed["kv_append"], 12 * 3 + 8);
  EXPECT_GE(passed["attention"], 13 * 3 + 7);
  EXPECT_TRUE(chain_ran);
  EXPECT_TRUE(decode_ran);
}

TEST(attn_compare, PlantedStageBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_attn.json", kStages, "remainders", 1);
  auto fails_with = [](const CaseResult* r, const std::string& out, uint32_t check) {
    const Verdict* v = verdict(*r, out);
    return r->status() == CaseResult::Status::Fail && v && !v->pass && (v->failed & check);
  };

  // KV appended one row too far: rows [past, past + T) keep their junk and the row after the
  // last is overwritten; the whole caches are compared bit-exactly, in the multi-step cases at
  // every step ("k_cache@t<past>"), each of which appends wrongly.
  auto fails_every_step = [](const CaseResult* r, const std::string& out) {
    int decided = 0;
    for (const Verdict& v : r->outputs)
      if (v.output == out || v.output.starts_with(out + "@")) {
        ++decided;
        if (v.pass || !(v.failed & kElement)) return false;
      }
    return r->status() == CaseResult::Status::Fail && decided > 0;
  };
  ASSERT_FALSE(of_kernel(rs, "kv_append_past_plus_1").empty());
  for (const CaseResult* r : of_kernel(rs, "kv_append_past_plus_1")) {
    EXPECT_TRUE(fails_every_step(r, "k_cache")) << case_line(*r);
    EXPECT_TRUE(fails_every_step(r, "v_cache")) << case_line(*r);
  }

  // Causal mask off by one. Seeing the next token: a finite score where -inf is due (the Inf
  // rule), in every case with more than one token (a lone token has no next one in its row).
  for (const CaseResult* r : of_kernel(rs, "scores_sees_next")) {
    const bool multi = r->params.find("tokens=1 ") == std::string::npos;
    if (multi) {
      EXPECT_TRUE(fails_with(r, "scores", kSpecial)) << case_line(*r);
      EXPECT_GT(verdict(*r, "scores")->inf_mismatch, 0) << case_line(*r);
    }
  }
  EXPECT_FALSE(of_kernel(rs, "scores_sees_next", "T 3 past 30 G1 D31").empty());
  // Not seeing itself: -inf where a finite score is due, in every case.
  for (const CaseResult* r : of_kernel(rs, "scores_not_self")) {
    EXPECT_TRUE(fails_with(r, "scores", kSpecial)) << case_line(*r);
    EXPECT_GT(verdict(*r, "scores")->inf_mismatch, 0) << case_line(*r);
  }

  // GQA head h mapped to kv head h % Hkv instead of h / (H / Hkv): wrong keys wherever both
  // Hkv > 1 and G > 1 (G1 or Hkv1 layouts agree by accident).
  for (const char* shape : {"T 1 past 0 G2 D64", "T 64 past 0 G4 D67", "T 5 past 300 G2 D64 large scores"}) {
    ASSERT_FALSE(of_kernel(rs, "scores_gqa_mod", shape).empty()) << shape;
    for (const CaseResult* r : of_kernel(rs, "scores_gqa_mod", shape))
      EXPECT_TRUE(fails_with(r, "scores", kElement)) << case_line(*r);
  }
  for (const CaseResult* r : of_kernel(rs, "scores_gqa_mod", "T 3 past 30 G1 D31"))
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);

  // Softmax without max subtraction: exp overflows on the large scores, inf * (1 / inf) = NaN.
  ASSERT_FALSE(of_kernel(rs, "softmax_no_max", "T 5 past 300 G2 D64 large scores").empty());
  for (const CaseResult* r : of_kernel(rs, "softmax_no_max", "T 5 past 300 G2 D64 large scores")) {
    EXPECT_TRUE(fails_with(r, "probs", kSpecial)) << case_line(*r);
    EXPECT_GT(verdict(*r, "probs")->nan_found, 0) << case_line(*r);
  }
  // Online softmax whose lane sums are combined without their rescale exp(m_lane - M): a wrong
  // normaliser, every weight of the row off by the same factor (the norm ratio fails too).
  for (const char* shape : {"T 1 past 32 G3 D33", "T 33 past 257 G3 D1"}) {
    ASSERT_FALSE(of_kernel(rs, "softmax_no_rescale", shape).empty()) << shape;
    for (const CaseResult* r : of_kernel(rs, "softmax_no_rescale", shape)) {
      EXPECT_TRUE(fails_with(r, "probs", kElement)) << case_line(*r);
      EXPECT_TRUE(verdict(*r, "probs")->failed & kNormRatio) << case_line(*r);
    }
  }
  // 8 subgroups of 32 assumed: at smaller subgroups the max and the sum miss most partials
  // (rows of 258+ positions fill every subgroup); right at 32.
  ASSERT_FALSE(of_kernel(rs, "softmax_assumes_sg32", "T 33 past 257 G3 D1").empty());
  for (const CaseResult* r : of_kernel(rs, "softmax_assumes_sg32", "T 33 past 257 G3 D1")) {
    if (subgroup_of(*r) < 32) {
      EXPECT_TRUE(fails_with(r, "probs", kElement)) << case_line(*r);
    } else if (subgroup_of(*r) == 32) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }

  // Values over whole 32-channel blocks only: the head_dim remainder is never written.
  for (const char* shape : {"T 1 past 32 G3 D33", "T 33 past 257 G3 D1", "T 64 past 0 G4 D67"}) {
    ASSERT_FALSE(of_kernel(rs, "values_no_remainder", shape).empty()) << shape;
    for (const CaseResult* r : of_kernel(rs, "values_no_remainder", shape)) {
      EXPECT_TRUE(fails_with(r, "attn", kUnwritten)) << case_line(*r);
      EXPECT_GT(verdict(*r, "attn")->unwritten, 0);
    }
  }
  for (const CaseResult* r : of_kernel(rs, "values_no_remainder", "T 1 past 0 G2 D64"))
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);

  // The gate applied as attn * gate: beyond the ULP budget everywhere.
  ASSERT_FALSE(of_kernel(rs, "gate_no_sigmoid").empty());
  for (const CaseResult* r : of_kernel(rs, "gate_no_sigmoid")) EXPECT_TRUE(fails_with(r, "o", kElement)) << case_line(*r);
}

TEST(attn_compare, PlantedAppendBugIsCaughtByTheChainDecode) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Correct scores, softmax, values and gate after an append one row too far: in the decode
  // case the caches stay on the device, so the first step already leaves row past0 as junk
  // that every later step reads.
  const std::vector<CaseResult> rs = run(kData + "planted_attn_chain.json", "attention", "remainders", 1);
  const std::string shape = "decode 16 steps from past 0 G2 D33";
  bool seen = false;
  for (const CaseResult& r : rs) {
    if (r.shape != shape) continue;
    seen = true;
    EXPECT_EQ(r.status(), CaseResult::Status::Fail);
    const Verdict* kc = verdict(r, "k_cache@t0");
    const Verdict* o = verdict(r, "o@t0");
    ASSERT_TRUE(kc && o) << case_line(r) << " " << r.error;
    EXPECT_TRUE(!kc->pass && (kc->failed & kElement));
    EXPECT_TRUE(!o->pass && (o->failed & kElement)) << o->reason;
    EXPECT_FALSE(verdict(r, "o@t15")->pass);
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace moe::compare
