// rope_yarn against HuggingFace's DeepSeek-V3 YaRN RoPE (fixtures/golden/deepseek_yarn_rope,
// written by fixtures/hf_golden/make_yarn_golden.py): DeepseekV3RotaryEmbedding with Cogito's
// rope scaling and apply_rotary_pos_emb_interleave on q_pe [T, 4, 64] and k_pe [T, 1, 64] at
// positions 0 .. 163839, in float32 (HF's model path), in float64 (HF's formulas in f64
// throughout) and on HF's float64 model path (whose angles HF forces to f32). Skipped while the
// file is absent.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "oracle/safetensors.h"
#include "ops/rope_yarn.h"
#include "test_util.h"

namespace moe {
namespace {

const std::string kGolden = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_yarn_rope/golden.safetensors";

template <class T>
std::vector<T> read(const SafetensorsFile& f, const std::string& name, DType dtype, int64_t numel) {
  const TensorInfo* t = f.find(name);
  EXPECT_NE(t, nullptr) << kGolden << ": no tensor " << name;
  if (!t) return {};
  EXPECT_EQ(t->dtype, dtype) << name << " is " << dtype_name(t->dtype) << ", expected " << dtype_name(dtype);
  EXPECT_EQ(t->numel(), numel) << name << " has shape " << t->shape_string() << ", expected " << numel << " elements";
  if (t->dtype != dtype || t->numel() != numel) return {};
  std::vector<T> v(size_t(t->numel()));
  std::memcpy(v.data(), t->data, v.size() * sizeof(T));
  return v;
}

// Every |found - expected| within its bound; the worst element as evidence either way.
template <class E, class F>
void expect_within(const std::string& what, const std::vector<E>& expected, const std::vector<F>& found,
                   const std::vector<double>& bound) {
  ASSERT_EQ(expected.size(), found.size()) << what;
  double worst = 0;
  size_t at = 0, exact = 0;
  for (size_t j = 0; j < expected.size(); ++j) {
    const double d = std::fabs(double(found[j]) - double(expected[j]));
    exact += d == 0;
    const double ratio = std::isnan(d) ? INFINITY : d / bound[j];
    if (ratio > worst) worst = ratio, at = j;
  }
  std::printf("  %-34s worst %5.1f %% of its bound at %zu (HF %.9g, ours %.9g), %zu of %zu equal\n", what.c_str(),
              100 * worst, at, double(expected[at]), double(found[at]), exact, expected.size());
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " HF " << expected[at] << " ours " << found[at] << " bound "
                        << bound[at];
}

// The golden, our tables and their error bounds, shared by the tests below.
class DeepseekYarnRope : public testing::Test {
 protected:
  static constexpr int64_t R = 64, half = 32;
  std::unique_ptr<SafetensorsFile> f;
  std::vector<int64_t> positions;
  int64_t T = 0;
  RopeYarnParams p;  // Cogito-V2's rope scaling: the params' defaults, as the script's config
  std::vector<double> inv, d_inv64, d_inv32;
  double m = 1;

  void SetUp() override {
    if (!std::filesystem::exists(kGolden))
      GTEST_SKIP() << kGolden << " is absent: run `python3 fixtures/hf_golden/make_yarn_golden.py OUT` where "
                   << "transformers 5.17 and torch are installed (the GPU machine) and copy "
                   << "OUT/deepseek_yarn_rope/golden.safetensors there (fixtures/README.md).";
    f = std::make_unique<SafetensorsFile>(kGolden);
    const TensorInfo* pt = f->find("positions");
    ASSERT_NE(pt, nullptr) << kGolden << ": no tensor positions";
    T = pt->numel(), p.tokens = T;
    positions = read<int64_t>(*f, "positions", DType::I64, T);
    // HF's f64 table evaluates the same formula in f64 (< 10 roundings on each side, the ramp
    // weight's error scaled by extra <= 10 inv): within (inv + extra) 32 2^-53. HF's f32 table is
    // an f32 evaluation with one rounding per operation: inv 6u (powf within 1 ULP, the
    // reciprocals, the blend) + on the ramp 2u inter + 1.01u extra (the weight's rounding, at the
    // larger of HF's and our blend's).
    inv = rope_yarn_inv_freq<double>(p);
    const YarnRange range = rope_yarn_range(p);
    d_inv64.resize(half), d_inv32.resize(half);
    for (int64_t i = 0; i < half; ++i) {
      const double extra = std::pow(double(p.theta), -double(2 * i) / R), inter = extra / double(p.factor);
      const double w = (double(i) - range.low) / (range.high - range.low);
      const double ramp = w > 0 && w < 1 ? 2 * kU32 * inter + 1.01 * kU32 * extra : 0.0;
      d_inv64[i] = (inv[i] + extra) * 32 * 0x1.0p-53;
      d_inv32[i] = inv[i] * 6 * kU32 + ramp + d_inv64[i];
    }
    m = std::fabs(rope_yarn_attention_factor<double>(p));
    std::printf("HF transformers %s, %lld positions\n",
                f->metadata().count("transformers") ? f->metadata().at("transformers").c_str() : "?", (long long)T);
  }

  std::vector<float> input(const std::string& tag, int64_t heads) {
    return read<float>(*f, tag + "_pe", DType::F32, T * heads * R);
  }
};

TEST_F(DeepseekYarnRope, TablesMatchHf) {
  const auto hf_inv64 = read<double>(*f, "inv_freq.f64", DType::F64, half);
  const auto hf_inv32 = read<float>(*f, "inv_freq.f32", DType::F32, half);
  const std::vector<float> inv32 = rope_yarn_inv_freq<float>(p);
  std::vector<double> d_inv32x2(half);
  for (int64_t i = 0; i < half; ++i) d_inv32x2[i] = 2 * d_inv32[i];
  expect_within("inv_freq f64: HF vs truth", hf_inv64, inv, d_inv64);
  expect_within("inv_freq f32: HF vs truth", inv, hf_inv32, d_inv32);
  expect_within("inv_freq f32: HF vs our f32 tier", hf_inv32, inv32, d_inv32x2);
  const auto att = read<double>(*f, "attention_scaling", DType::F64, 1);
  ASSERT_EQ(att.size(), 1u);
  EXPECT_NEAR(rope_yarn_attention_factor<double>(p), att[0], 1e-15 * att[0]);

  // HF's f64 cos/sin tables (cat(freqs, freqs) * m) against cos(pos inv) m from our f64 table:
  // the angles differ by pos d_inv64 + |a| 2^-52, cos/sin and the product add 2 2^-53.
  const auto cos64 = read<double>(*f, "cos.f64", DType::F64, T * R), sin64 = read<double>(*f, "sin.f64", DType::F64, T * R);
  std::vector<double> cos_ours(T * R), sin_ours(T * R), d_table(T * R);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < R; ++j) {
      const int64_t i = j % half;
      const double a = double(positions[t]) * inv[i];
      cos_ours[t * R + j] = std::cos(a) * m, sin_ours[t * R + j] = std::sin(a) * m;
      d_table[t * R + j] = m * (double(positions[t]) * d_inv64[i] + a * 0x1.0p-52 + 4 * 0x1.0p-53);
    }
  expect_within("cos f64: HF vs truth", cos64, cos_ours, d_table);
  expect_within("sin f64: HF vs truth", sin64, sin_ours, d_table);
}

TEST_F(DeepseekYarnRope, TruthIsHfF64RoundedToF32) {
  // HF's f64 evaluation and ours differ by the f64 angle difference (pos d_inv64 + |a| 2^-52; the
  // tables agree bit for bit in the 5.17 golden) and the f64 cos/sin, products and sum
  // (8 2^-53 m |r|): far below an f32 ulp. So our truth tier's f32 result must be HF's f64 value
  // rounded to nearest, except where HF's value lies within that difference of a rounding
  // midpoint. (A bound of u |y| would be used up to ~100 % by the rounding alone.)
  for (const auto& [tag, heads] : {std::pair<std::string, int64_t>{"q", 4}, {"k", 1}}) {
    p.heads = heads;
    const int64_t n = T * heads * R;
    const auto x = input(tag, heads);
    const auto hf64 = read<double>(*f, tag + "_out.f64", DType::F64, n);
    ASSERT_EQ(int64_t(x.size()), n);
    ASSERT_EQ(int64_t(hf64.size()), n);
    std::vector<float> truth(n);
    rope_yarn_ref<double>(p, positions, x, truth);
    int64_t rounded = 0, off = 0;
    for (int64_t row = 0; row < T * heads; ++row)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t base = row * R, t = row / heads;
        const double r = std::hypot(double(x[base + 2 * i]), double(x[base + 2 * i + 1]));
        const double a = double(positions[t]) * inv[i];
        const double diff = m * r * (double(positions[t]) * d_inv64[i] + a * 0x1.0p-52 + 8 * 0x1.0p-53);
        for (const int64_t j : {base + i, base + i + half}) {
          const float want = float(hf64[j]);
          if (want == truth[j]) {
            ++rounded;
            continue;
          }
          const double midpoint = (double(want) + double(truth[j])) / 2;
          const bool near_midpoint =
              std::fabs(hf64[j] - midpoint) <= diff && std::nextafter(want, truth[j]) == truth[j];
          if (!near_midpoint && off++ < 5)
            ADD_FAILURE() << tag << " element " << j << ": HF f64 " << hf64[j] << " rounds to " << want
                          << ", our truth tier gives " << truth[j];
        }
      }
    std::printf("  %-34s %lld of %lld are HF's f64 rounded to f32\n", (tag + " f64: HF vs our truth").c_str(),
                (long long)rounded, (long long)n);
    EXPECT_EQ(off, 0) << tag;
  }
}

TEST_F(DeepseekYarnRope, F32PathsMatchHf) {
  for (const auto& [tag, heads] : {std::pair<std::string, int64_t>{"q", 4}, {"k", 1}}) {
    p.heads = heads;
    const int64_t n = T * heads * R;
    const auto x = input(tag, heads);
    ASSERT_EQ(int64_t(x.size()), n);
    std::vector<float> truth(n), r32(n), fast(n);
    rope_yarn_ref<double>(p, positions, x, truth);
    rope_yarn_ref<float>(p, positions, x, r32);
    rope_yarn_fast(p, positions, x, fast);
    // HF's float32 path and ours are each within rope_yarn_f32_bound of the truth.
    const std::vector<double> b32 = rope_yarn_f32_bound(p, positions, x);
    std::vector<double> b32x2(b32);
    for (double& b : b32x2) b *= 2;
    const auto hf32 = read<float>(*f, tag + "_out.f32", DType::F32, n);
    expect_within(tag + " f32: HF vs truth", truth, hf32, b32);
    expect_within(tag + " f32: HF vs our f32 tier", hf32, r32, b32x2);
    expect_within(tag + " f32: HF vs our fast tier", hf32, fast, b32x2);
    // HF's float64 model path: f32 angles and cos/sin cast to f64, the rotation in f64, so an f32
    // evaluation's error (its rotation only rounds less).
    const auto native = read<double>(*f, tag + "_out.native_f64", DType::F64, n);
    expect_within(tag + " native f64: HF vs our truth", native, truth, b32);

    // rope_interleave = False (HF apply_rotary_pos_emb): the half-split pairing, f32.
    RopeYarnParams hs = p;
    hs.interleaved = false;
    std::vector<float> hs32(n), hs_fast(n);
    rope_yarn_ref<float>(hs, positions, x, hs32);
    rope_yarn_fast(hs, positions, x, hs_fast);
    std::vector<double> bhs = rope_yarn_f32_bound(hs, positions, x);
    for (double& b : bhs) b *= 2;
    const auto hf_hs = read<float>(*f, tag + "_out.halfsplit_f32", DType::F32, n);
    expect_within(tag + " half-split f32: HF vs our f32 tier", hf_hs, hs32, bhs);
    expect_within(tag + " half-split f32: HF vs our fast tier", hf_hs, hs_fast, bhs);
  }
}

}  // namespace
}  // namespace moe
