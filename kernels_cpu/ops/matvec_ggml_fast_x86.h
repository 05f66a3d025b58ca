// matvec_ggml_fast's fused x86 row loops for the 4-bit formats of real checkpoints (q4_0, q4_K):
// the codes are turned into floats in registers and dotted with x in one pass, each block's (or
// sub-block's) codes summed before its scale is applied (matvec_ggml_fast_x86.cpp says how and
// why it is exact where it must be). Internal to the fast tier.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace moe::ggml_fused {

// Whether the fused loops take ggml type `type` (2 q4_0, 12 q4_K).
bool takes(uint32_t type);

// x rearranged once per call into the lane order the row loop reads (and, for q4_K, the sums of
// x over every 32 columns). `lanes` is 16 (AVX-512) or 8 (AVX2). Empty `xs` when some |x| is so
// large (>= 2^100) that the power-of-two prescaling could overflow: then `usable` is false and the
// caller takes the decode-then-dot path.
struct PreparedX {
  bool usable = false;
  int64_t cols = 0, tokens = 0;
  int64_t fused_cols = 0;    // columns the fused loop covers (whole lane groups); the rest: scalar
  std::vector<float> buf;    // xs and lane sums, with room to start them on a cache line
  size_t offset = 0;
  // [tokens][fused_cols], lane order, prescaled by powers of two; 64-byte aligned, so that no
  // vector load of it straddles two cache lines.
  const float* xs() const { return buf.data() + offset; }
  // q4_0: [tokens][fused_cols / 8], each lane's 8 columns of x summed in f32 (unscaled), after xs.
  const float* lane_sums() const { return xs() + tokens * fused_cols; }
  std::vector<float> sums;   // q4_K: [tokens][cols / 32] f32 sums of x in column order
};
PreparedX prepare(uint32_t type, int lanes, const float* X, int64_t cols, int64_t tokens);

// Rows [r0, r1) of Y = X W^T (Y[t * rows + r]); `row_bytes` of W per row. AVX-512F/BW/DQ/VL and
// AVX2 + FMA + F16C builds of the same algorithm (x86-64 only); the caller checks the CPU.
void rows_avx512(uint32_t type, const uint8_t* W, size_t row_bytes, const PreparedX& px, const float* X,
                 int64_t rows, int64_t r0, int64_t r1, float* Y);
void rows_avx2(uint32_t type, const uint8_t* W, size_t row_bytes, const PreparedX& px, const float* X,
               int64_t rows, int64_t r0, int64_t r1, float* Y);

}  // namespace moe::ggml_fused
