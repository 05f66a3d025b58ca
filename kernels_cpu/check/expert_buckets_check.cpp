#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/expert_buckets.h"

namespace moe {

namespace {

// Routing as a router produces it: K distinct experts per token drawn with a skew (a few hot
// experts, as real routers have), weights positive and renormalised to sum 1.
void random_routing(Rng rng, const ExpertBucketsParams& p, std::vector<int32_t>& idx, std::vector<float>& w) {
  idx.assign(p.tokens * p.k, 0);
  w.assign(p.tokens * p.k, 0.0f);
  for (int64_t t = 0; t < p.tokens; ++t) {
    float sum = 0;
    for (int64_t k = 0; k < p.k; ++k) {
      int32_t e;
      bool dup;
      do {  // squaring a uniform favours low ids: hot experts
        const double u = rng.uniform01();
        e = int32_t(std::min<int64_t>(p.experts - 1, int64_t(u * u * double(p.experts))));
        if (rng.uniform01() < 0.5) e = int32_t(rng.below(p.experts));
        dup = false;
        for (int64_t j = 0; j < k; ++j) dup |= idx[t * p.k + j] == e;
      } while (dup);
      idx[t * p.k + k] = e;
      w[t * p.k + k] = rng.uniform(0.01f, 1.0f);
      sum += w[t * p.k + k];
    }
    for (int64_t k = 0; k < p.k; ++k) w[t * p.k + k] /= sum;
  }
}

void compare(TierReport& rep, const ExpertBuckets& truth, const ExpertBuckets& b) {
  rep.add_exact("expert_ids", truth.expert_ids, b.expert_ids);
  const std::vector<int32_t> o1(truth.offsets.begin(), truth.offsets.end()), o2(b.offsets.begin(), b.offsets.end());
  rep.add_exact("offsets", o1, o2);
  rep.add_exact("token_idx", truth.token_idx, b.token_idx);
  // Data movement: bound 0 demands bit-equality (and equal sizes).
  rep.add("weights", truth.weights, b.weights, 0.0);
}

CheckResult run_case(const char* label, const ExpertBucketsParams& p, uint64_t seed) {
  std::vector<int32_t> idx;
  std::vector<float> w;
  random_routing(Rng(seed), p, idx, w);
  ExpertBuckets truth, r32, fast;
  CheckResult res{"expert_buckets", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { expert_buckets_ref<double>(p, idx, w, truth); });
  res.ref32.seconds = time_call([&] { expert_buckets_ref<float>(p, idx, w, r32); });
  res.fast.seconds = time_call([&] { expert_buckets_fast(p, idx, w, fast); });
  compare(res.ref32, truth, r32);
  compare(res.fast, truth, fast);
  return res;
}

}  // namespace

std::vector<CheckResult> expert_buckets_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    out.push_back(run_case("remainder 1 token K 1 E 1", {1, 1, 1}, seed));
    out.push_back(run_case("remainder 3 tokens K 3 E 4", {3, 3, 4}, seed + 1));
    out.push_back(run_case("every expert used, E = K 8", {5, 8, 8}, seed + 2));
    out.push_back(run_case("remainder 33 tokens K 3 E 67", {33, 3, 67}, seed + 3));
    out.push_back(run_case("no tokens", {0, 4, 16}, seed + 4));
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B 64 tokens K 10", {64, 10, 512}, seed + 10));
    out.push_back(run_case("A17B engine K 4, 128 tokens", {128, 4, 512}, seed + 11));
    out.push_back(run_case("A3B 256 tokens K 8", {256, 8, 256}, seed + 12));
  }
  return out;
}

}  // namespace moe
