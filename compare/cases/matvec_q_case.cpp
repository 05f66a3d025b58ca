#include <cmath>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/exact_quant.h"
#include "compare/cases/real_shapes.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matvec_q.h"

namespace moe::compare {
namespace {

// ---- matvec_q: each term is the reference's t = fma(q, s, b) (exact: q*s is exact, so fused or
// not it is one rounding of q*s + b) times x, summed in any order: gamma_{cols+1} sum|t x|, plus
// the truth's rounding u|y| and a subnormal floor. The same holds at 2, 4 and 8 bits and any
// group size: q < 2^8 times an 8-bit significand is exact in f32.
// The case of W and x: truth from matvec_q_ref<double>; bound the one above, or 0 where every
// value a correct evaluation can form is exact (matvec_q_exact_case).
OpCase matvec_q_instance(const char* label, uint64_t seed, const MatvecQParams& p, const QuantStorage& W,
                         const std::vector<float>& x, bool exact) {
  const int64_t rows = p.rows, cols = p.cols;
  OpCase c = new_case("matvec_q", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(rows));
  for_blocks(rows, 256, [&](int64_t r0, int64_t r1) {
    MatvecQParams pb = p;
    pb.rows = r1 - r0;
    matvec_q_ref<double>(pb, W.view().row_block(r0, r1 - r0), x, std::span<float>(y).subspan(size_t(r0), size_t(r1 - r0)));
  });
  add_quant_tensors(c, "W", W);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(rows);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const QuantMatrix m = W.view();
  const double g = sum_gamma(double(cols + 1));
  s.bound.assign(size_t(rows), 0.0);
  if (!exact)
    for_blocks(rows, 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double abs_sum = 0;
        const uint32_t* wr = m.w + r * m.words_per_row();
        for (int64_t g0 = 0; g0 < cols; g0 += p.group_size) {
          const double sc = bf16_to_f32(m.scales[r * m.groups_per_row() + g0 / p.group_size]);
          const double bi = bf16_to_f32(m.biases[r * m.groups_per_row() + g0 / p.group_size]);
          for (int64_t col = g0; col < g0 + p.group_size; ++col)
            abs_sum += std::fabs(quant_code(wr, col, p.bits) * sc + bi) * std::fabs(double(x[size_t(col)]));
        }
        s.bound[size_t(r)] = g * abs_sum + kU32 * std::fabs(double(y[size_t(r)])) + double(cols + 1) * 0x1.0p-149;
      }
    });
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

OpCase matvec_q_case(const char* label, int64_t rows, int64_t cols, int bits, uint64_t seed, int group_size = 64) {
  MatvecQParams p;
  p.rows = rows, p.cols = cols, p.bits = bits, p.group_size = group_size;
  Rng rng(seed);
  const QuantStorage W = random_quant(rng.fork(1), rows, cols, bits, group_size);
  return matvec_q_instance(label, seed, p, W, rng.fork(2).activations(cols), false);
}

// The exactly computable case (exact_quant.h).
OpCase matvec_q_exact_case(const char* label, int64_t rows, int bits, uint64_t seed) {
  MatvecQParams p;
  p.rows = rows, p.cols = kExactCols, p.bits = bits, p.group_size = 64;
  Rng rng(seed);
  const QuantStorage W = exact_quant_weights(rng.fork(1), rows, bits);
  const std::vector<float> x = exact_quant_inputs(rng.fork(2), 1);
  return matvec_q_instance(label, seed, p, W, x, true);
}

}  // namespace

std::vector<OpCase> matvec_q_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem)
    for (int64_t rows : {1, 3, 31, 33, 67})
      out.push_back(matvec_q_case(("remainder rows " + std::to_string(rows)).c_str(), rows, 64 * (rows % 5 + 1), 4, seed + rows));
  if (real) {
    // Every projection of both models (real_shapes.h): a matvec is one decode token.
    uint64_t k = 100;
    for (const Projection& pr : real_projections())
      out.push_back(matvec_q_case(decode_label(pr).c_str(), pr.rows, pr.cols, pr.bits, seed + ++k));
    // The 4-bit kernel at a single A3B-wide row (the checkpoint's gate is 8-bit, above).
    out.push_back(matvec_q_case("A3B shared_expert_gate", 1, 2048, 4, seed + 4));
  }
  // 8-bit (matvec_q8: the A3B router mlp.gate and shared_expert_gate) and 2-bit (matvec_q2: the
  // requantised routed experts). Remainders: rows around the kernels' 4-row workgroups, cols of
  // 2 to 4 groups, and group sizes 32 and 128 (every bit width; a kernel limited to G = 64 skips
  // them).
  if (rem) {
    for (int bits : {2, 4, 8})
      out.push_back(matvec_q_exact_case(("remainder exact " + std::to_string(bits) + "-bit rows 5").c_str(), 5, bits,
                                        seed + 4000 + uint64_t(bits)));
    for (int bits : {8, 2})
      for (int64_t rows : {1, 3, 31, 33, 67})
        out.push_back(matvec_q_case(("remainder " + std::to_string(bits) + "-bit rows " + std::to_string(rows)).c_str(),
                                    rows, 64 * (rows % 5 + 1), bits, seed + 100 * uint64_t(bits) + uint64_t(rows)));
    for (int bits : {8, 4, 2}) {
      const std::string b = " " + std::to_string(bits) + "-bit";
      out.push_back(matvec_q_case(("remainder G=32" + b).c_str(), 33, 96, bits, seed + 1000 + uint64_t(bits), 32));
      out.push_back(matvec_q_case(("remainder G=128" + b).c_str(), 33, 384, bits, seed + 2000 + uint64_t(bits), 128));
    }
    // Groups wider than any checkpoint's (the contract allows any multiple of 32/bits dividing
    // cols): G = 256, three groups, 3 rows. Words per group computed with a wrong divisor
    // (group_size / 15 at 2 bits) agree with the right one up to G = 224 and differ from here on.
    for (int bits : {8, 2})
      out.push_back(matvec_q_case(("remainder G=256 " + std::to_string(bits) + "-bit").c_str(), 3, 768, bits,
                                  seed + 2500 + uint64_t(bits), 256));
    // Past the shared-memory input caches engines size for the shapes they expect
    // (docs/ops/verification.md "Shapes to cover": in = 8192 is the VK staging limit): 8192 + one
    // group (an odd group count), 16384 + one group, and at G = 32 8192 + one group of 32 (257
    // groups). Few rows, so cheap.
    for (int bits : {4, 8, 2}) {
      const std::string b = " " + std::to_string(bits) + "-bit";
      out.push_back(matvec_q_case(("remainder rows 3 cols 8256" + b).c_str(), 3, 8256, bits, seed + 3000 + uint64_t(bits)));
      out.push_back(matvec_q_case(("remainder rows 5 cols 16448" + b).c_str(), 5, 16448, bits, seed + 3100 + uint64_t(bits)));
      out.push_back(matvec_q_case(("remainder G=32 rows 3 cols 8224" + b).c_str(), 3, 8224, bits, seed + 3200 + uint64_t(bits), 32));
    }
    // Row counts at which the bundled kernels take 2, 4 and 8 rows per workgroup (R =
    // min(8, rows / 1024)), each leaving a partial last workgroup (rows % R = 1, 3, 3); cols of 33,
    // 3 and 2 groups (264 words: a whole step of 256 words per workgroup and a partial one).
    for (int bits : {4, 8, 2}) {
      const std::string b = " " + std::to_string(bits) + "-bit";
      out.push_back(matvec_q_case(("remainder rows 2051 cols 2112" + b).c_str(), 2051, 2112, bits, seed + 3300 + uint64_t(bits)));
      out.push_back(matvec_q_case(("remainder rows 4099 cols 192" + b).c_str(), 4099, 192, bits, seed + 3400 + uint64_t(bits)));
      out.push_back(matvec_q_case(("remainder rows 8195 cols 128" + b).c_str(), 8195, 128, bits, seed + 3500 + uint64_t(bits)));
    }
  }
  return out;
}

// `--shapes perf`: every timing shape (real_shapes.h) at each bit width; only the one labelled
// `only` when it is not empty (each case keeps its seed).
std::vector<OpCase> matvec_q_perf_cases(uint64_t seed, const std::string& only) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  for (int bits : {4, 8, 2})
    for (const PerfShape& ps : perf_matvec_shapes()) {
      const std::string label = std::string(ps.name) + " " + std::to_string(ps.rows) + "x" + std::to_string(ps.cols) +
                                " " + std::to_string(bits) + "-bit";
      ++k;
      if (only.empty() || label == only) out.push_back(matvec_q_case(label.c_str(), ps.rows, ps.cols, bits, seed + k));
    }
  return out;
}

}  // namespace moe::compare
