// DeepSeek-V3 / Cogito-V2 as moeflux artifacts (docs/ops/formats.md "Cogito artifact layout";
// oracle/tensor_table.h): the layout moeflux's own converter writes
// (fixtures/moeflux/deepseek_v3_tiny_cogito, made by convert_cogito_v2.py from
// fixtures/golden/deepseek_v3_tiny: code we did not write) loads and runs bit for bit as the MLX
// checkpoint it came from; our exporter writes the same bytes; a layout that disagrees with its
// config is an error naming the file, the field, expected and found.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "oracle/export_moeflux.h"
#include "oracle/forward.h"
#include "oracle/synth.h"
#include "test_util.h"

namespace moe {
namespace {
namespace fs = std::filesystem;

const std::string kMlx = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_v3_tiny";
const std::string kCogito = std::string(MOE_SOURCE_DIR) + "/fixtures/moeflux/deepseek_v3_tiny_cogito";

std::vector<float> logits(const std::string& dir, const char* backend) {
  auto m = Model::load(dir);
  auto be = make_cpu_backend(backend);
  Forward f(*m, *be);
  ModelState st = ModelState::make(m->config(), 12);
  const std::vector<int32_t> toks{3, 141, 59, 265, 358, 97, 93, 238, 7, 500, 1, 64};
  std::vector<float> out = f.run(std::span(toks).first(9), st);
  for (size_t t = 9; t < toks.size(); ++t) {  // and decode steps
    const std::vector<float> l = f.run(std::span(toks).subspan(t, 1), st);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

void expect_same_logits(const std::string& a, const std::string& b) {
  for (const char* backend : {"ref64", "ref32", "fast"}) {
    const auto x = logits(a, backend), y = logits(b, backend);
    ASSERT_EQ(x.size(), y.size());
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * 4), 0) << a << " vs " << b << " " << backend;
  }
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A writable copy of the converter's artifacts.
fs::path copy_of_cogito(const test::Scratch& s) {
  fs::copy(kCogito, s.dir, fs::copy_options::recursive);
  return s.dir;
}

void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }

// The converter's output, given as the parent directory or as its artifacts/, is the model the
// MLX checkpoint is: the same logits to the bit in all three tiers, prefill and decode.
TEST(deepseek_v3_moeflux, ConvertersArtifactsRunAsTheMlxCheckpoint) {
  const auto m = Model::load(kCogito);
  EXPECT_EQ(m->format(), SourceFormat::Moeflux);
  EXPECT_EQ(m->config().family, Family::DeepseekV3);
  EXPECT_EQ(m->config().experts, 16);
  expect_same_logits(kMlx, kCogito);
  expect_same_logits(kMlx, kCogito + "/artifacts");
}

// Without mlx/config.json the manifest's config block (no model_type, DeepSeek's dimensions) is
// the config: the same model; and it is read (another n_group there routes differently).
TEST(deepseek_v3_moeflux, ConfigBlockAloneIsEnough) {
  test::Scratch s("ds3mf_block");
  copy_of_cogito(s);
  fs::remove_all(s.dir / "mlx");
  const auto a = logits(kMlx, "ref32"), b = logits(s.dir.string(), "ref32");
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  const fs::path p = s.dir / "artifacts/model_weights.json";
  nlohmann::json j = read_json(p);
  j["config"]["n_group"] = 8;
  write_json(p, j);
  const auto c = logits(s.dir.string(), "ref32");
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * 4), 0);
}

// export_moeflux writes what convert_cogito_v2.py writes: every tensor's bytes, dtype, shape and
// bits, the config block, layout.json, and the expert files byte for byte (the tensors' order in
// model_weights.bin may differ: readers go by the manifest,
// docs/ops/formats.md "model_weights.bin and model_weights.json").
TEST(deepseek_v3_moeflux, ExportWritesTheConvertersBytes) {
  test::Scratch s("ds3mf_export");
  export_moeflux(kMlx, s.dir.string());
  const nlohmann::json theirs = read_json(fs::path(kCogito) / "artifacts/model_weights.json");
  const nlohmann::json ours = read_json(s.dir / "artifacts/model_weights.json");
  EXPECT_EQ(ours["config"], theirs["config"]);
  EXPECT_EQ(ours["num_tensors"], theirs["num_tensors"]);
  ASSERT_EQ(ours["tensors"].size(), theirs["tensors"].size());
  const std::vector<char> bin_t = read_bytes(fs::path(kCogito) / "artifacts/model_weights.bin");
  const std::vector<char> bin_o = read_bytes(s.dir / "artifacts/model_weights.bin");
  for (auto it = theirs["tensors"].begin(); it != theirs["tensors"].end(); ++it) {
    ASSERT_TRUE(ours["tensors"].contains(it.key())) << it.key();
    const nlohmann::json &t = *it, &o = ours["tensors"][it.key()];
    for (const char* k : {"dtype", "shape", "size", "bits"}) EXPECT_EQ(o.value(k, nlohmann::json()), t.value(k, nlohmann::json())) << it.key() << " " << k;
    const size_t n = t["size"], ot = t["offset"], oo = o["offset"];
    ASSERT_LE(oo + n, bin_o.size());
    EXPECT_EQ(std::memcmp(bin_t.data() + ot, bin_o.data() + oo, n), 0) << it.key();
  }
  EXPECT_EQ(read_json(s.dir / "root/packed_experts/layout.json"), read_json(fs::path(kCogito) / "root/packed_experts/layout.json"));
  for (const char* f : {"layer_01.bin", "layer_02.bin"})
    EXPECT_TRUE(read_bytes(s.dir / "root/packed_experts" / f) == read_bytes(fs::path(kCogito) / "root/packed_experts" / f)) << f;
  EXPECT_FALSE(fs::exists(s.dir / "root/packed_experts/layer_00.bin"));  // the dense layer has none
  EXPECT_TRUE(read_bytes(s.dir / "mlx/config.json") == read_bytes(kMlx + "/config.json"));
  expect_same_logits(kMlx, s.dir.string());
}

// layout.json is informational, but one that disagrees with the config names the field.
TEST(deepseek_v3_moeflux, LayoutThatDisagreesIsNamed) {
  struct Case {
    const char* what;
    void (*edit)(nlohmann::json&);
    const char* needle;
  };
  const Case cases[] = {
      {"size", [](nlohmann::json& j) { j["expert_size"] = 27647; }, "layout.json: expert_size is 27647, expected 27648"},
      {"layers", [](nlohmann::json& j) { j["moe_layers"] = {2}; }, "moe_layers is array [2], expected array [1,2]"},
      {"experts", [](nlohmann::json& j) { j["num_experts"] = 32; }, "num_experts is 32, expected 16"},
      {"order", [](nlohmann::json& j) { std::swap(j["components"][0], j["components"][1]); },
       "components[0] is gate_proj.scales at 8192 (512 bytes), expected gate_proj.weight at 0 (8192 bytes"},
  };
  for (const Case& c : cases) {
    test::Scratch s(std::string("ds3mf_layout_") + c.what);
    const fs::path p = copy_of_cogito(s) / "root/packed_experts/layout.json";
    nlohmann::json j = read_json(p);
    c.edit(j);
    write_json(p, j);
    test::expect_error([&] { Model::load(s.dir.string()); }, c.needle);
  }
}

// A config block that contradicts mlx/config.json, mlx-lm's split MLA layout, a missing MoE layer
// file, a short one.
TEST(deepseek_v3_moeflux, BrokenArtifactsAreNamed) {
  {
    test::Scratch s("ds3mf_contradict");
    const fs::path p = copy_of_cogito(s) / "artifacts/model_weights.json";
    nlohmann::json j = read_json(p);
    j["config"]["n_group"] = 8;
    write_json(p, j);
    test::expect_error([&] { Model::load(s.dir.string()); },
                       "config block field 'n_group' is 8, expected 4 as in " + (s.dir / "mlx/config.json").string());
  }
  {
    test::Scratch s("ds3mf_split");  // mlx-lm's split kv_b_proj
    const fs::path p = copy_of_cogito(s) / "artifacts/model_weights.json";
    nlohmann::json j = read_json(p);
    j["tensors"]["model.layers.0.self_attn.embed_q.weight"] = j["tensors"]["model.layers.0.self_attn.kv_b_proj.weight"];
    write_json(p, j);
    test::expect_error([&] { Model::load(s.dir.string()); }, "layer 0 has mlx-lm's split self_attn.embed_q / unembed_out");
  }
  {
    test::Scratch s("ds3mf_missing");
    fs::remove(copy_of_cogito(s) / "root/packed_experts/layer_02.bin");
    test::expect_error([&] { Model::load(s.dir.string()); }, "layer_02.bin: expert file of layer 2 is missing");
  }
  {
    test::Scratch s("ds3mf_short");
    const fs::path p = copy_of_cogito(s) / "root/packed_experts/layer_01.bin";
    fs::resize_file(p, 442368 - 27648);
    test::expect_error([&] { Model::load(s.dir.string()); },
                       "layer_01.bin: 414720 bytes, expected 16 experts x 27648 bytes = 442368");
  }
}

// A correction bias stored as BF16 (MFR reads Cogito's so) loads, widened exactly; any other
// dtype is named.
TEST(deepseek_v3_moeflux, Bf16CorrectionBiasIsWidenedExactly) {
  test::Scratch s("ds3mf_bias");
  const fs::path dir = copy_of_cogito(s);
  const fs::path mp = dir / "artifacts/model_weights.json";
  nlohmann::json j = read_json(mp);
  const std::string name = "model.layers.1.mlp.gate.e_score_correction_bias";
  nlohmann::json& e = j["tensors"][name];
  const size_t off = e["offset"];
  std::vector<char> bin = read_bytes(dir / "artifacts/model_weights.bin");
  std::vector<float> want(16);
  for (size_t i = 0; i < 16; ++i) {  // truncate each f32 to its high half, in place
    uint32_t u;
    std::memcpy(&u, bin.data() + off + 4 * i, 4);
    const uint16_t h = uint16_t(u >> 16);
    std::memcpy(bin.data() + off + 2 * i, &h, 2);
    const uint32_t w = uint32_t(h) << 16;
    std::memcpy(&want[i], &w, 4);
  }
  std::ofstream(dir / "artifacts/model_weights.bin", std::ios::binary).write(bin.data(), std::streamsize(bin.size()));
  e["dtype"] = "BF16", e["size"] = 32;
  write_json(mp, j);
  const auto m = Model::load(dir.string());
  EXPECT_EQ(m->layer(1).mlp.score_bias, want);
  e["dtype"] = "U32", e["size"] = 64, e["shape"] = {16};
  write_json(mp, j);
  test::expect_error([&] { Model::load(dir.string()); }, "tensor '" + name + "' is U32 [16], expected F32 [16]");
}

// `moeoracle fixture --preset ds3-tiny` (the golden model's shapes; cogito-2layers is the same
// generator at Cogito's shapes): written in both formats, the moeflux one laid out as the
// converter lays Cogito out, the same model to the bit; the same seed gives the same bytes.
TEST(deepseek_v3_moeflux, SyntheticFixtureInBothFormats) {
  test::Scratch s("ds3mf_synth");
  const ModelConfig c = synthetic_preset("ds3-tiny");
  EXPECT_EQ(c.family, Family::DeepseekV3);
  write_synthetic(c, 5, (s.dir / "mlx").string(), "mlx");
  write_synthetic(c, 5, (s.dir / "mlx2").string(), "mlx");
  write_synthetic(c, 5, (s.dir / "mf").string(), "moeflux");
  EXPECT_TRUE(read_bytes(s.dir / "mlx/model.safetensors") == read_bytes(s.dir / "mlx2/model.safetensors"));
  EXPECT_TRUE(fs::exists(s.dir / "mf/root/packed_experts/layout.json"));
  const auto m = Model::load((s.dir / "mlx").string());
  EXPECT_EQ(m->config().mla.kv_lora_rank, 64);
  EXPECT_FALSE(m->layer(0).moe);
  EXPECT_TRUE(m->layer(2).moe);
  EXPECT_EQ(m->layer(1).mlp.score_bias.size(), 16u);
  expect_same_logits((s.dir / "mlx").string(), (s.dir / "mf").string());
  const ModelConfig real = synthetic_preset("cogito-2layers");
  EXPECT_EQ(real.hidden, 7168);
  EXPECT_EQ(real.vocab, 128815);
  EXPECT_EQ(real.experts, 256);
  EXPECT_EQ(real.dense_inter, 18432);
  EXPECT_EQ(expert_blob_bytes(real.hidden, real.moe_inter, 4), 24772608);  // docs/ops/models.md "Derived sizes"
  EXPECT_EQ(real.layer_moe, (std::vector<bool>{false, true}));
  EXPECT_EQ(synthetic_preset("cogito-2layers", 5).layer_moe, (std::vector<bool>{false, false, false, true, true}));
}

}  // namespace
}  // namespace moe
