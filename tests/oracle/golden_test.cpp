// The oracle against HuggingFace transformers (fixtures/golden, made by
// fixtures/hf_golden/make_golden.py): every tap and the logits of the tiny Qwen3.5-MoE and
// Qwen3-Next models for 80 tokens.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/gguf_convert.h"
#include "oracle/safetensors.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kGolden = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/";

// Our tap name for a golden (HF module path) name; "" where we have no such tap.
std::string our_name(const std::string& g) {
  static const std::map<std::string, std::string> suffix = {
      {".linear_attn.norm.in", ".linear_attn.recurrence"},  // delta-rule output, before the gated norm
      {".linear_attn.out_proj.in", ".linear_attn.norm"},    // gated-norm output
      {".self_attn.o_proj.in", ".self_attn.attn"},          // gated attention output
      {".self_attn.v_proj.out", ".self_attn.v"},
  };
  for (const auto& [from, to] : suffix)
    if (g.size() > from.size() && g.compare(g.size() - from.size(), from.size(), from) == 0)
      return g.substr(0, g.size() - from.size()) + to;
  for (const char* skip : {"tokens", ".margin", ".experts.idx", ".experts.weight", "in_proj_a.out", "in_proj_b.out",
                           ".self_attn.q_proj.out", ".self_attn.k_proj.out", "in_proj_qkvz.out", "in_proj_ba.out"})
    if (g.find(skip) != std::string::npos) return "";
  return g;
}

std::vector<float> as_f32(const TensorInfo& t) {
  EXPECT_EQ(t.dtype, DType::F32) << t.name;
  std::vector<float> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

struct GoldenRun {
  std::unique_ptr<Model> model;
  std::unique_ptr<SafetensorsFile> golden;
  std::vector<int32_t> tokens;
  std::unique_ptr<DumpSink> dump;
};

// `model`: the checkpoint to run ("": the golden's own MLX directory).
GoldenRun run_golden(const std::string& name, const std::string& golden, const std::string& backend, bool decode,
                     QkNormEps eps, const std::string& model) {
  GoldenRun r;
  r.model = Model::load(model.empty() ? kGolden + name : model);
  r.golden = std::make_unique<SafetensorsFile>(kGolden + name + "/" + golden);
  const TensorInfo& tok = *r.golden->find("tokens");
  r.tokens.resize(size_t(tok.numel()));
  std::memcpy(r.tokens.data(), tok.data, r.tokens.size() * 4);
  auto be = make_cpu_backend(backend);
  ForwardOptions fo;
  fo.qk_norm_eps = eps;
  Forward fwd(*r.model, *be, fo);
  ModelState st = ModelState::make(r.model->config(), int64_t(r.tokens.size()));
  r.dump = std::make_unique<DumpSink>(std::vector<std::string>{});
  if (decode) {
    for (size_t t = 0; t < r.tokens.size(); ++t) fwd.run(std::span(r.tokens).subspan(t, 1), st, r.dump.get());
  } else {
    fwd.run(r.tokens, st, r.dump.get());
  }
  return r;
}

// Every golden tap within `rel` (max |ours - HF| / max |HF| per tap), expert sets equal per token
// except on near-ties (the golden's k-th vs (k+1)-th probability gap below `tie`).
void expect_matches_golden(const std::string& name, const std::string& golden, const std::string& backend, bool decode,
                           double rel, QkNormEps eps = QkNormEps::Hf, const std::string& model = "") {
  GoldenRun r = run_golden(name, golden, backend, decode, eps, model);
  // One file per process: ctest runs this file's tests in parallel processes, and two of them
  // dump the same model and backend (a shared name raced: one's rename took the other's file).
  const std::string path = "/tmp/moeoracle_golden_" + name + "_" + backend + "_" + std::to_string(::getpid()) +
                           ".safetensors";
  r.dump->write(path, {});
  SafetensorsFile ours(path);
  std::remove(path.c_str());  // the open file stays readable
  int compared = 0;
  double worst = 0;
  std::string worst_tap;
  for (const std::string& g : r.golden->names_in_file_order()) {
    const std::string o = our_name(g);
    if (o.empty()) continue;
    const TensorInfo* mine = ours.find(o);
    ASSERT_NE(mine, nullptr) << "no tap '" << o << "' for golden '" << g << "'";
    const TensorInfo& gt = *r.golden->find(g);
    ASSERT_EQ(mine->numel(), gt.numel()) << g;
    const std::vector<float> a = as_f32(gt), b = as_f32(*mine);
    double maxd = 0, maxa = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(std::isfinite(b[i])) << o << "[" << i << "]";
      maxd = std::max(maxd, std::fabs(double(a[i]) - b[i])), maxa = std::max(maxa, std::fabs(double(a[i])));
    }
    const double e = maxd / maxa;
    EXPECT_LE(e, rel) << name << " " << backend << ": tap " << o << " (golden " << g << ")";
    if (e > worst) worst = e, worst_tap = o;
    ++compared;
  }
  EXPECT_GT(compared, 30);
  // Expert sets.
  const ModelConfig& c = r.model->config();
  const double tie = 1e-5;  // probability gap under which either expert is an acceptable choice
  const SafetensorsFile margins(kGolden + name + "/golden.safetensors");  // routing margins live here
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string L = "model.layers." + std::to_string(i) + ".mlp.";
    const TensorInfo* gi = r.golden->find(L + "experts.idx");
    const TensorInfo* mi = ours.find(L + "experts.idx");
    ASSERT_TRUE(gi && mi) << L;
    const TensorInfo* mp = margins.find(L + "gate.margin");
    ASSERT_NE(mp, nullptr) << L;
    const TensorInfo& margin = *mp;
    const int64_t K = c.experts_per_tok;
    for (int64_t t = 0; t < int64_t(r.tokens.size()); ++t) {
      std::set<int32_t> want, got;
      for (int64_t k = 0; k < K; ++k) {
        int32_t a, b;
        std::memcpy(&a, gi->data + 4 * (t * K + k), 4), std::memcpy(&b, mi->data + 4 * (t * K + k), 4);
        want.insert(a), got.insert(b);
      }
      float m;
      std::memcpy(&m, margin.data + 4 * t, 4);
      if (m >= tie) {
        EXPECT_EQ(want, got) << name << " " << backend << " layer " << i << " token " << t;
      }
    }
  }
  std::printf("%s%s vs %s, %s %s: %d taps, worst %.3g at %s\n", name.c_str(), model.empty() ? "" : " (GGUF)",
              golden.c_str(), backend.c_str(), decode ? "decode" : "prefill", compared, worst, worst_tap.c_str());
}

// The truth tier (f64) against HF, both families, prefill and decode: within 1e-5 of max|tap|
// for every tap, against HF's fp32 forward (the golden the issue asks for; HF fp32 itself is
// within 8.4e-6 of HF float64 on these models, fixtures/golden/provenance.json) and against HF's
// float64 forward (our activations are stored in f32 between ops, 6e-8 each, amplified over 4
// layers to a measured ~7e-6 worst case). A wrong formula anywhere moves some tap by >= 1e-3.
TEST(golden, TruthMatchesHf) {
  for (const char* m : {"qwen3_5_moe_tiny", "qwen3_next_tiny"})
    for (const char* g : {"golden.safetensors", "golden_f64.safetensors"})
      for (bool decode : {false, true}) expect_matches_golden(m, g, "ref64", decode, 1e-5);
}

// The engines' q/k normalisation (rms_norm with eps 1e-6, i.e. 1e-6 * dk inside the sum of squares)
// is not HF's l2norm (1e-6 inside): on these models the difference reaches 2e-5 relative, so the
// truth follows HF and the engine convention is an option. This test pins that the option exists
// and that HF's convention is the closer one.
TEST(golden, EngineQkEpsIsAnOptionNotTheTruth) {
  expect_matches_golden("qwen3_5_moe_tiny", "golden_f64.safetensors", "ref64", false, 1e-4, QkNormEps::Engine);
}

// The f32 tiers accumulate in f32 in their own orders (engine order, Eigen/OpenBLAS blocking);
// measured <= 7.1e-6 worst (fast decode, Qwen3.5); 3e-5 keeps 4x headroom and catches any formula error.
TEST(golden, F32TiersMatchHf) {
  for (const char* m : {"qwen3_5_moe_tiny", "qwen3_next_tiny"})
    for (const char* b : {"ref32", "fast"}) {
      expect_matches_golden(m, "golden_f64.safetensors", b, false, 3e-5);
      expect_matches_golden(m, "golden_f64.safetensors", b, true, 3e-5);
    }
}

// The same models converted to GGUF (oracle/gguf_convert.h: q4_1 for the 4-bit matrices, f32 for
// the 8-bit router and gates, value heads tiled and ssm_a = -exp(A_log) as llama.cpp writes them)
// and run from the GGUF: held to the same bounds as from MLX, every tier.
TEST(golden, GgufConversionMatchesHf) {
  test::Scratch dir("golden_gguf");
  std::filesystem::create_directories(dir.dir);
  for (const char* m : {"qwen3_5_moe_tiny", "qwen3_next_tiny"}) {
    const std::string gguf = (dir.dir / (std::string(m) + ".gguf")).string();
    write_gguf_model(*Model::load(kGolden + m), gguf);
    for (bool decode : {false, true}) {
      expect_matches_golden(m, "golden.safetensors", "ref64", decode, 1e-5, QkNormEps::Hf, gguf);
      expect_matches_golden(m, "golden_f64.safetensors", "ref64", decode, 1e-5, QkNormEps::Hf, gguf);
      for (const char* b : {"ref32", "fast"}) expect_matches_golden(m, "golden_f64.safetensors", b, decode, 3e-5, QkNormEps::Hf, gguf);
    }
  }
}

}  // namespace
}  // namespace moe
