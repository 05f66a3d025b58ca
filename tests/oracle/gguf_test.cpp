// GGUF container (oracle/gguf.h): what the writer writes the reader reads back exactly; a file
// written by an independent writer (tests/oracle/data/write_gguf.py, Python's struct module, from
// the format's documentation) reads as it says; every corruption is refused with a message naming
// the file and the entry, and no prefix of a valid file is accepted or crashes the reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "oracle/gguf.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("moe_gguf_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_all(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// The error a file's bytes raise ("" when it loads).
std::string error_of(const std::string& bytes, const std::string& name) {
  const std::string p = temp_path(name);
  write_all(p, bytes);
  try {
    GgufFile f(p);
    fs::remove(p);
    return "";
  } catch (const Error& e) {
    fs::remove(p);
    return e.what();
  }
}

struct Sample {
  std::vector<std::pair<std::string, GgufValue>> kv;
  std::vector<float> f32;             // ne {8, 3}
  std::vector<uint8_t> q4_0, q6_k;    // ne {64, 2} and {256, 1}
  std::vector<GgufTensorOut> tensors;
};

Sample sample(uint32_t alignment = 0) {
  Sample s;
  s.kv.emplace_back("general.architecture", GgufValue::of_string("qwen3moe"));
  if (alignment) s.kv.emplace_back("general.alignment", GgufValue::of_u32(alignment));
  s.kv.emplace_back("qwen3moe.block_count", GgufValue::of_u32(4));
  s.kv.emplace_back("qwen3moe.expert_count", GgufValue::of_u64(128));
  s.kv.emplace_back("qwen3moe.rope.freq_base", GgufValue::of_f32(1e6f));
  s.kv.emplace_back("signed", GgufValue::of_i32(-7));
  s.kv.emplace_back("flag", GgufValue::of_bool(true));
  s.kv.emplace_back("tokenizer.ggml.tokens",
                    GgufValue::array_of(GgufType::STRING, {GgufValue::of_string("!"), GgufValue::of_string("\"")}));
  s.kv.emplace_back("nested", GgufValue::array_of(GgufType::ARRAY, {GgufValue::array_of(GgufType::U32, {GgufValue::of_u32(5)})}));
  for (int k = 0; k < 24; ++k) s.f32.push_back(0.5f * float(k) - 3.0f);
  for (int k = 0; k < 2 * 18 * 2; ++k) s.q4_0.push_back(uint8_t(k * 7));
  for (int k = 0; k < 210; ++k) s.q6_k.push_back(uint8_t(255 - k));
  s.tensors = {{"token_embd.weight", 0, {8, 3}, {reinterpret_cast<const uint8_t*>(s.f32.data()), 96}},
               {"blk.0.ffn_gate_exps.weight", 2, {64, 2}, s.q4_0},
               {"blk.0.ffn_down_exps.weight", 14, {256, 1}, s.q6_k}};
  return s;
}

TEST(Gguf, WriterAndReaderAgree) {
  for (uint32_t alignment : {0u, 64u}) {
    const Sample s = sample(alignment);
    const std::string p = temp_path("rt.gguf");
    write_gguf(p, s.kv, s.tensors);
    const GgufFile f(p);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), alignment ? alignment : 32u);
    EXPECT_EQ(f.data_start() % f.alignment(), 0u);
    ASSERT_EQ(f.metadata().size(), s.kv.size());
    for (size_t k = 0; k < s.kv.size(); ++k) {
      EXPECT_EQ(f.metadata()[k].first, s.kv[k].first);
      EXPECT_EQ(f.metadata()[k].second.summary(), s.kv[k].second.summary());
    }
    EXPECT_EQ(f.get_string("general.architecture"), "qwen3moe");
    EXPECT_EQ(f.get_uint("qwen3moe.block_count"), 4u);
    EXPECT_EQ(f.get_uint("qwen3moe.expert_count"), 128u);
    EXPECT_EQ(f.get_float("qwen3moe.rope.freq_base"), 1e6);
    EXPECT_EQ(f.find_value("signed")->i, -7);
    EXPECT_EQ(f.find_value("nested")->items[0].items[0].u, 5u);
    ASSERT_EQ(f.tensors().size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const GgufTensor& t = f.tensors()[k];
      EXPECT_EQ(t.name, s.tensors[k].name);
      EXPECT_EQ(t.type->id, s.tensors[k].type);
      EXPECT_EQ(t.ne, s.tensors[k].ne);
      EXPECT_EQ(t.offset % f.alignment(), 0u);
      ASSERT_EQ(t.bytes, s.tensors[k].bytes.size());
      EXPECT_EQ(std::memcmp(t.data, s.tensors[k].bytes.data(), t.bytes), 0) << t.name;
    }
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight")->type->name, std::string("q4_0"));
    fs::remove(p);
  }
}

TEST(Gguf, TypedGettersNameTheKey) {
  const Sample s = sample();
  const std::string p = temp_path("get.gguf");
  write_gguf(p, s.kv, s.tensors);
  const GgufFile f(p);
  const auto message = [&](auto call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([&] { f.get_uint("qwen3moe.missing"); }).find("metadata 'qwen3moe.missing' is missing"), std::string::npos);
  EXPECT_NE(message([&] { f.get_uint("signed"); }).find("expected a non-negative integer, found i32 -7"), std::string::npos);
  EXPECT_NE(message([&] { f.get_string("flag"); }).find("expected a string, found bool true"), std::string::npos);
  fs::remove(p);
}

// Every prefix of a valid file is refused with an error (never a crash, never accepted): the
// reader checks each count and length against the bytes left.
TEST(Gguf, EveryTruncationIsRefused) {
  const Sample s = sample();
  const std::string p = temp_path("full.gguf");
  write_gguf(p, s.kv, s.tensors);
  const std::string full = read_all(p);
  fs::remove(p);
  const size_t last_end = full.size();  // the last tensor's data ends the file (padded)
  for (size_t n = 0; n + 32 < last_end; ++n) {
    const std::string e = error_of(full.substr(0, n), "cut.gguf");
    EXPECT_NE(e, "") << "a prefix of " << n << " bytes was accepted";
    if (n > 8) {
      EXPECT_NE(e.find("cut.gguf"), std::string::npos) << e;
    }
  }
}

// Writes `v` little-endian over bytes [at, at + sizeof v).
template <class T>
std::string patched(std::string bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
  return bytes;
}

TEST(Gguf, CorruptionsAreNamed) {
  const Sample s = sample();
  const std::string p = temp_path("c.gguf");
  write_gguf(p, s.kv, {s.tensors[0]});
  const std::string good = read_all(p);
  fs::remove(p);
  ASSERT_EQ(error_of(good, "good.gguf"), "");
  const auto expect = [&](const std::string& bytes, const std::string& want) {
    const std::string e = error_of(bytes, "bad.gguf");
    EXPECT_NE(e.find(want), std::string::npos) << "expected '" << want << "', got: " << e;
  };
  expect("GGML" + good.substr(4), "not a GGUF file");
  expect(patched(good, 4, uint32_t(1)), "GGUF version 1");
  expect(patched(good, 4, uint32_t(3u << 24)), "big-endian");
  expect(patched(good, 4, uint32_t(9)), "version 9, expected 2 or 3");
  expect(patched(good, 8, uint64_t(1) << 40), "tensor infos cannot fit");
  expect(patched(good, 16, uint64_t(1) << 40), "entries cannot fit");
  // The first key's length, then its type.
  expect(patched(good, 24, uint64_t(1) << 50), "metadata entry 0's key");
  const size_t type_at = 24 + 8 + std::string("general.architecture").size();
  expect(patched(good, type_at, uint32_t(77)), "metadata 'general.architecture' at byte");
  expect(patched(good, type_at, uint32_t(77)), "unknown value type 77 (expected 0..12)");
  // The tensor info: name, n_dims, ne, type, offset at the end of the info section.
  const size_t info = good.find("token_embd.weight") + std::string("token_embd.weight").size();
  expect(patched(good, info, uint32_t(5)), "n_dims 5, expected 1..4");
  expect(patched(good, info + 4 + 16, uint32_t(4)), "ggml type 4 is unknown or no longer supported");
  expect(patched(good, info + 4 + 16 + 4, uint64_t(8)), "offset 8 is not a multiple of the alignment 32");
  expect(patched(good, info + 4 + 16 + 4, uint64_t(4096)), "(truncated file or corrupt offset)");
  expect(patched(good, info + 4 + 16, uint32_t(2)), "ne[0] = 8 is not a multiple of the type's block of 32");
  expect(patched(good, info + 4 + 8, uint64_t(1) << 62), "its size overflows 64 bits");
  // ne[0] = 2^62 f32 values: 2^64 bytes, which wrap to 0 in 64 bits (found by the fuzzer).
  expect(patched(patched(good, info + 4, uint64_t(1) << 62), info + 4 + 8, uint64_t(1)), "its size overflows 64 bits");
  expect(patched(good, info + 4 + 8, uint64_t(1) << 20), "(truncated file or corrupt offset)");
}

TEST(Gguf, WriterRefusesBadTensors) {
  const Sample s = sample();
  const auto message = [&](std::vector<GgufTensorOut> ts, std::vector<std::pair<std::string, GgufValue>> kv) {
    try {
      write_gguf(temp_path("w.gguf"), kv, ts);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  GgufTensorOut t = s.tensors[1];
  t.ne = {48, 2};
  EXPECT_NE(message({t}, s.kv).find("ne[0] = 48 is not a multiple of q4_0's block of 32"), std::string::npos);
  t = s.tensors[1], t.ne = {64, 3};
  EXPECT_NE(message({t}, s.kv).find("72 bytes given, q4_0 of this shape takes 108"), std::string::npos);
  EXPECT_NE(message({s.tensors[0], s.tensors[0]}, s.kv).find("appears twice"), std::string::npos);
  EXPECT_NE(message({s.tensors[0]}, {{"general.alignment", GgufValue::of_u32(24)}}).find("power of two"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(temp_path("w.gguf")));
}

// A file from an independent writer: tests/oracle/data/write_gguf.py packs the documented layout
// with Python's struct module (no code shared with ours).
TEST(Gguf, ReadsAnIndependentWriter) {
  const std::string p = temp_path("py.gguf");
  const std::string cmd = "python3 " MOE_SOURCE_DIR "/tests/oracle/data/write_gguf.py " + p;
  if (std::system("python3 -c 'import struct' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const GgufFile f(p);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(f.get_uint("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(f.find_value("qwen3moe.rope.freq_base")->f, 1000000.0);
  EXPECT_EQ(f.find_value("tokenizer.ggml.scores")->items.size(), 3u);
  EXPECT_EQ(f.find_value("tokenizer.ggml.scores")->items[2].f, -2.5);
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor& w = *f.find_tensor("output_norm.weight");
  EXPECT_EQ(w.type->name, std::string("f32"));
  ASSERT_EQ(w.ne, (std::vector<int64_t>{5}));
  std::vector<float> v(5);
  std::memcpy(v.data(), w.data, 20);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3, 4, 5}));
  const GgufTensor& q = *f.find_tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.type->name, std::string("q8_0"));
  EXPECT_EQ(q.ne, (std::vector<int64_t>{32, 2}));
  EXPECT_EQ(q.bytes, 68u);
  EXPECT_EQ(q.data[0], 0x00);  // the first block's f16 scale 1.0 = 0x3C00, little-endian
  EXPECT_EQ(q.data[1], 0x3C);
  EXPECT_EQ(int8_t(q.data[2 + 5]), -5 + 0);
  fs::remove(p);
}

}  // namespace
}  // namespace moe
