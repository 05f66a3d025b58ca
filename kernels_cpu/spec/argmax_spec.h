// argmax's spec: its shapes and its seeded inputs, read by the CPU three-way check
// (kernels_cpu/check/argmax_check.cpp) and the GPU cases (compare/cases/argmax_case.cpp, also for
// mutate). The op itself: kernels_cpu/ops/argmax.h. Every judge demands the very index: a
// comparison of two floats has no rounding error, so the index is determined, the lowest-index tie
// rule and the NaN rule included.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/argmax.h"
#include "spec/shape.h"

namespace moe {

// Logits N(0, 3^2) (a typical lm_head spread); row r is of kind r % 6, the edge cases the op
// defines, so a decode row is plain and 16 rows hold every kind:
//   0 plain logits
//   1 exact ties: the row's maximum copied to two later positions (the first must win)
//   2 NaN: two NaNs after the maximum (the first NaN wins over every number, +inf included)
//   3 -0.0 then +0.0 as the maximum of an all-negative row (equal: the first wins), and a -inf
//   4 +inf twice (the first wins) among ordinary logits
//   5 every element -inf (all tied: index 0)
// edge: instead the 5 rows of n = 512 that separate float orders the kinds above leave equal:
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
std::vector<float> argmax_inputs(const ArgmaxParams& p, uint64_t seed, bool edge);

// The variant: the edge rows (rows 5, n 512) instead of the cyclic kinds.
using ArgmaxShape = SpecShape<ArgmaxParams, bool>;
// Remainders: n around the 256-wide workgroup and the subgroup sizes (6 rows: every kind once),
// rows past the 8192 and 16384 floats engines may stage in shared memory, the edge rows. Real: the
// A17B / A3B lm_head vocabulary (decode: plain logits, 4 rows: kinds 0-3, 16 rows: every kind),
// Qwen3-Next's (docs/ops/models.md "HF config fields": its config's value) and
// DeepSeek-V3's (Cogito-V2).
std::vector<ArgmaxShape> argmax_shapes(bool remainders, bool real);

}  // namespace moe
