// Prefill then decode equals decode all the way; the experts-per-token override; taps and dumps.
#include <cmath>
#include <cstring>
#include <filesystem>

#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/safetensors.h"
#include "oracle/synth.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kModel = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/qwen3_5_moe_tiny";
const std::vector<int32_t> kTokens{11, 400, 3, 77, 250, 9, 140, 511, 2, 68, 33, 300, 5, 190};

std::vector<float> run_split(const Model& m, const char* backend, size_t prefill) {
  auto be = make_cpu_backend(backend);
  Forward f(m, *be);
  ModelState st = ModelState::make(m.config(), int64_t(kTokens.size()));
  std::vector<float> all;
  if (prefill > 0) all = f.run(std::span(kTokens).first(prefill), st);
  for (size_t t = prefill; t < kTokens.size(); ++t) {
    auto l = f.run(std::span(kTokens).subspan(t, 1), st);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

TEST(forward, PrefillThenDecodeEqualsDecode) {
  auto m = Model::load(kModel);
  // The scalar tiers compute each token of a prefill with exactly the per-token arithmetic of a
  // decode step (matmul rows = matvecs, the recurrence token by token), so they agree bit for bit.
  for (const char* backend : {"ref64", "ref32"}) {
    const auto a = run_split(*m, backend, 0), b = run_split(*m, backend, 9);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << backend;
  }
  // The fast tier batches prefill projections (matmul_q_fast's tiles), which sums in another
  // order: each logit may move by a few f32 ulps of the dot products feeding it, amplified
  // through 4 layers. The bound 1e-4 of max|logit| is the one the golden test allows the fast
  // tier against HF.
  const auto a = run_split(*m, "fast", 0), b = run_split(*m, "fast", 9);
  double maxd = 0, maxa = 0;
  for (size_t i = 0; i < a.size(); ++i) maxd = std::max(maxd, double(std::fabs(a[i] - b[i]))), maxa = std::max(maxa, double(std::fabs(a[i])));
  EXPECT_LE(maxd / maxa, 1e-4);
}

TEST(forward, ExpertsPerTokenOverride) {
  auto m = Model::load(kModel);
  auto be = make_cpu_backend("ref32");
  ForwardOptions o;
  o.experts_per_tok = 1;
  Forward f(*m, *be, o);
  EXPECT_EQ(f.experts_per_tok(), 1);
  ModelState st = ModelState::make(m->config(), 4);
  DumpSink dump({"*.experts.idx"});
  f.run(std::span(kTokens).first(4), st, &dump);
  const std::string path = (std::filesystem::temp_directory_path() / "moeoracle_k1.safetensors").string();
  dump.write(path, {});
  SafetensorsFile s(path);
  EXPECT_EQ(s.find("model.layers.0.mlp.experts.idx")->shape, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(s.tensors().size(), 4u);  // only the globbed taps
  std::filesystem::remove(path);
  ForwardOptions bad;
  bad.experts_per_tok = 9;
  test::expect_error([&] { Forward(*m, *be, bad); }, "experts per token 9 out of range [1, 8]");
}

TEST(forward, SyntheticFixtureIsDeterministicAndRuns) {
  namespace fs = std::filesystem;
  const fs::path a = fs::temp_directory_path() / "moeoracle_synth_a", b = fs::temp_directory_path() / "moeoracle_synth_b";
  write_synthetic_mlx(synthetic_preset("tiny"), 5, a.string());
  write_synthetic_mlx(synthetic_preset("tiny"), 5, b.string());
  SafetensorsFile fa((a / "model.safetensors").string()), fb((b / "model.safetensors").string());
  ASSERT_EQ(fa.tensors().size(), fb.tensors().size());
  for (const auto& [name, t] : fa.tensors())
    EXPECT_EQ(std::memcmp(t.data, fb.find(name)->data, t.bytes), 0) << name;
  auto m = Model::load(a.string());
  auto be = make_cpu_backend("fast");
  Forward f(*m, *be);
  ModelState st = ModelState::make(m->config(), 4);
  const auto logits = f.run(std::span(kTokens).first(4), st);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  fs::remove_all(a), fs::remove_all(b);
}

}  // namespace
}  // namespace moe
