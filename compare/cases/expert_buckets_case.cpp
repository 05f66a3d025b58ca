#include <algorithm>
#include <cmath>
#include <string>

#include "compare/cases/case_util.h"
#include "core/rng.h"
#include "ops/expert_buckets.h"

namespace moe::compare {
namespace {

HostTensor int_tensor(ElemType type, const std::vector<int32_t>& v, bool output) {
  HostTensor t;
  t.type = type, t.elems = int64_t(v.size()), t.output = output;
  for (int32_t x : v) t.words.push_back(uint32_t(x));
  return t;
}

OutputSpec exact(const std::string& name) {
  OutputSpec s;
  s.name = name, s.kind = Kind::Exact;
  return s;
}

// Routing as a router produces it: K distinct experts per token, skewed towards a few hot
// experts (half the picks from the first max(K, E/16) experts), so buckets range from empty to
// holding most tokens. Weights: positive, renormalised per token, in the router's descending
// order. `specials` puts -0.0 and a subnormal among the weights (data movement must keep the
// sign of zero and must not flush denormals).
OpCase buckets_case(const std::string& label, int64_t tokens, int64_t k, int64_t experts, bool specials,
                    uint64_t seed) {
  ExpertBucketsParams p;
  p.tokens = tokens, p.k = k, p.experts = experts;
  OpCase c = new_case("expert_buckets", label, seed);
  set_vars(c, p);
  Rng rng = Rng(seed).fork(1);
  const int64_t hot = std::max<int64_t>(k, experts / 16);
  std::vector<int32_t> idx(size_t(tokens * k));
  std::vector<float> w(size_t(tokens * k));
  for (int64_t t = 0; t < tokens; ++t) {
    int32_t* it = idx.data() + t * k;
    for (int64_t j = 0; j < k; ++j) {
      for (;;) {
        const int32_t e = int32_t(rng.uniform01() < 0.5 ? rng.below(hot) : rng.below(experts));
        if (std::find(it, it + j, e) == it + j) {
          it[j] = e;
          break;
        }
      }
    }
    std::vector<float> v = rng.uniform_vec(k, 0.01f, 1.0f);
    std::sort(v.begin(), v.end(), [](float a, float b) { return a > b; });
    float s = 0;
    for (float x : v) s += x;
    for (int64_t j = 0; j < k; ++j) w[size_t(t * k + j)] = v[size_t(j)] / s;
  }
  if (specials && tokens * k >= 2) w[0] = -0.0f, w[size_t(tokens * k - 1)] = 0x1.0p-140f;
  ExpertBuckets b;
  expert_buckets_ref<double>(p, idx, w, b);

  // The dense layout of the kernel's contract: offsets over all experts (empty ones too).
  std::vector<int32_t> dense(size_t(experts + 1));
  size_t bucket = 0;
  for (int64_t e = 0; e <= experts; ++e) {
    while (bucket < b.expert_ids.size() && b.expert_ids[bucket] < e) ++bucket;
    dense[size_t(e)] = int32_t(b.offsets[bucket]);
  }
  c.tensors["idx"] = int_tensor(ElemType::I32, idx, false);
  c.tensors["w"] = f32_tensor(w);
  c.tensors["offsets"] = int_tensor(ElemType::U32, std::vector<int32_t>(dense.size(), 0), true);
  c.tensors["token_idx"] = int_tensor(ElemType::I32, std::vector<int32_t>(idx.size(), 0), true);
  c.tensors["weights"] = output_f32(tokens * k);
  // All exact: the op is data movement (integers and copied floats). A row order other than
  // the CPU op's (tokens ascending inside a bucket), a wrong offset, a weight computed instead of
  // copied (a lost -0.0, a flushed subnormal) is a wrong result, with no tolerance to argue.
  c.outputs["offsets"] = exact("offsets");
  c.truth["offsets"] = std::vector<double>(dense.begin(), dense.end());
  c.outputs["token_idx"] = exact("token_idx");
  c.truth["token_idx"] = std::vector<double>(b.token_idx.begin(), b.token_idx.end());
  set_exact_output(c, "weights", b.weights);
  return c;
}

}  // namespace

std::vector<OpCase> expert_buckets_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // One expert, one slot; K = E (every token in every bucket); odd E and K; rows that do not
    // fill the last chunk of a workgroup's lanes; more experts than a workgroup has lanes, with
    // runs.
    out.push_back(buckets_case("remainder T 1 K 1 E 1", 1, 1, 1, false, seed + 1));
    out.push_back(buckets_case("remainder T 5 K 3 E 3", 5, 3, 3, true, seed + 2));
    out.push_back(buckets_case("remainder T 33 K 3 E 7", 33, 3, 7, true, seed + 3));
    out.push_back(buckets_case("remainder T 67 K 5 E 67", 67, 5, 67, true, seed + 4));
    out.push_back(buckets_case("remainder T 100 K 7 E 1031", 100, 7, 1031, true, seed + 5));
    out.push_back(buckets_case("remainder T 2 K 200 E 257", 2, 200, 257, false, seed + 6));
    // One token (decode) with more experts than 512 and K above the models' 10 and Metal's 16.
    out.push_back(buckets_case("remainder T 1 K 17 E 1031", 1, 17, 1031, true, seed + 7));
    // E = K = 4096, the manifest's limit (tokens * k = 12288 <= 16384): every slot of the shared
    // counts is a routed expert's, the last one included (a counts array one short, or a loop
    // that stops one expert early, loses or corrupts the last expert's rows).
    out.push_back(buckets_case("edge T 3 K 4096 E 4096 (the limit)", 3, 4096, 4096, false, seed + 8));
  }
  if (real) {
    out.push_back(buckets_case("A17B decode K 10", 1, 10, 512, false, seed));
    out.push_back(buckets_case("A17B prefill 64 K 10", 64, 10, 512, false, seed + 1));
    out.push_back(buckets_case("A17B prefill 64 engine K 4", 64, 4, 512, false, seed + 2));
    out.push_back(buckets_case("A3B decode T 1 K 8", 1, 8, 256, false, seed + 5));
    out.push_back(buckets_case("A3B prefill 64 K 8", 64, 8, 256, false, seed + 3));
    out.push_back(buckets_case("A3B prefill 1024 K 8", 1024, 8, 256, false, seed + 4));
  }
  return out;
}

}  // namespace moe::compare
