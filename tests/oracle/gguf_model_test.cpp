// GGUF models (oracle/model_gguf.cpp, oracle/gguf_convert.h): the golden MLX models written as
// GGUF and loaded back hold the same weights and config, and run to the same taps in every tier
// (bit for bit in the scalar tiers wherever ssm_a = -exp(A_log) gives back A_log); bad files are
// refused with a message naming the file and the tensor or key.
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/gguf.h"
#include "oracle/gguf_convert.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kGolden = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/";

std::string config_text(const ModelConfig& c) {
  std::ostringstream s;
  c.visit([&](const char* k, const auto& v) { s << k << '=' << v << ' '; });
  for (size_t i = 0; i < c.layer_kinds.size(); ++i) s << int(c.layer_kinds[i]) << int(c.layer_moe[i]);
  s << " tie=" << c.tie_word_embeddings << " topk_norm=" << c.norm_topk_prob << " dense=" << c.dense_inter;
  return s.str();
}

std::map<std::string, DumpSink::Tensor> taps(const Model& m, const std::string& backend, std::span<const int32_t> tokens) {
  auto be = make_cpu_backend(backend);
  Forward fwd(m, *be);
  ModelState st = ModelState::make(m.config(), int64_t(tokens.size()));
  DumpSink sink({});
  fwd.run(tokens, st, &sink);
  std::map<std::string, DumpSink::Tensor> out;
  for (auto& [name, t] : sink.take()) out.emplace(name, std::move(t));
  return out;
}

// How many of the model's A_log values do not survive f32 -exp then log (the one lossy conversion).
int64_t a_log_round_trips(const Model& m) {
  int64_t n = 0, ok = 0;
  for (int64_t i = 0; i < m.config().layers; ++i) {
    if (m.layer(i).kind != LayerKind::Linear) continue;
    for (float a : m.layer(i).lin.A_log) {
      ++n;
      ok += float(std::log(-double(float(-std::exp(double(a)))))) == a;
    }
  }
  return n - ok;
}

class GgufModel : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufModel, SameConfigWeightsAndTapsAsMlx) {
  test::Scratch dir("gguf_model");
  std::filesystem::create_directories(dir.dir);
  const std::string gguf = (dir.dir / "m.gguf").string();
  const auto mlx = Model::load(kGolden + GetParam());
  write_gguf_model(*mlx, gguf);
  const auto g = Model::load(gguf);
  ASSERT_TRUE(g->is_gguf());
  EXPECT_EQ(config_text(g->config()), config_text(mlx->config()));
  // Every weight: the 4-bit matrices became q4_1 with the same exact values, the 8-bit router and
  // gates f32 (exact); checked through the embedding rows and the expert outputs below.
  const int64_t d = mlx->config().hidden;
  std::vector<float> a(static_cast<size_t>(d)), b(a.size());
  for (int32_t id : {0, 1, 77, int32_t(mlx->config().vocab - 1)}) {
    embedding_ref<double>({1, mlx->config().vocab, d, mlx->embed().q.bits, mlx->embed().q.group_size}, mlx->embed().q,
                          std::span(&id, 1), a);
    dequant_ggml_ref<double>({g->embed().g.type, 1, d}, g->embed().g.row_block(id, 1), b);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "embedding row " << id;
  }
  // Every A_log of the golden models survives it, so the scalar tiers can be held to the bit below.
  const int64_t lossy = a_log_round_trips(*mlx);
  ASSERT_EQ(lossy, 0) << "an A_log of " << GetParam() << " does not survive ssm_a = -exp(A_log) in f32";
  // Qwen3.5 with fewer key than value heads: out_proj's columns are in the file's tiled order, so
  // its f32 dot products sum in another order (the f64 sums round to the same f32 values here).
  const ModelConfig& c = mlx->config();
  const bool tiled = c.family == Family::Qwen3_5Moe && c.lin_k_heads != c.lin_v_heads;
  std::vector<int32_t> tokens;
  for (int32_t t = 0; t < 24; ++t) tokens.push_back((t * 37 + 5) % int32_t(mlx->config().vocab));
  double worst = 0;
  for (const char* backend : {"ref64", "ref32", "fast"}) {
    const auto want = taps(*mlx, backend, tokens), got = taps(*g, backend, tokens);
    ASSERT_EQ(want.size(), got.size());
    for (const auto& [name, t] : want) {
      const DumpSink::Tensor& u = got.at(name);
      double maxd = 0, maxa = 0;
      for (size_t i = 0; i < t.f.size(); ++i)
        maxd = std::max(maxd, std::fabs(double(t.f[i]) - u.f[i])), maxa = std::max(maxa, std::fabs(double(t.f[i])));
      if (t.is_int) {
        EXPECT_EQ(t.i, u.i) << backend << " " << name;
        continue;
      }
      const std::string be = backend;
      if (be == "ref64" || (be == "ref32" && !tiled)) {
        // The same exact weights through the same ops in the same order: the same bits.
        EXPECT_EQ(0, std::memcmp(t.f.data(), u.f.data(), t.f.size() * 4)) << backend << " " << name << " max diff " << maxd;
      } else {
        // fast: matvec_ggml_fast sums in another order than matmul_q_fast; tiled out_proj: another
        // column order. Each a few f32 roundings of a dot product carried through 4 layers
        // (measured <= 3.3e-6 of max |tap|; 1e-5 leaves 3x).
        EXPECT_LE(maxd, 1e-5 * maxa) << backend << " " << name;
        worst = std::max(worst, maxd / maxa);
      }
    }
  }
  std::printf("%s: worst inexact tap %.3g of max |tap|\n", GetParam(), worst);
}

INSTANTIATE_TEST_SUITE_P(golden, GgufModel, ::testing::Values("qwen3_5_moe_tiny", "qwen3_next_tiny"));

// The golden DeepSeek-V3 model with mscale = mscale_all_dim (llama.cpp's deepseek2 takes them equal;
// the golden's 1.0 / 0.8 has no GGUF form): a copy of the fixture with that one config change.
std::string deepseek_gguf_able(const std::filesystem::path& dir) {
  const std::filesystem::path src = kGolden + "deepseek_v3_tiny";
  std::filesystem::create_directories(dir);
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"})
    std::filesystem::copy_file(src / f, dir / f);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(src / "config.json"));
  j["rope_parameters"]["mscale"] = j["rope_scaling"]["mscale"] = j["rope_parameters"]["mscale_all_dim"];
  std::ofstream(dir / "config.json") << j.dump(1);
  return dir.string();
}

// deepseek2: MLA with llama.cpp's k_b / v_b split, the BF16 router and the selection bias, dense
// leading layers. The same taps as the MLX model: bit for bit in ref64 and ref32 (the weights are
// the same values and mla_attention reads them in the same order), within 1e-5 in fast; the
// kv_b_proj tap, which the GGUF path forms in f64 from the split, within 1e-5 outside ref64.
TEST(gguf_model, DeepseekSameConfigWeightsAndTapsAsMlx) {
  test::Scratch dir("gguf_deepseek");
  const std::string src = deepseek_gguf_able(dir.dir / "mlx"), gguf = (dir.dir / "m.gguf").string();
  const auto mlx = Model::load(src);
  write_gguf_model(*mlx, gguf);
  const auto g = Model::load(gguf);
  EXPECT_EQ(config_text(g->config()), config_text(mlx->config()));
  EXPECT_EQ(g->config().mla.mscale_all_dim, 0.8);  // from the stored f32 0.08, not 0.08f / 0.1
  ASSERT_TRUE(g->layer(1).mla.kv_b.ggml);
  std::vector<int32_t> tokens;
  for (int32_t t = 0; t < 20; ++t) tokens.push_back((t * 41 + 3) % int32_t(mlx->config().vocab));
  for (const char* backend : {"ref64", "ref32", "fast"}) {
    const auto want = taps(*mlx, backend, tokens), got = taps(*g, backend, tokens);
    ASSERT_EQ(want.size(), got.size());
    for (const auto& [name, t] : want) {
      const DumpSink::Tensor& u = got.at(name);
      if (t.is_int) {
        EXPECT_EQ(t.i, u.i) << backend << " " << name;
        continue;
      }
      double maxd = 0, maxa = 0;
      for (size_t i = 0; i < t.f.size(); ++i)
        maxd = std::max(maxd, std::fabs(double(t.f[i]) - u.f[i])), maxa = std::max(maxa, std::fabs(double(t.f[i])));
      const std::string be = backend;
      if (be == "ref64" || (be == "ref32" && name.find("kv_b_proj") == std::string::npos))
        EXPECT_EQ(0, std::memcmp(t.f.data(), u.f.data(), t.f.size() * 4)) << backend << " " << name << " max diff " << maxd;
      else
        EXPECT_LE(maxd, 1e-5 * maxa) << backend << " " << name;  // other summation orders (as the Qwen test above)
    }
  }
  // The golden itself (mscale 1.0, mscale_all_dim 0.8) has no GGUF form: refused, saying why.
  test::expect_error([&] { write_gguf_model(*Model::load(kGolden + "deepseek_v3_tiny"), (dir.dir / "x.gguf").string()); },
                     "YaRN mscale 1 differs from mscale_all_dim 0.8");
  // An older conversion with the unsplit attn_kv_b is refused, naming the layer.
  const GgufFile f(gguf);
  std::vector<GgufTensorOut> ts;
  for (const GgufTensor& t : f.tensors())
    if (t.name != "blk.0.attn_v_b.weight")
      ts.push_back({t.name == "blk.0.attn_k_b.weight" ? std::string("blk.0.attn_kv_b.weight") : t.name, t.type->id, t.ne,
                    {t.data, t.bytes}});
  const std::string old = (dir.dir / "old.gguf").string();
  write_gguf(old, f.metadata(), ts);
  test::expect_error([&] { Model::load(old); }, "layer 0 holds only the unsplit attn_kv_b");
}

// deepseek2's f32 yarn_log_multiplier (0.1 mscale_all_dim) read back as the config's decimal value;
// a value with more digits than an f32 keeps does not come back (the writer refuses it).
TEST(gguf_model, YarnLogMultiplierGivesBackMscaleAllDim) {
  for (double v : {0.0, 1.0, 0.8, 0.707, 1.25})
    EXPECT_EQ(mscale_all_dim_from_log_multiplier(float(0.1 * v)), v) << v;
  const double root_half = std::sqrt(0.5);
  EXPECT_NE(mscale_all_dim_from_log_multiplier(float(0.1 * root_half)), root_half);
  EXPECT_NEAR(mscale_all_dim_from_log_multiplier(float(0.1 * root_half)), root_half, 1e-6);
}

// A file that is not a model of ours, or whose tensors are wrong, names the file and what is wrong.
TEST(gguf_model, BadFilesAreNamed) {
  test::Scratch dir("gguf_model_bad");
  std::filesystem::create_directories(dir.dir);
  const std::string good = (dir.dir / "good.gguf").string();
  write_gguf_model(*Model::load(kGolden + "qwen3_5_moe_tiny"), good);
  const GgufFile f(good);
  // Rewrites the good file with one change to its metadata or tensors.
  auto variant = [&](const std::string& name, auto&& change) {
    std::vector<std::pair<std::string, GgufValue>> kv = f.metadata();
    std::vector<GgufTensorOut> ts;
    for (const GgufTensor& t : f.tensors()) ts.push_back({t.name, t.type->id, t.ne, {t.data, t.bytes}});
    std::vector<float> positive(4, 0.5f);
    change(kv, ts, positive);
    const std::string p = (dir.dir / name).string();
    write_gguf(p, kv, ts);
    return p;
  };
  auto set = [](std::vector<std::pair<std::string, GgufValue>>& kv, const std::string& k, GgufValue v) {
    for (auto& [key, val] : kv)
      if (key == k) val = std::move(v);
  };
  const std::string arch = variant("arch.gguf", [&](auto& kv, auto&, auto&) {
    set(kv, "general.architecture", GgufValue::of_string("llama"));
  });
  test::expect_error([&] { Model::load(arch); }, "architecture 'llama' is not supported");
  const std::string missing = variant("missing.gguf", [&](auto&, auto& ts, auto&) {
    std::erase_if(ts, [](const GgufTensorOut& t) { return t.name == "blk.3.attn_k.weight"; });
  });
  test::expect_error([&] { Model::load(missing); }, "missing.gguf: tensor 'blk.3.attn_k.weight' is missing");
  const std::string shape = variant("shape.gguf", [&](auto& kv, auto&, auto&) {
    set(kv, "qwen35moe.attention.head_count_kv", GgufValue::of_u32(1));
  });
  test::expect_error([&] { Model::load(shape); }, "tensor 'blk.3.attn_k.weight' has ne [256, 128], expected [256, 64]");
  const std::string a = variant("ssm_a.gguf", [&](auto&, auto& ts, auto& positive) {
    for (GgufTensorOut& t : ts)
      if (t.name == "blk.0.ssm_a") t.bytes = {reinterpret_cast<const uint8_t*>(positive.data()), 16};
  });
  test::expect_error([&] { Model::load(a); }, "tensor 'blk.0.ssm_a' value 0 is 0.5, expected a finite negative");
  const std::string legacy = variant("legacy.gguf", [&](auto&, auto& ts, auto&) {
    for (GgufTensorOut& t : ts)
      if (t.name == "blk.0.attn_gate.weight") t.name = "blk.0.ssm_in.weight";
  });
  test::expect_error([&] { Model::load(legacy); }, "legacy fused ssm_in");
}

}  // namespace
}  // namespace moe
