// The routing kernels (router_topk, router_noaux, argmax, expert_buckets) end to end on the
// default Vulkan device: the bundled kernels pass every case at every subgroup size the device
// offers, and each planted bug (tests/vulkan/data/planted_route*) is caught by the criterion
// that exists for it.
#include <algorithm>
#include <map>
#include <set>

#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device, test::kData, test::of_kernel, test::verdict;

const char* kOps = "router_topk,router_noaux,argmax,expert_buckets";

std::vector<CaseResult> run(const std::string& manifest, int seeds, uint64_t seed = 1) {
  return test::run(manifest, kOps, "all", seeds, seed);
}

bool failed_with(const CaseResult& r, const std::string& output, uint32_t check) {
  const Verdict* v = verdict(r, output);
  return v && !v->pass && (v->failed & check);
}

TEST(route_compare, BundledKernelsPassAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run("", 2);
  std::map<std::string, std::set<uint32_t>> sizes;  // per op, the subgroup sizes that ran
  std::map<std::string, int> passed;
  for (const CaseResult& r : rs) {
    EXPECT_NE(r.status(), CaseResult::Status::Fail) << case_line(r) << " " << r.error;
    EXPECT_NE(r.status(), CaseResult::Status::Skip) << case_line(r) << " " << r.skip_reason;  // none outside limits
    if (r.status() == CaseResult::Status::Pass) ++passed[r.op], sizes[r.op].insert(r.subgroup);
  }
  const vk::DeviceInfo info = vk::Context("").info();
  const size_t n_sizes = info.subgroup_size_control ? info.subgroup_sizes().size() : 1;
  for (const char* op : {"router_topk", "router_noaux", "argmax", "expert_buckets"}) {
    EXPECT_EQ(sizes[op].size(), n_sizes) << op;
    EXPECT_GE(passed[op], 2 * 8) << op;  // at least 8 cases per op and seed
  }
}

// The planted router_topk bugs: the (K+1)-th expert, no renormalisation, softmax over the K chosen.
void expect_topk_bugs_caught(const std::vector<CaseResult>& rs) {
  // The (K+1)-th expert in place of the K-th: the index set differs by more than a near-tie.
  // Every case with K < E and no tie at the K-th place fails on idx with kIndexSet; at least
  // the Gaussian ones must, and no case with K == E can (there is no (K+1)-th).
  int k1 = 0;
  for (const CaseResult* r : of_kernel(rs, "topk_k_plus_1")) {
    if (failed_with(*r, "idx", kIndexSet)) ++k1;
    if (r->params.find("experts=1 ") != std::string::npos) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
    }
  }
  EXPECT_GE(k1, 8);

  // No renormalisation: renormalised cases with K < E fail on w (elements over their bound);
  // the cases with renormalize=0 pass (the kernel is right there).
  for (const CaseResult* r : of_kernel(rs, "topk_no_renorm")) {
    const bool renorm = r->params.find("renormalize=1") != std::string::npos;
    const bool all = r->shape.find("E 1 K 1") != std::string::npos || r->shape.find("E 7 K 7") != std::string::npos;
    if (!renorm || all) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
    } else {
      EXPECT_TRUE(failed_with(*r, "w", kElement)) << case_line(*r);
    }
  }

  // Softmax over the K chosen only: equal to the renormalised weights, so renormalised cases
  // pass; every case with renormalize=0 and K < E fails on w (K = E: the same softmax).
  int soft = 0;
  for (const CaseResult* r : of_kernel(rs, "topk_softmax_of_topk")) {
    const bool renorm = r->params.find("renormalize=1") != std::string::npos;
    if (renorm) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
    } else if (r->shape.find("E 7 K 7") == std::string::npos && r->shape.find("E 1 K 1") == std::string::npos) {
      EXPECT_TRUE(failed_with(*r, "w", kElement)) << case_line(*r);
      ++soft;
    }
  }
  EXPECT_GE(soft, 3);
}

// The planted overflow bugs: each right on every case of ordinary logits, wrong only where exp
// overflows or underflows (the large-logit cases; docs/mutate.md "Extreme values").
void expect_overflow_bugs_caught(const std::vector<CaseResult>& rs) {
  // The softmax's max shift dropped (exp(x)) or its sign flipped (exp(x + m)), consistently in
  // the sum and the chosen weights: the common factor cancels, so every case with logits of
  // ordinary size passes (the 2026-12-05 record: 20 seeds at subgroup sizes 4, 8, 16). Only the
  // large-logit cases catch them: exp overflows at max >= 80 (inf / inf) and underflows at
  // max <= -100 (0 / 0): NaN probabilities where the truth is finite, which leave the kernel's
  // slot ranking undefined (most slots never written, the rest NaN).
  for (const char* kernel : {"topk_softmax_plus_max", "topk_softmax_no_shift"}) {
    int large = 0;
    for (const CaseResult* r : of_kernel(rs, kernel)) {
      if (r->shape.find("large logits") == std::string::npos) {
        EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
        continue;
      }
      EXPECT_TRUE(failed_with(*r, "w", kSpecial | kUnwritten)) << case_line(*r);
      ++large;
    }
    EXPECT_EQ(large, 3) << kernel;  // two remainder shapes and A17B
  }

  // router_noaux's sigmoid as exp(x) / (1 + exp(x)) for every finite x (the bundled kernel takes
  // 1 / (1 + exp(-x)) for x >= 0): right wherever exp(x) is finite, inf / inf = NaN past 88.7.
  // Only the logits of 100 catch it: NaN scores, no valid selection (idx) or weights (w).
  int noaux = 0;
  for (const CaseResult* r : of_kernel(rs, "noaux_sigmoid_exp_form")) {
    if (r->shape.find("large logits") == std::string::npos) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
      continue;
    }
    EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
    ++noaux;
  }
  EXPECT_EQ(noaux, 1);
}

// The planted argmax and expert_buckets bugs.
void expect_argmax_and_bucket_bugs_caught(const std::vector<CaseResult>& rs) {
  // argmax returning the last of tied maxima: every case with 2+ elements and tie rows (all
  // but the 1-row decode: kind 5, all -inf, is a tie, and the 4-row case has kinds 1 and 3)
  // fails on idx as a set mismatch; one element per row leaves nothing to tie.
  for (const CaseResult* r : of_kernel(rs, "argmax_last_tie")) {
    const std::string& pr = r->params;
    const bool no_ties = pr.find("rows=1 ") != std::string::npos || pr.size() < 4 || pr.compare(pr.size() - 4, 4, " n=1") == 0;
    if (no_ties) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
    } else {
      EXPECT_TRUE(failed_with(*r, "idx", kIndexSet)) << case_line(*r);
    }
  }

  // Buckets with rows in descending token order: offsets are right, token_idx is not
  // bit-equal wherever a bucket holds two tokens of one chunk (not with 1 token, nor with
  // K = 200, where a chunk is one token).
  int misplaced = 0;
  for (const CaseResult* r : of_kernel(rs, "buckets_reversed")) {
    const Verdict* off = verdict(*r, "offsets");
    ASSERT_NE(off, nullptr);
    EXPECT_TRUE(off->pass) << case_line(*r);
    if (failed_with(*r, "token_idx", kElement)) ++misplaced;
  }
  EXPECT_GE(misplaced, 8);

}

// Weights paired with the wrong experts (router_topk), and noaux weights from the biased scores.
void expect_weight_bugs_caught(const std::vector<CaseResult>& rs) {
  // idx written in ascending expert order while w stays in descending weight order: the right
  // set and the right sorted weights, but weights paired with the wrong experts. idx passes;
  // w fails by the pairing rule wherever the two orders differ (not with K = 1).
  int paired = 0;
  for (const CaseResult* r : of_kernel(rs, "topk_idx_ascending")) {
    const Verdict* idx = verdict(*r, "idx");
    ASSERT_NE(idx, nullptr);
    EXPECT_TRUE(idx->pass) << case_line(*r);
    const Verdict* w = verdict(*r, "w");
    ASSERT_NE(w, nullptr);
    if (!w->pass) {
      EXPECT_NE(w->reason.find("not paired with their experts"), std::string::npos) << w->reason;
      ++paired;
    }
  }
  EXPECT_GE(paired, 8);

  // noaux weights from the biased scores: w over its bounds in every case with a non-zero
  // bias (the tie and all-equal cases have bias 0, and K = 1 renormalised gives rsf either way:
  // they pass); idx is right everywhere.
  int biased = 0;
  for (const CaseResult* r : of_kernel(rs, "noaux_biased_weights")) {
    const Verdict* idx = verdict(*r, "idx");
    ASSERT_NE(idx, nullptr);
    EXPECT_TRUE(idx->pass) << case_line(*r);
    if (r->shape.find("ties") != std::string::npos || r->shape.find("all equal") != std::string::npos ||
        r->shape.find("E 2 K 1 ") != std::string::npos) {
      EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r);
    } else {
      EXPECT_TRUE(failed_with(*r, "w", kElement)) << case_line(*r);
      ++biased;
    }
  }
  EXPECT_GE(biased, 8);
}

TEST(route_compare, PlantedBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_route.json", 1);
  expect_topk_bugs_caught(rs);
  expect_argmax_and_bucket_bugs_caught(rs);
  expect_weight_bugs_caught(rs);
  expect_overflow_bugs_caught(rs);
}

}  // namespace
}  // namespace moe::compare
