// Both model sources load the same model; bad checkpoints fail with a message naming the file,
// the tensor, what was expected and what was found.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "oracle/export_moeflux.h"
#include "oracle/forward.h"
#include "oracle/safetensors.h"
#include "test_util.h"

namespace moe {
namespace {
namespace fs = std::filesystem;

const std::string kGolden = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/";

std::vector<float> logits(const std::string& dir, const char* backend) {
  auto m = Model::load(dir);
  auto be = make_cpu_backend(backend);
  Forward f(*m, *be);
  ModelState st = ModelState::make(m->config(), 8);
  const std::vector<int32_t> toks{3, 141, 59, 265, 358, 97, 93, 238};
  return f.run(toks, st);
}

TEST(loader, MoefluxArtifactsGiveBitIdenticalResults) {
  for (const char* model : {"qwen3_5_moe_tiny", "qwen3_next_tiny"}) {
    test::Scratch s(std::string("mf_") + model);
    export_moeflux(kGolden + model, s.dir.string());
    ASSERT_TRUE(fs::exists(s.dir / "packed_experts" / "layer_00.bin"));
    for (const char* backend : {"ref32", "fast"}) {
      const auto a = logits(kGolden + model, backend), b = logits(s.dir.string(), backend);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << model << " " << backend;
    }
  }
}

// Rewrites one shard of an MLX copy with `edit` applied to its tensor list.
void rewrite_shard(const fs::path& dir, const std::string& shard,
                   const std::function<void(std::vector<TensorOut>&, std::vector<std::vector<uint8_t>>&)>& edit) {
  std::vector<TensorOut> out;
  std::vector<std::vector<uint8_t>> keep;
  {
    SafetensorsFile f((dir / shard).string());
    for (const std::string& n : f.names_in_file_order()) {
      const TensorInfo& t = *f.find(n);
      keep.emplace_back(t.data, t.data + t.bytes);
      out.push_back({n, t.dtype, t.shape, nullptr});
    }
  }
  edit(out, keep);
  for (size_t i = 0; i < out.size(); ++i) out[i].data = keep[i].data();
  write_safetensors((dir / shard).string(), out, {{"format", "mlx"}});
}

std::string shard_of(const fs::path& dir, const std::string& tensor) {
  std::ifstream in(dir / "model.safetensors.index.json");
  return nlohmann::json::parse(in)["weight_map"][tensor].get<std::string>();
}

// Rewrites the shard that holds tensor `name` with edit(out, keep, i) applied, i its index there.
template <class F>
void edit_tensor(const fs::path& dir, const std::string& name, F edit) {
  rewrite_shard(dir, shard_of(dir, name), [&](auto& out, auto& keep) {
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].name == name) return edit(out, keep, i);
  });
}

TEST(loader, MissingTensorNamesIt) {
  test::Scratch s("missing");
  fs::copy(kGolden + "qwen3_5_moe_tiny", s.dir, fs::copy_options::recursive);
  const std::string name = "language_model.model.layers.1.linear_attn.dt_bias";
  edit_tensor(s.dir, name, [](auto& out, auto& keep, size_t i) {
    out.erase(out.begin() + long(i)), keep.erase(keep.begin() + long(i));
  });
  test::expect_error([&] { Model::load(s.dir.string()); }, "tensor 'model.layers.1.linear_attn.dt_bias' is missing");
}

TEST(loader, WrongShapeSaysExpectedAndFound) {
  test::Scratch s("shape");
  fs::copy(kGolden + "qwen3_5_moe_tiny", s.dir, fs::copy_options::recursive);
  const std::string name = "language_model.model.layers.3.self_attn.k_proj.scales";
  edit_tensor(s.dir, name, [](auto& out, auto& keep, size_t i) { out[i].shape = {64, 8}, keep[i].resize(64 * 8 * 2); });
  test::expect_error([&] { Model::load(s.dir.string()); }, "is BF16 [64, 8], expected BF16 [128, 4]");
}

TEST(loader, TruncatedShard) {
  test::Scratch s("trunc");
  fs::copy(kGolden + "qwen3_5_moe_tiny", s.dir, fs::copy_options::recursive);
  const fs::path shard = s.dir / "model-00002-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 1000);
  test::expect_error([&] { Model::load(s.dir.string()); }, "past the end of the data");
}

TEST(loader, ConfigContradictingTheTensors) {
  test::Scratch s("cfg");
  fs::copy(kGolden + "qwen3_5_moe_tiny", s.dir, fs::copy_options::recursive);
  std::ifstream in(s.dir / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  in.close();
  c["text_config"]["num_experts"] = 16;
  std::ofstream(s.dir / "config.json") << c.dump();
  test::expect_error([&] { Model::load(s.dir.string()); }, "mlp.gate.weight' is U32 [8, 64], expected U32 [16, 64]");
}

TEST(loader, MissingConfigOrDirectory) {
  test::expect_error([&] { Model::load("/nonexistent/model"); }, "not a directory");
  test::Scratch s("empty");
  fs::create_directories(s.dir);
  test::expect_error([&] { Model::load(s.dir.string()); }, "neither config.json");
}

TEST(loader, MoefluxShortOrMissingExpertFile) {
  test::Scratch s("mf_bad");
  export_moeflux(kGolden + "qwen3_5_moe_tiny", s.dir.string());
  const fs::path l2 = s.dir / "packed_experts" / "layer_02.bin";
  fs::resize_file(l2, fs::file_size(l2) - 4);
  test::expect_error([&] { Model::load(s.dir.string()); }, "layer_02.bin");
  fs::remove(l2);
  test::expect_error([&] { Model::load(s.dir.string()); }, "expert file of layer 2 is missing");
}

TEST(loader, MoefluxSpanPastTheEnd) {
  test::Scratch s("mf_span");
  export_moeflux(kGolden + "qwen3_5_moe_tiny", s.dir.string());
  fs::resize_file(s.dir / "model_weights.bin", 4096);
  test::expect_error([&] { Model::load(s.dir.string()); }, "past the end of");
}

TEST(loader, TokenOutOfRangeIsAnError) {
  auto m = Model::load(kGolden + "qwen3_5_moe_tiny");
  auto be = make_cpu_backend("fast");
  Forward f(*m, *be);
  ModelState st = ModelState::make(m->config(), 2);
  const std::vector<int32_t> toks{1, 512};
  test::expect_error([&] { f.run(toks, st); }, "512");
}

}  // namespace
}  // namespace moe
