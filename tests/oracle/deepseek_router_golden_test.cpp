// router_noaux against HuggingFace's DeepseekV3MoE routing (fixtures/golden/deepseek_router):
// 16 experts in 4 groups, topk_group 2, top-4, routed scaling 2.5, for 64 tokens with a small
// correction bias and 64 with a negative one (~ -0.9, where HF's -inf group masking and the older
// 0.0 masking choose differently).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "oracle/safetensors.h"
#include "ops/router_noaux.h"
#include "test_util.h"

namespace moe {
namespace {

template <class T>
std::vector<T> read(const SafetensorsFile& f, const std::string& name) {
  const TensorInfo* t = f.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<T> v(size_t(t->numel()));
  std::memcpy(v.data(), t->data, v.size() * sizeof(T));
  return v;
}

TEST(deepseek_router, MatchesHf) {
  const SafetensorsFile f(std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_router/golden.safetensors");
  for (const char* tag : {"small_bias", "negative_bias"}) {
    const std::string t = tag;
    const auto logits = read<float>(f, t + ".logits"), bias = read<float>(f, t + ".bias"),
               hf_w = read<float>(f, t + ".weight");
    const auto hf_idx = read<int32_t>(f, t + ".idx");
    RouterNoauxParams p;
    p.tokens = 64, p.experts = 16, p.k = 4, p.n_group = 4, p.topk_group = 2, p.routed_scaling_factor = 2.5f;
    std::vector<int32_t> idx(64 * 4);
    std::vector<float> w(64 * 4);
    for (int tier = 0; tier < 3; ++tier) {
      if (tier == 0) router_noaux_ref<double>(p, logits, bias, idx, w);
      if (tier == 1) router_noaux_ref<float>(p, logits, bias, idx, w);
      if (tier == 2) router_noaux_fast(p, logits, bias, idx, w);
      for (int64_t r = 0; r < 64; ++r) {
        // HF returns its top-k unsorted: compare as sets, weights paired by expert id.
        std::map<int32_t, float> want, got;
        for (int k = 0; k < 4; ++k) want[hf_idx[r * 4 + k]] = hf_w[r * 4 + k], got[idx[r * 4 + k]] = w[r * 4 + k];
        // (A loop, not std::views::keys: clang 14 with GCC 12's <ranges>, the TSan build, rejects it.)
        auto keys = [](const std::map<int32_t, float>& m) {
          std::set<int32_t> s;
          for (const auto& kv : m) s.insert(kv.first);
          return s;
        };
        ASSERT_EQ(keys(want), keys(got))
            << tag << " token " << r << " tier " << tier;
        // HF computes in fp32 (sigmoid, sum, divide, scale: a few ulp of 2.5); 1e-6 absolute is
        // ~4 ulp at the largest weight (2.5) and far below any routing error.
        for (const auto& [e, wv] : want) EXPECT_NEAR(got[e], wv, 1e-6) << tag << " token " << r << " expert " << e;
      }
    }
  }
}

}  // namespace
}  // namespace moe
