// moeoracle's exact decoding of ggml's block formats (core/ggml_blocks.h) against ggml's own
// dequantisation (ggml_get_type_traits(type)->to_float): 4096 blocks of random bytes per format
// with random finite f16 scales; each of our values rounded to f32 must equal ggml's. Built and
// run by dequant_crosscheck.sh against a ggml checkout (not part of the build: ggml is no
// dependency of moeoracle).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "ggml.h"
#include "core/ggml_blocks.h"
int main() {
  std::mt19937 rng(2026);
  struct T { uint32_t id; int block; int bytes; std::vector<int> f16_at; };
  const T types[] = {{2, 32, 18, {0}}, {3, 32, 20, {0, 2}}, {6, 32, 22, {0}}, {7, 32, 24, {0, 2}},
                     {8, 32, 34, {0}}, {12, 256, 144, {0, 2}}, {14, 256, 210, {208}},
                     {10, 256, 84, {80, 82}}, {11, 256, 110, {108}}, {13, 256, 176, {0, 2}}, {20, 32, 18, {0}}, {23, 256, 136, {0}}};
  int bad_total = 0;
  for (const T& t : types) {
    const int blocks = 4096;
    std::vector<uint8_t> b(size_t(blocks) * t.bytes);
    for (auto& x : b) x = uint8_t(rng());
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (int k = 0; k < blocks; ++k)
      for (int at : t.f16_at) {
        ggml_fp16_t h = ggml_fp32_to_fp16(u(rng) * std::ldexp(1.0f, int(rng() % 20) - 14));
        std::memcpy(&b[size_t(k) * t.bytes + at], &h, 2);
      }
    const int64_t n = int64_t(blocks) * t.block;
    std::vector<float> theirs(n);
    ggml_get_type_traits(ggml_type(t.id))->to_float(b.data(), theirs.data(), n);
    std::vector<double> ours(n);
    moe::ggml_dequant_f64(t.id, b, n, ours.data());
    int64_t exact = 0, off = 0; double max_ulp = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (float(ours[i]) == theirs[i]) { ++exact; continue; }
      ++off;
      const double ulp = std::ldexp(1.0, std::ilogb(theirs[i]) - 23);
      max_ulp = std::max(max_ulp, std::fabs(ours[i] - double(theirs[i])) / ulp);
    }
    std::printf("%-5s %8lld values: %8lld equal as f32, %6lld differ, at most %.3g ulp of ggml's f32 from the exact value\n",
                ggml_type_name(ggml_type(t.id)), (long long)n, (long long)exact, (long long)off, max_ulp);
  }
  return 0;
}
