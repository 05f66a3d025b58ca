#include "spec/argmax_spec.h"

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "core/rng.h"

namespace moe {
namespace {

std::vector<float> cyclic_rows(int64_t rows, int64_t n, Rng rng) {
  std::vector<float> x = rng.fork(1).normal_vec(rows * n, 3.0);
  Rng pos = rng.fork(2);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x.data() + r * n;
    auto at = [&](int64_t lo) { return lo >= n ? n - 1 : lo + pos.below(n - lo); };  // a position in [lo, n)
    int64_t m = 0;
    for (int64_t i = 1; i < n; ++i)
      if (xr[i] > xr[m]) m = i;
    switch (r % 6) {
      case 0: break;
      case 1: xr[at(m)] = xr[m], xr[at(m)] = xr[m]; break;
      case 2: xr[at(m)] = nan, xr[at(m)] = nan; break;
      case 3: {
        for (int64_t i = 0; i < n; ++i) xr[i] = -std::fabs(xr[i]) - 1.0f;
        const int64_t a = pos.below(n), b = a + 1 < n ? at(a + 1) : a;
        xr[b] = 0.0f, xr[a] = -0.0f;  // -0.0 first (alone when a is the last position)
        if (a != 0 && b != 0) xr[0] = -inf;
        break;
      }
      case 4: xr[at(0)] = inf, xr[at(0)] = inf; break;
      case 5:
        for (int64_t i = 0; i < n; ++i) xr[i] = -inf;
        break;
    }
  }
  return x;
}

std::vector<float> edge_rows(Rng rng) {
  const int64_t n = 512;
  std::vector<float> x = rng.fork(1).normal_vec(5 * n, 1.0);
  const auto bits = [](uint32_t b) { return std::bit_cast<float>(b); };
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t r = 0; r < 5; ++r) {
    float* xr = x.data() + r * n;
    for (int64_t i = 0; i < n; ++i) xr[i] = std::fabs(xr[i]) < 1.5f ? xr[i] : 0.5f * xr[i] / std::fabs(xr[i]);
    switch (r) {
      case 0: xr[100] = bits(0x7F800001u), xr[300] = qnan; break;
      case 1: xr[333] = bits(0xFF800001u); break;
      case 2:
        for (int64_t i = 0; i < n; ++i) xr[i] = -std::fabs(xr[i]) - 1.0f;
        xr[77] = 0.0f, xr[400] = -0.0f;
        break;
      case 3: xr[130] = bits(0x40000000u), xr[390] = bits(0x40000001u); break;
      case 4:
        for (int64_t i = 0; i < n; ++i) xr[i] = i < 256 ? std::fabs(xr[i]) : -std::fabs(xr[i]) - 1.0f;
        xr[256] = xr[272] = xr[320] = 10.0f;
        break;
    }
  }
  return x;
}

}  // namespace

std::vector<float> argmax_inputs(const ArgmaxParams& p, uint64_t seed, bool edge) {
  return edge ? edge_rows(Rng(seed)) : cyclic_rows(p.rows, p.n, Rng(seed));
}

std::vector<ArgmaxShape> argmax_shapes(bool remainders, bool real) {
  std::vector<ArgmaxShape> out;
  auto add = [&](std::string label, int64_t rows, int64_t n, uint64_t offset, bool edge = false) {
    out.push_back({std::move(label), ArgmaxParams{rows, n}, offset, edge});
  };
  if (remainders) {
    for (int64_t n : {1, 2, 7, 31, 33, 67, 255, 256, 257, 4099}) add("remainder n " + std::to_string(n), 6, n, n);
    add("remainder n 8257", 6, 8257, 8257);
    add("remainder T 1 n 16411", 1, 16411, 16411);
    add("edge payload NaN, +0 before -0, neighbour floats, 2nd-pass ties", 5, 512, 512, true);
  }
  if (real) {
    add("vocab 248320 decode", 1, 248320, 0);
    add("vocab 248320 4 rows", 4, 248320, 1);
    add("vocab 248320 16 rows", 16, 248320, 2);
    add("Qwen3-Next vocab 151936 decode T 1", 1, 151936, 3);
    add("greedy token, vocab 128815", 1, 128815, 4);  // Cogito-V2 (DeepSeek-V3)
  }
  return out;
}

}  // namespace moe
