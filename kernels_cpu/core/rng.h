// Counter-based random numbers: value i of stream s under seed k is a pure function of
// (k, s, i), so the same seed gives the same bytes on every machine and any case can be
// reproduced from its printed seed. Mixing is SplitMix64's finaliser.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.h"

namespace moe {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0) : key_(mix64(seed ^ mix64(stream + 0x9E3779B97F4A7C15ull))) {}
  // A child generator for a named sub-stream (e.g. one per tensor).
  Rng fork(uint64_t stream) const { return Rng(key_, stream); }

  uint64_t next_u64() { return mix64(key_ + 0x9E3779B97F4A7C15ull * ++counter_); }
  uint32_t next_u32() { return uint32_t(next_u64() >> 32); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return double(next_u64() >> 11) * 0x1.0p-53; }
  float uniform(float lo, float hi) { return float(lo + (hi - lo) * uniform01()); }
  // Standard normal (Box-Muller on two uniforms; the log argument is never 0).
  double normal() {
    const double u1 = (double(next_u64() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  int64_t below(int64_t n) { return int64_t(uniform01() * double(n)); }

  std::vector<float> uniform_vec(int64_t n, float lo, float hi) {
    std::vector<float> v(n);
    for (auto& x : v) x = uniform(lo, hi);
    return v;
  }
  std::vector<float> normal_vec(int64_t n, double stddev, double mean = 0.0) {
    std::vector<float> v(n);
    for (auto& x : v) x = float(mean + stddev * normal());
    return v;
  }
  // Activations as the models produce them: N(0, 1) with a few outlier channels (x20).
  std::vector<float> activations(int64_t n) {
    std::vector<float> v = normal_vec(n, 1.0);
    for (int64_t i = 0; i < n; i += 97) v[i] *= 20.0f;
    return v;
  }
  // Element i takes draws 2i+1 and 2i+2 of this generator, whatever the thread count: blocks of
  // a large matrix (a bf16 lm_head has 5e8 values) are filled in parallel from positioned copies.
  std::vector<bf16> bf16_normal_vec(int64_t n, double stddev, double mean = 0.0) {
    std::vector<bf16> v(n);
    const int64_t block = int64_t(1) << 16, blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(static) if (n > 4 * block)
    for (int64_t b = 0; b < blocks; ++b) {
      Rng r = *this;
      r.counter_ += 2 * uint64_t(b * block);
      for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) v[i] = f32_to_bf16_rne(float(mean + stddev * r.normal()));
    }
    counter_ += 2 * uint64_t(n);
    return v;
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace moe
