// Mapping files for `diff --map`: placeholders, {token} rows, literal names, first rule wins,
// and malformed files rejected with the file and the entry named.
#include <set>

#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/tap_map.h"

#include "test_util.h"

namespace moe {
namespace {

TEST(tap_map, PlaceholdersTokensAndLiterals) {
  const TapMap m = TapMap::parse(R"({"version": 1, "map": {
      "blk.{layer}.attn_norm": "model.layers.{layer}.input_layernorm.out",
      "t{token}.blk.{layer}.ffn_out": "model.layers.{layer}.mlp.out",
      "result.output": "logits",
      "blk.{layer}.{what}": "model.layers.{layer}.out"}})",
                                 "test");
  auto a = m.map("blk.12.attn_norm");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->tap, "model.layers.12.input_layernorm.out");
  EXPECT_EQ(a->token, -1);
  auto b = m.map("t3.blk.0.ffn_out");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->tap, "model.layers.0.mlp.out");
  EXPECT_EQ(b->token, 3);
  ASSERT_TRUE(m.map("result.output"));
  EXPECT_FALSE(m.map("resultXoutput"));  // '.' is literal, not a regex wildcard
  EXPECT_FALSE(m.map("blk.x.attn_norm"));  // placeholders match numbers only
  auto c = m.map("blk.2.7");  // the first matching rule wins; the catch-all comes last
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tap, "model.layers.2.out");
}

// Digits a placeholder could take or leave: each placeholder takes the most digits with which
// the rest of the key still matches (what the key read as a regex with greedy \d+ gave).
TEST(tap_map, AmbiguousDigitsGoToTheFirstPlaceholder) {
  const TapMap m = TapMap::parse(R"({"version": 1, "map": {"t{token}1.x": "logits", "{a}{b}": "model.layers.{a}.out.{b}",
                                      "L{a}0{b}": "model.layers.{a}.{b}"}})",
                                 "test");
  auto t = m.map("t121.x");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token, 12);
  auto ab = m.map("1234");
  ASSERT_TRUE(ab);
  EXPECT_EQ(ab->tap, "model.layers.123.out.4");
  auto l = m.map("L10203");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->tap, "model.layers.102.3");
  auto l100 = m.map("L100");  // {a} gives back its last 0s until {b} has a digit: 1, 0, 0
  ASSERT_TRUE(l100);
  EXPECT_EQ(l100->tap, "model.layers.1.0");
  EXPECT_FALSE(m.map("L10"));  // {b} needs a digit after the 0
}

// A dump's tensor names come from another program: a name of a million digits is matched in
// linear time and stack (std::regex recursed per character and overflowed the stack; found with
// a crafted input, see docs/fuzzing.md).
TEST(tap_map, LongNamesDoNotExhaustTheStack) {
  const TapMap m = TapMap::parse(R"({"version": 1, "map": {"t{token}.x{a}": "model.layers.{a}.out"}})", "test");
  const std::string digits(1000000, '7');
  auto t = m.map("t1.x" + digits);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tap, "model.layers." + digits + ".out");
  EXPECT_FALSE(m.map("t1.x" + digits + "y"));
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"{a}{b}{c}{d}{e}{f}{g}{h}{i}{j}{k}{l}{m}{n}{o}{p}{q}": "x"}})", "m.json"); },
                     "17 placeholders, at most 16");
}

TEST(tap_map, BadFilesAreRejected) {
  test::expect_error([] { TapMap::parse("{", "m.json"); }, "m.json: malformed JSON");
  test::expect_error([] { TapMap::parse(R"({"version": 2, "map": {"a": "b"}})", "m.json"); }, "version");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {}})", "m.json"); }, "empty");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"a": 3}})", "m.json"); }, "map[\"a\"]");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"b.{l": "x"}})", "m.json"); }, "unclosed");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"b.{l}": "x.{m}"}})", "m.json"); },
                     "placeholder {m} is not in the key");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"t{token}": "x.{token}"}})", "m.json"); },
                     "selects a row");
  test::expect_error([] { TapMap::parse(R"({"version": 1, "map": {"a": "b"}, "extra": 1})", "m.json"); },
                     "unknown key");
  test::expect_error([] { TapMap::load("/nonexistent/map.json"); }, "/nonexistent/map.json");
}

}  // namespace
}  // namespace moe

namespace moe {
namespace {

// The shipped llama.cpp maps (engines/llama-cpp/) load and send llama.cpp's graph names to our taps.
TEST(tap_map, ShippedLlamaCppMaps) {
  const std::string dir = std::string(MOE_SOURCE_DIR) + "/engines/llama-cpp/";
  const TapMap q3 = TapMap::load(dir + "qwen3moe.map.json");
  ASSERT_TRUE(q3.map("l_out-47"));
  EXPECT_EQ(q3.map("l_out-47")->tap, "model.layers.47.out");
  EXPECT_EQ(q3.map("ffn_moe_out-0")->tap, "model.layers.0.mlp.out");
  EXPECT_EQ(q3.map("attn_norm-3")->tap, "model.layers.3.input_layernorm.out");
  EXPECT_EQ(q3.map("result_output")->tap, "logits");
  EXPECT_FALSE(q3.map("Qcur-0"));
  const TapMap q35 = TapMap::load(dir + "qwen35moe.map.json");
  EXPECT_EQ(q35.map("ffn_out-12")->tap, "model.layers.12.mlp.out");
  EXPECT_FALSE(q35.map("ffn_moe_out-12"));  // the routed sum alone: not our mlp.out
  EXPECT_EQ(q35.map("result_norm")->tap, "model.norm.out");
  const TapMap ds = TapMap::load(dir + "deepseek2.map.json");
  EXPECT_EQ(ds.map("ffn_moe_out-3")->tap, "model.layers.3.mlp.experts.out");
  EXPECT_EQ(ds.map("ffn_shexp-3")->tap, "model.layers.3.mlp.shared_experts.out");
  EXPECT_EQ(ds.map("ffn_out-0")->tap, "model.layers.0.mlp.out");
  EXPECT_EQ(ds.map("ffn_norm-60")->tap, "model.layers.60.post_attention_layernorm.out");
  EXPECT_FALSE(ds.map("kv_cmpr-0"));  // three tensors of one layer carry this name
}

// Every tap the deepseek2 map names is one our forward of a DeepSeek-V3 model writes.
TEST(tap_map, Deepseek2MapNamesTapsOfTheForward) {
  const TapMap ds = TapMap::load(std::string(MOE_SOURCE_DIR) + "/engines/llama-cpp/deepseek2.map.json");
  const auto model = Model::load(std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_v3_tiny");
  auto be = make_cpu_backend("fast");
  Forward fwd(*model, *be);
  ModelState st = ModelState::make(model->config(), 2);
  DumpSink sink({});
  const std::vector<int32_t> tokens{3, 5};
  fwd.run(tokens, st, &sink);
  std::set<std::string> taps;
  for (auto& [name, t] : sink.take()) taps.insert(name);
  for (const char* llama : {"inp_embd", "attn_norm-0", "ffn_norm-1", "ffn_moe_out-1", "ffn_shexp-2", "ffn_out-0", "ffn_out-2",
                            "l_out-2", "result_norm", "result_output"}) {
    ASSERT_TRUE(ds.map(llama)) << llama;
    EXPECT_TRUE(taps.count(ds.map(llama)->tap)) << llama << " -> " << ds.map(llama)->tap;
  }
}

}  // namespace
}  // namespace moe
