#include "spec/expert_buckets_spec.h"

#include <algorithm>
#include <string>

#include "core/rng.h"

namespace moe {

ExpertBucketsInputs expert_buckets_inputs(const ExpertBucketsParams& p, uint64_t seed, bool specials) {
  const int64_t T = p.tokens, k = p.k, E = p.experts;
  Rng rng = Rng(seed).fork(1);
  const int64_t hot = std::max<int64_t>(k, E / 16);
  ExpertBucketsInputs in{std::vector<int32_t>(size_t(T * k)), std::vector<float>(size_t(T * k))};
  for (int64_t t = 0; t < T; ++t) {
    int32_t* it = in.idx.data() + t * k;
    for (int64_t j = 0; j < k; ++j) {
      for (;;) {
        const int32_t e = int32_t(rng.uniform01() < 0.5 ? rng.below(hot) : rng.below(E));
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
    for (int64_t j = 0; j < k; ++j) in.w[size_t(t * k + j)] = v[size_t(j)] / s;
  }
  if (specials && T * k >= 2) in.w[0] = -0.0f, in.w[size_t(T * k - 1)] = 0x1.0p-140f;
  return in;
}

std::vector<ExpertBucketsShape> expert_buckets_shapes(bool remainders, bool real) {
  std::vector<ExpertBucketsShape> out;
  auto add = [&](std::string label, int64_t T, int64_t K, int64_t E, bool specials, uint64_t offset, bool gpu = true) {
    out.push_back({std::move(label), {T, K, E}, offset, {specials, gpu}});
  };
  if (remainders) {
    add("remainder 1 token K 1 E 1", 1, 1, 1, false, 0);
    add("remainder 3 tokens K 3 E 4", 3, 3, 4, false, 1);
    add("every expert used, E = K 8", 5, 8, 8, false, 2);
    add("remainder 33 tokens K 3 E 67", 33, 3, 67, false, 3);
    add("no tokens", 0, 4, 16, false, 4, false);
    add("remainder T 1 K 1 E 1", 1, 1, 1, false, 1);
    add("remainder T 5 K 3 E 3", 5, 3, 3, true, 2);
    add("remainder T 33 K 3 E 7", 33, 3, 7, true, 3);
    add("remainder T 67 K 5 E 67", 67, 5, 67, true, 4);
    add("remainder T 100 K 7 E 1031", 100, 7, 1031, true, 5);
    add("remainder T 2 K 200 E 257", 2, 200, 257, false, 6);
    add("remainder T 1 K 17 E 1031", 1, 17, 1031, true, 7);
    // E = K = 4096, the manifest's limit (tokens * k = 12288 <= 16384): every slot of the shared
    // counts is a routed expert's, the last one included (a counts array one short, or a loop
    // that stops one expert early, loses or corrupts the last expert's rows).
    add("edge T 3 K 4096 E 4096 (the limit)", 3, 4096, 4096, false, 8);
  }
  if (real) {
    add("A17B 64 tokens K 10", 64, 10, 512, false, 10);
    add("A17B engine K 4, 128 tokens", 128, 4, 512, false, 11);
    add("A3B 256 tokens K 8", 256, 8, 256, false, 12);
    add("A17B decode K 10", 1, 10, 512, false, 0);
    add("A17B prefill 64 K 10", 64, 10, 512, false, 1);
    add("A17B prefill 64 engine K 4", 64, 4, 512, false, 2);
    add("A3B decode T 1 K 8", 1, 8, 256, false, 5);
    add("A3B prefill 64 K 8", 64, 8, 256, false, 3);
    add("A3B prefill 1024 K 8", 1024, 8, 256, false, 4);
  }
  return out;
}

}  // namespace moe
