// Packed expert blobs (docs/ops/formats.md "Packed experts"): one routed expert's three quantized projections in
// one contiguous byte range, as stored in packed_experts/layer_NN.bin (expert e at e * size).
//
// Shape contract (d = hidden, I = moe intermediate, G = 64, bits in {2, 4, 8}):
//   gate [I, d], up [I, d], down [d, I]     (MLX affine, core/quant.h)
//   blob = gate.w | gate.s | gate.b | up.w | up.s | up.b | down.w | down.s | down.b, no padding
//   Wb = I*d*bits/8 (u32 words), Sb = I*(d/G)*2 (bf16 scales, the same for biases),
//   block Bb = Wb + 2 Sb; the three blocks have the same size (I*d elements each), so
//   size = 3 Bb.  A17B 4-bit 7,077,888; A3B 4-bit 1,769,472; A17B 2-bit 3,932,160.
// The blob is little-endian (the reader reinterprets it in place; this header requires a
// little-endian host) and must be 4-byte aligned (every offset is a multiple of 4, see below).
#pragma once
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/quant.h"
#include "core/rng.h"
#include "core/test_data.h"

namespace moe {

static_assert(std::endian::native == std::endian::little, "expert blobs are little-endian");

struct ExpertWeights {
  QuantMatrix gate, up, down;  // gate/up [I, d], down [d, I]
};

inline constexpr int kExpertGroupSize = 64;  // every checkpoint's experts use G = 64

// The 9 components in blob order, as packed_experts/layout.json names them.
inline constexpr const char* kExpertBlobComponents[9] = {
    "gate_proj.weight", "gate_proj.scales", "gate_proj.biases", "up_proj.weight",  "up_proj.scales",
    "up_proj.biases",   "down_proj.weight", "down_proj.scales", "down_proj.biases"};

// Byte offsets of the 9 components, in blob order, plus the total size at index 9.
inline std::array<int64_t, 10> expert_blob_offsets(int64_t hidden, int64_t inter, int bits) {
  MOE_CHECK(bits == 2 || bits == 4 || bits == 8, "expert_blob: bits=" << bits << ", expected 2, 4 or 8");
  // Both dims are a matrix's cols somewhere (d for gate/up, I for down): multiples of G.
  MOE_CHECK(hidden > 0 && inter > 0 && hidden % kExpertGroupSize == 0 && inter % kExpertGroupSize == 0,
            "expert_blob: hidden=" << hidden << " inter=" << inter << ", expected positive multiples of "
                                   << kExpertGroupSize);
  // I*d is a multiple of 64*64, so Wb = I*d*bits/8 and Sb = I*d/32 are multiples of 4: every
  // component starts 4-byte aligned, which the u32 weights need.
  const int64_t wb = inter * hidden * bits / 8;
  const int64_t sb = inter * (hidden / kExpertGroupSize) * 2;
  const int64_t bb = wb + 2 * sb;
  std::array<int64_t, 10> off{};
  for (int blk = 0; blk < 3; ++blk) {
    off[3 * blk + 0] = blk * bb;
    off[3 * blk + 1] = blk * bb + wb;
    off[3 * blk + 2] = blk * bb + wb + sb;
  }
  off[9] = 3 * bb;
  return off;
}

inline int64_t expert_blob_bytes(int64_t hidden, int64_t inter, int bits) {
  return expert_blob_offsets(hidden, inter, bits)[9];
}

// Views into `blob` (no copy): the blob must outlive the returned matrices.
inline ExpertWeights expert_from_blob(const uint8_t* blob, size_t bytes, int64_t hidden, int64_t inter, int bits) {
  const std::array<int64_t, 10> off = expert_blob_offsets(hidden, inter, bits);
  MOE_CHECK(blob != nullptr, "expert_from_blob: blob is null");
  MOE_CHECK(int64_t(bytes) == off[9], "expert_from_blob: blob has " << bytes << " bytes, expected " << off[9]
                                                                    << " for hidden=" << hidden << " inter=" << inter
                                                                    << " bits=" << bits);
  MOE_CHECK(reinterpret_cast<uintptr_t>(blob) % 4 == 0,
            "expert_from_blob: blob address is not 4-byte aligned (u32 weights are read in place)");
  auto mat = [&](int first, int64_t rows, int64_t cols) {
    QuantMatrix m;
    m.w = reinterpret_cast<const uint32_t*>(blob + off[first]);
    m.scales = reinterpret_cast<const bf16*>(blob + off[first + 1]);
    m.biases = reinterpret_cast<const bf16*>(blob + off[first + 2]);
    m.rows = rows, m.cols = cols, m.bits = bits, m.group_size = kExpertGroupSize;
    return m;
  };
  return {mat(0, inter, hidden), mat(3, inter, hidden), mat(6, hidden, inter)};
}

// The writer: the inverse of expert_from_blob. All three matrices must share bits and G = 64.
inline std::vector<uint8_t> pack_expert_blob(const ExpertWeights& e) {
  check_quant(e.gate, "pack_expert_blob", "gate");
  check_quant(e.up, "pack_expert_blob", "up");
  check_quant(e.down, "pack_expert_blob", "down");
  const int64_t inter = e.gate.rows, hidden = e.gate.cols;
  const int bits = e.gate.bits;
  MOE_CHECK(e.up.rows == inter && e.up.cols == hidden && e.down.rows == hidden && e.down.cols == inter,
            "pack_expert_blob: gate [" << e.gate.rows << ", " << e.gate.cols << "], up [" << e.up.rows << ", "
                                       << e.up.cols << "], down [" << e.down.rows << ", " << e.down.cols
                                       << "], expected gate/up [I, d] and down [d, I]");
  for (const QuantMatrix* m : {&e.gate, &e.up, &e.down})
    MOE_CHECK(m->bits == bits && m->group_size == kExpertGroupSize,
              "pack_expert_blob: matrices have bits " << e.gate.bits << "/" << e.up.bits << "/" << e.down.bits
                                                      << " group_size " << e.gate.group_size << "/"
                                                      << e.up.group_size << "/" << e.down.group_size
                                                      << ", expected one bits value and group_size 64");
  const std::array<int64_t, 10> off = expert_blob_offsets(hidden, inter, bits);
  std::vector<uint8_t> blob(off[9]);
  const QuantMatrix* mats[3] = {&e.gate, &e.up, &e.down};
  for (int blk = 0; blk < 3; ++blk) {
    const QuantMatrix& m = *mats[blk];
    std::memcpy(blob.data() + off[3 * blk + 0], m.w, m.weight_words() * 4);
    std::memcpy(blob.data() + off[3 * blk + 1], m.scales, m.scale_count() * 2);
    std::memcpy(blob.data() + off[3 * blk + 2], m.biases, m.scale_count() * 2);
  }
  return blob;
}

// Owned expert weights for fixtures, checks and tests.
struct ExpertStorage {
  QuantStorage gate, up, down;
  ExpertWeights view() const { return {gate.view(), up.view(), down.view()}; }
};

// A random expert with MLX-quantized Gaussian statistics (core/test_data.h). `down_cols` (default
// inter) widens down's columns for cases whose inter is not a multiple of the group and which never
// read down (compare's permute_gate_up alone); gate and up are the same either way.
inline ExpertStorage random_expert(const Rng& rng, int64_t hidden, int64_t inter, int bits, int64_t down_cols = 0) {
  return {random_quant(rng.fork(1), inter, hidden, bits), random_quant(rng.fork(2), inter, hidden, bits),
          random_quant(rng.fork(3), hidden, down_cols ? down_cols : inter, bits)};
}

}  // namespace moe
