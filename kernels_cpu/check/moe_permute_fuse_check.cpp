#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "core/params.h"
#include "core/rng.h"
#include "ops/moe_permute_fuse.h"
#include "ops/swiglu_expert.h"

namespace moe {

namespace {

CheckResult run_case(const char* label, const MoePermuteFuseParams& p, int64_t K, uint64_t seed) {
  Rng rng(seed);
  const int64_t T = p.tokens, d = p.hidden;
  // Routing: K distinct experts per token out of E, a few hot ones (shared buckets), weights
  // renormalised to sum 1.
  std::vector<int32_t> idx(T * K);
  std::vector<float> w(T * K);
  Rng rr = rng.fork(1);
  for (int64_t t = 0; t < T; ++t) {
    float sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      bool dup;
      do {
        idx[t * K + k] = int32_t(rr.uniform01() < 0.5 ? rr.below(std::min(2 * K, p.experts)) : rr.below(p.experts));
        dup = false;
        for (int64_t j = 0; j < k; ++j) dup |= idx[t * K + j] == idx[t * K + k];
      } while (dup);
      w[t * K + k] = rr.uniform(0.01f, 1.0f);
      sum += w[t * K + k];
    }
    for (int64_t k = 0; k < K; ++k) w[t * K + k] /= sum;
  }
  ExpertBuckets b;
  expert_buckets_ref<double>({T, K, p.experts}, idx, w, b);
  // A few distinct weight sets shared by the routed ids (memory and time stay small at real
  // shapes; the op never assumes distinct ids hold distinct weights). Unrouted ids stay empty.
  std::vector<ExpertStorage> stores;
  for (int s = 0; s < 3; ++s) stores.push_back(random_expert(rng.fork(10 + s), d, p.inter, p.bits));
  std::vector<ExpertWeights> experts(p.experts);
  for (int32_t id : b.expert_ids) experts[id] = stores[id % 3].view();
  const std::vector<float> x = rng.fork(2).activations(T * d);
  const std::vector<float> out0 = rng.fork(3).normal_vec(T * d, 1.0);  // pre-seeded accumulator

  std::vector<float> truth = out0, r32 = out0, fast = out0;
  CheckResult res{"moe_permute_fuse", label, params_to_string(p) + " k=" + std::to_string(K), seed};
  res.truth_seconds = time_call([&] { moe_permute_fuse_ref<double>(p, b, experts, x, truth); });
  res.ref32.seconds = time_call([&] { moe_permute_fuse_ref<float>(p, b, experts, x, r32); });
  res.fast.seconds = time_call([&] { moe_permute_fuse_fast(p, b, experts, x, fast); });

  // Error bound per element of token t (first order in u): each row's expert output e_r
  // differs from the truth's by at most the swiglu_expert bound B_r of that tier (derived in
  // check/swiglu_expert_check.cpp), weighted by |w_r|; the accumulation out0 + sum_r w_r e_r of
  // the K + 1 terms rounds at most K + 1 times on a term's path (one fma per row in the f32
  // tier; a product and a sum in the fast tier): gamma(K+1) (|out0| + sum |w_r| (|e_r| + B_r)),
  // |e_r| taken as the f64 exact value plus B_r. The truth accumulates in f64 (gamma64, below
  // 1e-15 relative) and rounds once: u |out|. kMinNormal32 floors results near underflow.
  const SwigluExpertParams sp{1, d, p.inter, p.bits};
  std::vector<double> b32(T * d, 0.0), bfast(T * d, 0.0), abs32(T * d), absfast(T * d);
  for (int64_t i = 0; i < T * d; ++i) abs32[i] = absfast[i] = std::fabs(double(out0[i]));
  std::map<std::pair<const uint32_t*, int64_t>, SwigluExpertBound> cache;
  for (size_t bi = 0; bi < b.expert_ids.size(); ++bi) {
    for (uint32_t r = b.offsets[bi]; r < b.offsets[bi + 1]; ++r) {
      const int64_t t = b.token_idx[r];
      const double wr = std::fabs(double(b.weights[r]));
      // The bound depends only on (weights, x_t): computed once per distinct pair.
      const uint32_t* wkey = experts[b.expert_ids[bi]].gate.w;
      auto it = cache.find({wkey, t});
      if (it == cache.end())
        it = cache.emplace(std::make_pair(wkey, t),
                           swiglu_expert_bound(sp, experts[b.expert_ids[bi]], std::span(x).subspan(t * d, d)))
                 .first;
      const SwigluExpertBound& eb = it->second;
      for (int64_t j = 0; j < d; ++j) {
        b32[t * d + j] += wr * eb.ref32[j];
        bfast[t * d + j] += wr * eb.fast[j];
        abs32[t * d + j] += wr * (std::fabs(eb.exact[j]) + eb.ref32[j]);
        absfast[t * d + j] += wr * (std::fabs(eb.exact[j]) + eb.fast[j]);
      }
    }
  }
  const double g = gamma_n(double(K + 1)), g64 = gamma_n(double(K + 1), 0x1.0p-53);
  for (int64_t i = 0; i < T * d; ++i) {
    const double tr = kU32 * std::fabs(double(truth[i])) + g64 * abs32[i] + kMinNormal32;
    b32[i] += g * abs32[i] + tr;
    bfast[i] += g * absfast[i] + tr;
  }
  res.ref32.add("out", truth, r32, b32);
  res.fast.add("out", truth, fast, bfast);
  return res;
}

}  // namespace

std::vector<CheckResult> moe_permute_fuse_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    out.push_back(run_case("remainder d 64 I 64 2-bit", {5, 64, 64, 2, 9}, 3, seed));
    out.push_back(run_case("remainder d 192 I 128 K 1", {7, 192, 128, 4, 5}, 1, seed + 1));
    out.push_back(run_case("remainder d 320 I 64 8-bit", {3, 320, 64, 8, 6}, 6, seed + 2));
    out.push_back(run_case("remainder 6 tokens K 10 of 12", {6, 64, 64, 4, 12}, 10, seed + 3));
  }
  if (scope_has_real(scope)) {
    // Every row costs a full expert (3 I d weights) per tier, so the real shapes keep few rows:
    // one A17B token with the engines' 4 experts, and an A3B chunk of 2 tokens with the
    // architectural 8 (hot experts make the two tokens share buckets). K = 10 with many
    // shared buckets is covered by the remainder case above.
    out.push_back(run_case("A17B 1 token engine K 4", {1, 4096, 1024, 4, 512}, 4, seed + 10));
    out.push_back(run_case("A3B 2 tokens K 8", {2, 2048, 512, 4, 256}, 8, seed + 12));
  }
  return out;
}

}  // namespace moe
