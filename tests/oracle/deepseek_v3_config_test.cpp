// DeepSeek-V3 config.json (model_type deepseek_v3): every dimension read from the file, layer
// kinds and dense/MoE layers from it, and missing or inconsistent fields named in the error; the
// loader reads the MLX tensors of the tiny fixture and names a missing or mis-shaped one.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "oracle/config.h"
#include "oracle/model.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kDir = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_v3_tiny";

nlohmann::json fixture_config() {
  std::ifstream f(kDir + "/config.json");
  return nlohmann::json::parse(f);
}

TEST(deepseek_v3_config, ReadsTheTinyFixture) {
  const ModelConfig c = parse_model_config(fixture_config(), "config.json");
  EXPECT_EQ(c.family, Family::DeepseekV3);
  EXPECT_EQ(c.router, RouterKind::NoauxTc);
  EXPECT_EQ(c.hidden, 256); EXPECT_EQ(c.layers, 3); EXPECT_EQ(c.vocab, 512); EXPECT_EQ(c.attn_heads, 4);
  EXPECT_EQ(c.mla.q_lora_rank, 128); EXPECT_EQ(c.mla.kv_lora_rank, 64);
  EXPECT_EQ(c.mla.qk_nope_dim, 32); EXPECT_EQ(c.mla.qk_rope_dim, 16); EXPECT_EQ(c.mla.v_head_dim, 32);
  EXPECT_EQ(c.experts, 16); EXPECT_EQ(c.experts_per_tok, 4); EXPECT_EQ(c.mla.n_group, 4); EXPECT_EQ(c.mla.topk_group, 2);
  EXPECT_EQ(c.mla.n_shared_experts, 1); EXPECT_EQ(c.moe_inter, 64); EXPECT_EQ(c.shared_inter, 64);
  EXPECT_EQ(c.dense_inter, 192); EXPECT_EQ(c.mla.first_k_dense_replace, 1);
  EXPECT_EQ(c.mla.routed_scaling_factor, 2.5); EXPECT_TRUE(c.norm_topk_prob); EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FLOAT_EQ(c.eps, 1e-6f); EXPECT_EQ(c.rope_theta, 1e4);
  EXPECT_EQ(c.mla.yarn_factor, 40.0); EXPECT_EQ(c.mla.original_max_position, 4096);
  EXPECT_EQ(c.mla.beta_fast, 32.0); EXPECT_EQ(c.mla.beta_slow, 1.0);
  EXPECT_EQ(c.mla.mscale, 1.0); EXPECT_EQ(c.mla.mscale_all_dim, 0.8); EXPECT_TRUE(c.mla.rope_interleave);
  EXPECT_EQ(c.default_bits, 4); EXPECT_EQ(c.default_group, 64);
  ASSERT_EQ(c.layer_kinds.size(), 3u);
  for (LayerKind k : c.layer_kinds) EXPECT_EQ(k, LayerKind::Mla);
  EXPECT_EQ(c.layer_moe, (std::vector<bool>{false, true, true}));
  // HF's scaling: 48^-1/2 (0.1 * 0.8 * ln 40 + 1)^2 (fixtures/README.md: 1.6773 on 48^-1/2).
  const double m = 0.1 * 0.8 * std::log(40.0) + 1.0;
  EXPECT_DOUBLE_EQ(c.mla.softmax_scale(), m * m / std::sqrt(48.0));
}

TEST(deepseek_v3_config, MissingFieldIsNamed) {
  for (const char* key : {"kv_lora_rank", "q_lora_rank", "n_group", "first_k_dense_replace", "routed_scaling_factor",
                          "moe_intermediate_size", "qk_rope_head_dim"}) {
    nlohmann::json j = fixture_config();
    j.erase(key);
    test::expect_error([&] { parse_model_config(j, "dir/config.json"); },
                       std::string("dir/config.json: field '") + key + "' is missing");
  }
  nlohmann::json j = fixture_config();
  j.erase("rope_parameters"), j.erase("rope_scaling");
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "'rope_parameters' and 'rope_scaling' are both missing");
  j = fixture_config();
  j["rope_parameters"].erase("original_max_position_embeddings");
  test::expect_error([&] { parse_model_config(j, "c.json"); },
                     "rope_parameters: field 'original_max_position_embeddings' is missing");
}

TEST(deepseek_v3_config, InconsistentFieldSaysExpectedAndFound) {
  nlohmann::json j = fixture_config();
  j["qk_head_dim"] = 40;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "field 'qk_head_dim' is 40, expected 48");
  j = fixture_config();
  j["rope_scaling"]["factor"] = 32.0;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "rope_scaling.factor = 32.0, expected rope_parameters.factor = 40.0");
  j = fixture_config();
  j["n_group"] = 3;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "n_routed_experts = 16, expected a multiple of n_group = 3");
  j = fixture_config();
  j["num_experts_per_tok"] = 9;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "num_experts_per_tok = 9, expected <= topk_group x experts per group = 8");
  j = fixture_config();
  j["topk_method"] = "greedy";
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "field 'topk_method' is 'greedy', expected 'noaux_tc'");
  j = fixture_config();
  j["moe_intermediate_size"] = int64_t(1) << 62;  // x n_shared_experts would overflow
  j["n_shared_experts"] = 4;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "field 'moe_intermediate_size' is 4611686018427387904");
  j = fixture_config();
  j["rope_parameters"]["factor"] = 1e300, j["rope_scaling"]["factor"] = 1e300;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "factor = 1e+300, expected finite, >= 0 and within f32");
  j = fixture_config();
  j["moe_layer_freq"] = 2;
  test::expect_error([&] { parse_model_config(j, "c.json"); }, "field 'moe_layer_freq' is 2, expected 1");
}

}  // namespace
}  // namespace moe

namespace moe {
namespace {

// A copy of the fixture directory with config.json edited by `edit` (the shards are linked).
std::string edited_copy(const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("moeoracle_ds3_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir / e.path().filename());
  nlohmann::json j = fixture_config();
  edit(j);
  std::ofstream(dir / "config.json") << j.dump(1);
  return dir.string();
}

TEST(deepseek_v3_loader, LoadsTheTinyFixture) {
  const auto m = Model::load(kDir);
  const ModelConfig& c = m->config();
  ASSERT_EQ(c.family, Family::DeepseekV3);
  const LayerWeights& l0 = m->layer(0);
  EXPECT_EQ(l0.kind, LayerKind::Mla);
  EXPECT_FALSE(l0.moe);
  EXPECT_EQ(l0.mla.q_a.rows(), 128); EXPECT_EQ(l0.mla.q_a.cols(), 256);
  EXPECT_EQ(l0.mla.q_b.rows(), 4 * 48); EXPECT_EQ(l0.mla.q_b.cols(), 128);
  EXPECT_EQ(l0.mla.kv_a.rows(), 64 + 16); EXPECT_EQ(l0.mla.kv_b.mlx.rows, 4 * 64); EXPECT_EQ(l0.mla.kv_b.mlx.cols, 64);
  EXPECT_EQ(l0.mla.o.rows(), 256); EXPECT_EQ(l0.mla.o.cols(), 128);
  EXPECT_EQ(l0.mla.q_a_norm.size(), 128u); EXPECT_EQ(l0.mla.kv_a_norm.size(), 64u);
  EXPECT_EQ(l0.mlp.shared.gate.rows, 192);  // the dense MLP
  const LayerWeights& l1 = m->layer(1);
  EXPECT_TRUE(l1.moe);
  EXPECT_EQ(l1.mlp.router_bf16.size(), size_t(16 * 256));
  EXPECT_EQ(l1.mlp.score_bias.size(), 16u);
  EXPECT_EQ(l1.mlp.shared.gate.rows, 64); EXPECT_EQ(l1.mlp.shared.down.cols, 64);
  const ExpertWeights e = m->expert(2, 15);
  EXPECT_EQ(e.gate.rows, 64); EXPECT_EQ(e.down.rows, 256);
  EXPECT_NE(m->lm_head().q.w, m->embed().q.w);  // untied
}

TEST(deepseek_v3_loader, MissingOrMisShapedTensorIsNamed) {
  std::string dir = edited_copy("dense0", [](nlohmann::json& j) { j["first_k_dense_replace"] = 0; });
  test::expect_error([&] { Model::load(dir); }, "tensor 'model.layers.0.mlp.gate.weight' is missing");
  std::filesystem::remove_all(dir);
  dir = edited_copy("lora", [](nlohmann::json& j) { j["kv_lora_rank"] = 128; });
  test::expect_error([&] { Model::load(dir); },
                     "tensor 'model.layers.0.self_attn.kv_a_proj_with_mqa.weight' is U32 [80, 32], expected U32 [144, 32]");
  std::filesystem::remove_all(dir);
  dir = edited_copy("tied", [](nlohmann::json& j) { j["n_routed_experts"] = 32; });
  test::expect_error([&] { Model::load(dir); }, "tensor 'model.layers.1.mlp.gate.weight' is BF16 [16, 256], expected BF16 [32, 256]");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moe
