// MFLX snapshots: stop at token n, save, restore into a fresh state, continue: bit-identical to
// never stopping. Corrupt or foreign snapshots are rejected before any state changes. Qwen
// (GQA KV rows, linear-attention state) and DeepSeek-V3 (MLA latent / rope-K rows, v2).
#include <cstring>

#include "oracle/forward.h"
#include "oracle/snapshot.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kModel = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/qwen3_5_moe_tiny";
const std::vector<int32_t> kTokens{5, 17, 300, 42, 7, 511, 0, 99, 23, 250, 11, 64};

std::vector<float> decode(const Model& m, OpBackend& be, std::span<const int32_t> toks, ModelState& st) {
  Forward f(m, be);
  std::vector<float> all;
  for (size_t t = 0; t < toks.size(); ++t) {
    auto l = f.run(toks.subspan(t, 1), st);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

TEST(snapshot, StopSaveRestoreContinueIsBitIdentical) {
  auto m = Model::load(kModel);
  for (const char* backend : {"ref32", "fast"}) {
    for (int version : {1, 2}) {
      auto be = make_cpu_backend(backend);
      ModelState straight = ModelState::make(m->config(), 16);
      const std::vector<float> want = decode(*m, *be, kTokens, straight);

      const size_t n = 7;
      ModelState first = ModelState::make(m->config(), 16);
      std::vector<float> got = decode(*m, *be, std::span(kTokens).first(n), first);
      const std::vector<uint8_t> bytes = snapshot_save(m->config(), first, version);
      ModelState restored = ModelState::make(m->config(), 1);
      snapshot_load(bytes, m->config(), restored, "memory", int64_t(kTokens.size() - n));
      EXPECT_EQ(restored.pos, int64_t(n));
      const std::vector<float> rest = decode(*m, *be, std::span(kTokens).subspan(n), restored);
      got.insert(got.end(), rest.begin(), rest.end());
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << backend << " v" << version;
    }
  }
}

TEST(snapshot, HeaderLayout) {
  auto m = Model::load(kModel);
  ModelState st = ModelState::make(m->config(), 4);
  const auto v1 = snapshot_save(m->config(), st, 1), v2 = snapshot_save(m->config(), st, 2);
  EXPECT_EQ(std::memcmp(v1.data(), "XLFM", 4), 0);  // 0x4D464C58 little-endian
  EXPECT_EQ(v2.size(), v1.size() + 8);               // two more header words
  const ModelConfig& c = m->config();
  // 3 linear layers (conv + ssm) and one full layer with len 0 (just the i32).
  const size_t body = 3 * size_t((c.conv_kernel - 1) * c.conv_dim() + c.lin_v_heads * c.lin_v_dim * c.lin_k_dim) * 4 + 4;
  EXPECT_EQ(v1.size(), 32 + body);
}

TEST(snapshot, RejectsCorruptOrForeign) {
  auto m = Model::load(kModel);
  const ModelConfig& c = m->config();
  ModelState st = ModelState::make(c, 8);
  auto be = make_cpu_backend("fast");
  decode(*m, *be, std::span(kTokens).first(3), st);
  const std::vector<uint8_t> good = snapshot_save(c, st, 1);
  ModelState target = ModelState::make(c, 8);
  const ModelState before = target;

  auto bad = good;
  bad[0] ^= 1;
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "f.mflx: magic");
  bad = good;
  bad[4] = 3;
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "version 3");
  bad = good;
  bad[8] = 61;  // NUM_LAYERS
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "NUM_LAYERS = 61");
  bad = std::vector<uint8_t>(good.begin(), good.end() - 5);
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "truncated");
  // Negative KV length in the full layer (layer 3: after 3 linear layers).
  bad = good;
  const size_t lin = size_t((c.conv_kernel - 1) * c.conv_dim() + c.lin_v_heads * c.lin_v_dim * c.lin_k_dim) * 4;
  const int32_t neg = -1;
  std::memcpy(bad.data() + 32 + 3 * lin, &neg, 4);
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "KV length -1");
  // Nothing above touched the target state.
  EXPECT_EQ(target.pos, before.pos);
  EXPECT_EQ(target.layers[0].ssm, before.layers[0].ssm);
  EXPECT_EQ(target.layers[3].len, 0);
}

// DeepSeek-V3 (MLA, v2 only): per layer i32 len, len x kv_lora latent rows, len x qk_rope rope-K
// rows; header words 8-9 kv_lora_rank, qk_rope_head_dim (docs/ops/formats.md "MFLX snapshot").
const std::string kDs3 = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_v3_tiny";

TEST(snapshot, MlaStopSaveRestoreContinueIsBitIdentical) {
  auto m = Model::load(kDs3);
  const ModelConfig& c = m->config();
  for (const char* backend : {"ref64", "ref32", "fast"}) {
    auto be = make_cpu_backend(backend);
    ModelState straight = ModelState::make(c, 16);
    const std::vector<float> want = decode(*m, *be, kTokens, straight);
    const size_t n = 7;
    ModelState first = ModelState::make(c, 16);
    std::vector<float> got = decode(*m, *be, std::span(kTokens).first(n), first);
    const std::vector<uint8_t> bytes = snapshot_save(c, first, 2);
    ModelState restored = ModelState::make(c, 1);
    snapshot_load(bytes, c, restored, "memory", int64_t(kTokens.size() - n));
    EXPECT_EQ(restored.pos, int64_t(n));
    for (int64_t i = 0; i < c.layers; ++i) {
      const LayerState &a = first.layers[size_t(i)], &b = restored.layers[size_t(i)];
      EXPECT_EQ(b.len, int64_t(n));
      const size_t nl = n * size_t(c.mla.kv_lora_rank), nr = n * size_t(c.mla.qk_rope_dim);
      EXPECT_EQ(std::memcmp(a.latent.data(), b.latent.data(), nl * 4), 0) << "layer " << i;
      EXPECT_EQ(std::memcmp(a.kpe.data(), b.kpe.data(), nr * 4), 0) << "layer " << i;
    }
    EXPECT_EQ(snapshot_save(c, restored, 2), bytes) << backend;  // saved again: the same bytes
    const std::vector<float> rest = decode(*m, *be, std::span(kTokens).subspan(n), restored);
    got.insert(got.end(), rest.begin(), rest.end());
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << backend;
  }
}

TEST(snapshot, MlaHeaderLayoutAndRejections) {
  auto m = Model::load(kDs3);
  const ModelConfig& c = m->config();
  ModelState st = ModelState::make(c, 8);
  auto be = make_cpu_backend("fast");
  decode(*m, *be, std::span(kTokens).first(5), st);
  const std::vector<uint8_t> v2 = snapshot_save(c, st, 2);
  std::vector<uint32_t> h(10);
  std::memcpy(h.data(), v2.data(), 40);
  // magic, version, layers, interval 1 (every layer MLA), heads, nope + rope, no linear state,
  // kv_lora_rank, qk_rope_head_dim.
  EXPECT_EQ(h, (std::vector<uint32_t>{kMflxMagic, 2, 3, 1, 4, 48, 0, 0, 64, 16}));
  EXPECT_EQ(v2.size(), 40 + 3 * (4 + 5 * (64 + 16) * 4));
  test::expect_error([&] { snapshot_save(c, st, 1); }, "cannot hold MLA layers");
  ModelState target = ModelState::make(c, 8);
  auto bad = v2;
  bad[4] = 1;  // a v1 header
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "f.mflx: version 1 cannot hold MLA");
  bad = v2;
  bad[32] = 32;  // kv_lora_rank
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "kv_lora_rank = 32, this model has 64");
  bad = std::vector<uint8_t>(v2.begin(), v2.end() - 4);
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "truncated at layer 2");
  bad = v2;
  const int32_t four = 4;  // the last layer claims one row less (its 5th row becomes trailing bytes)
  std::memcpy(bad.data() + 40 + 2 * (4 + 5 * (64 + 16) * 4), &four, 4);
  test::expect_error([&] { snapshot_load(bad, c, target, "f.mflx"); }, "different KV lengths");
  EXPECT_EQ(target.pos, 0);
  EXPECT_EQ(target.layers[0].len, 0);
}

}  // namespace
}  // namespace moe
