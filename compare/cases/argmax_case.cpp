#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "compare/cases/case_util.h"
#include "core/rng.h"
#include "ops/argmax.h"

namespace moe::compare {
namespace {

// ---- argmax: greedy sampling over lm_head logits. Rows cycle through the edge cases the op
// defines (kernels_cpu/ops/argmax.h):
//   0 plain logits N(0, 3^2) (a typical lm_head spread)
//   1 exact ties: the row's maximum copied to two later positions (the first must win)
//   2 NaN: two NaNs after the maximum (the first NaN wins over every number, +inf included)
//   3 -0.0 then +0.0 as the maximum of an all-negative row (equal: the first wins), and a -inf
//   4 +inf twice (the first wins) among ordinary logits
//   5 every element -inf (all tied: index 0)
// Row r is of kind r % 6, so a decode row is plain and 16 rows hold every kind.
std::vector<float> argmax_input(int64_t rows, int64_t n, Rng rng) {
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

// Rows that separate float orders the cyclic kinds above leave equal (n = 512, 5 rows):
//   0 a signalling NaN (bits 0x7F800001) before a quiet NaN: the first NaN must win, whatever
//     its payload (a NaN test that misses the lowest payload sees a number above +inf)
//   1 the only NaN is negative with the lowest payload (0xFF800001): still the maximum
//   2 +0.0 before -0.0 as the maximum (equal: the +0.0 wins; kind 3 only has -0.0 first)
//   3 adjacent floats 2.0 (0x40000000) before 2.0000002 (0x40000001): the later, larger wins
//     (an order key that merges neighbouring floats would call them tied)
//   4 a tie of the maximum at 256, 272 and 320 (the second pass of a 256-wide strided scan, in
//     the partials of different subgroups: at subgroup 8, subgroups 0, 2 and 8, the last two
//     reduced by the same lane of the final pass after a partial from the first pass), every
//     first-pass value above every other second-pass value: index 256 must win
std::vector<float> argmax_edge_input(Rng rng) {
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

OpCase argmax_case(const std::string& label, int64_t rows, int64_t n, uint64_t seed, bool edge = false) {
  ArgmaxParams p;
  p.rows = rows, p.n = n;
  OpCase c = new_case("argmax", label, seed);
  set_vars(c, p);
  const std::vector<float> x = edge ? argmax_edge_input(Rng(seed)) : argmax_input(rows, n, Rng(seed));
  std::vector<int32_t> idx(static_cast<size_t>(rows));
  argmax_ref<double>(p, x, idx);
  c.tensors["x"] = f32_tensor(x);
  HostTensor out;
  out.type = ElemType::I32, out.elems = rows, out.output = true, out.words.assign(size_t(rows), 0u);
  c.tensors["idx"] = out;
  // Exact: a comparison of two floats has no rounding error, so the index is determined, the
  // lowest-index tie rule and the NaN rule included. Kind indices with rows of 1 and NO scores:
  // decide_indices then demands equality. (With the values as scores and bound 0 the near-tie
  // rule would accept any index of an exact tie, so returning the last of tied maxima, a bug
  // against the contract, would pass.)
  OutputSpec s;
  s.name = "idx", s.kind = Kind::Indices, s.row = 1;
  c.outputs["idx"] = s;
  c.truth["idx"] = std::vector<double>(idx.begin(), idx.end());
  return c;
}

}  // namespace

std::vector<OpCase> argmax_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // n around the 256-wide workgroup and the subgroup sizes; 6 rows: every edge kind once.
    for (int64_t n : {1, 2, 7, 31, 33, 67, 255, 256, 257, 4099})
      out.push_back(argmax_case("remainder n " + std::to_string(n), 6, n, seed + uint64_t(n)));
    // Rows past the 8192 and 16384 floats engines may stage in shared memory; decode (1 row).
    out.push_back(argmax_case("remainder n 8257", 6, 8257, seed + 8257));
    out.push_back(argmax_case("remainder T 1 n 16411", 1, 16411, seed + 16411));
    out.push_back(argmax_case("edge payload NaN, +0 before -0, neighbour floats, 2nd-pass ties", 5, 512, seed + 512, true));
  }
  if (real) {
    // The A17B / A3B lm_head vocabulary: decode (1 row: plain logits), 4 rows (kinds 0-3) and
    // 16 rows (every kind).
    out.push_back(argmax_case("vocab 248320 decode", 1, 248320, seed));
    out.push_back(argmax_case("vocab 248320 4 rows", 4, 248320, seed + 1));
    out.push_back(argmax_case("vocab 248320 16 rows", 16, 248320, seed + 2));
    // Qwen3-Next's vocabulary (docs/ops/models.md "HF config fields": its config's value), decode.
    out.push_back(argmax_case("Qwen3-Next vocab 151936 decode T 1", 1, 151936, seed + 3));
  }
  return out;
}

}  // namespace moe::compare
