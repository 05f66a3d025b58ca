#include <algorithm>
#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/exact_quant.h"
#include "compare/cases/instances.h"
#include "compare/cases/real_shapes.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matmul_q.h"

namespace moe::compare {

// Per row r of a quantized matrix and a vector v (f64): exact[r] = sum_c W[r][c] v[c] (W = q s + b,
// exact in f64; the sum has f64 rounding only) and mag[r] = sum_c (|q s| + |b|) |v[c]|, the
// magnitude the f32 error bounds scale with. Why |q s| + |b| and not |q s + b|: engines evaluate
// a term either as the reference's fma(q, s, b) * x (one rounding of the weight, u |W x|) or
// as fma(q, s * x, b * x) (docs/ops/verification.md "Matvec rounding, CPU versus GPU": s*x and b*x
// round separately, u (|q s x| + |b x|),
// which is not covered by u |W x| where q s and b cancel). Both are correct implementations of
// the op; the bound covers both. Declared in act_model.h for the expert cases.
void quant_rows(const QuantMatrix& m, const double* v, double* exact, double* mag) {
  const int64_t groups = m.groups_per_row(), vpw = m.values_per_word(), wpg = m.group_size / vpw;
  const uint32_t mask = (1u << m.bits) - 1u;
  for (int64_t r = 0; r < m.rows; ++r) {
    const uint32_t* wr = m.w + r * m.words_per_row();
    double acc = 0, a = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const double s = bf16_to_f32(m.scales[r * groups + g]), b = bf16_to_f32(m.biases[r * groups + g]);
      double sum_qv = 0, sum_v = 0;  // sum q |v|, sum |v| over the group: mag = |s| sum_qv + |b| sum_v
      for (int64_t wi = g * wpg; wi < (g + 1) * wpg; ++wi) {
        const double* vw = v + wi * vpw;
        for (int64_t k = 0; k < vpw; ++k) {
          const double q = double((wr[wi] >> (k * m.bits)) & mask);
          acc += (q * s + b) * vw[k];
          sum_qv += q * std::fabs(vw[k]);
          sum_v += std::fabs(vw[k]);
        }
      }
      a += std::fabs(s) * sum_qv + std::fabs(b) * sum_v;
    }
    exact[r] = acc;
    if (mag) mag[r] = a;
  }
}

namespace {

// ---- matmul_q: per (t, r) the matvec of token t (matvec_q_case.cpp's reasoning, per token).
// Each term W x is one weight rounding (fma(q, s, b); or s x and b x rounded separately, see
// quant_rows) and one product rounding, then the cols terms are summed in any order (lanes,
// subgroup tree, token tiles): |Y - sum W x| <= gamma_{cols+1} mag(t, r). The truth
// (matmul_q_ref<double>: f64 sums, then one rounding to f32) adds gamma^{f64}_{cols+1} mag + u |Y|.
// Floor: a GPU may flush subnormal products and partial sums to zero (Vulkan allows it without
// shaderDenormPreserveFloat32): each of the cols + 1 roundings may lose up to 2^-126, so
// (cols + 2) 2^-126 (~1e-34, far below any bound of these data).
OpCase matmul_q_case(const std::string& label, int64_t tokens, int64_t rows, int64_t cols, int bits, uint64_t seed,
                     int group_size = 64) {
  MatmulQParams p;
  p.tokens = tokens, p.rows = rows, p.cols = cols, p.bits = bits, p.group_size = group_size;
  Rng rng(seed);
  const QuantStorage W = random_quant(rng.fork(1), rows, cols, bits, group_size);
  const std::vector<float> x = rng.fork(2).activations(tokens * cols);
  return matmul_q_instance(label, seed, p, W.view(), x);
}

// The exactly computable case (exact_quant.h), per token its own one-hot column (token
// mapping); T = 9: a full 8-token tile and a partial one.
OpCase matmul_q_exact_case(const std::string& label, int64_t tokens, int64_t rows, int bits, uint64_t seed) {
  MatmulQParams p;
  p.tokens = tokens, p.rows = rows, p.cols = kExactCols, p.bits = bits, p.group_size = 64;
  Rng rng(seed);
  const QuantStorage W = exact_quant_weights(rng.fork(1), rows, bits);
  const std::vector<float> x = exact_quant_inputs(rng.fork(2), tokens);
  OpCase c = matmul_q_instance(label, seed, p, W.view(), x);
  std::fill(c.outputs["y"].bound.begin(), c.outputs["y"].bound.end(), 0.0);
  return c;
}

}  // namespace

OpCase matmul_q_instance(const std::string& label, uint64_t seed, const MatmulQParams& p, const QuantMatrix& W,
                         std::span<const float> x) {
  const int64_t tokens = p.tokens, rows = p.rows, cols = p.cols;
  OpCase c = new_case("matmul_q", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  for_blocks(tokens, 1, [&](int64_t t0, int64_t t1) {  // a token's outputs depend on its own x only
    MatmulQParams pt = p;
    pt.tokens = t1 - t0;
    matmul_q_ref<double>(pt, W, x.subspan(size_t(t0 * cols), size_t((t1 - t0) * cols)),
                         std::span<float>(y).subspan(size_t(t0 * rows), size_t((t1 - t0) * rows)));
  });
  add_quant_tensors(c, "W", W);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(tokens * rows);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  s.bound.resize(y.size());
  const double g = sum_gamma(double(cols + 1)), g64 = sum_gamma(double(cols + 1), 0x1.0p-53);
  for_blocks(tokens, 1, [&](int64_t t0, int64_t t1) {
    std::vector<double> xd(static_cast<size_t>(cols)), exact(static_cast<size_t>(rows)), mag(static_cast<size_t>(rows));
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t k = 0; k < cols; ++k) xd[size_t(k)] = x[size_t(t * cols + k)];
      quant_rows(W, xd.data(), exact.data(), mag.data());
      for (int64_t r = 0; r < rows; ++r) {
        const size_t i = size_t(t * rows + r);
        s.bound[i] = (g + g64) * mag[size_t(r)] + kU32 * std::fabs(double(y[i])) + double(cols + 2) * kMinNormal32;
      }
    }
  });
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  c.flops = 2.0 * double(tokens) * double(rows) * double(cols);
  return c;
}


std::vector<OpCase> matmul_q_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  auto add = [&](const std::string& label, int64_t T, int64_t rows, int64_t cols, int bits, uint64_t s, int G = 64) {
    out.push_back(matmul_q_case(label + " T " + std::to_string(T), T, rows, cols, bits, s, G));
  };
  if (rem) {
    // Tokens around the kernels' 8-token tiles (1, 2, 7, 16, 64 and a partial tile 67), rows
    // around the rows-per-workgroup (1, 3, 33, 67), cols of 1 to 5 groups (an odd count of words
    // per lane at every subgroup size).
    for (int64_t T : {1, 2, 7, 16, 64})
      for (int64_t rows : {1, 33, 67})
        add("remainder rows " + std::to_string(rows), T, rows, 64 * ((rows + T) % 5 + 1), 4, seed + uint64_t(100 * T + rows));
    // Past the input caches engines size for the shapes they expect (in = 8192 is the VK staging
    // limit): 8192 + one group (129 groups, odd) and 16384 + one group, one token and a partial
    // tile; 8-bit at 8192 + one group, and 8192 + one group of 32.
    add("remainder rows 3 cols 8256", 3, 3, 8256, 4, seed + 7);
    add("remainder rows 3 cols 8256", 1, 3, 8256, 4, seed + 10);
    add("remainder rows 5 cols 16448", 1, 5, 16448, 4, seed + 11);
    add("remainder rows 5 cols 16448", 9, 5, 16448, 4, seed + 12);
    add("remainder 8-bit rows 3 cols 8256", 1, 3, 8256, 8, seed + 13);
    add("remainder 2-bit rows 3 cols 8256", 1, 3, 8256, 2, seed + 14);
    add("remainder G=32 8-bit rows 3 cols 8224", 1, 3, 8224, 8, seed + 15, 32);
    add("remainder partial tile rows 5", 67, 5, 192, 4, seed + 8);
    // Rows past the kernels' rows-per-workgroup thresholds (the bundled R = 2 from 2048 rows, 4
    // from 4096: a last workgroup of 1 or 3 rows), with short and long rows (cols >= 8192: four
    // subgroups per workgroup in the bundled kernels), at every width.
    add("remainder rows 2051 cols 2112", 2, 2051, 2112, 4, seed + 18);
    add("remainder rows 4099 cols 192", 9, 4099, 192, 4, seed + 19);
    add("remainder rows 8195 cols 128", 3, 8195, 128, 4, seed + 21);
    add("remainder rows 2051 cols 8256", 3, 2051, 8256, 4, seed + 22);
    // Many (row, token) pairs per workgroup with several subgroups (rows >= 2048, cols >= 8192):
    // the bundled kernels combine their partials through shared memory in rounds of 8 pairs.
    add("remainder rows 4099 cols 8256", 9, 4099, 8256, 4, seed + 28);
    add("remainder 8-bit rows 4099 cols 8256", 5, 4099, 8256, 8, seed + 29);
    add("remainder 2-bit rows 4099 cols 8256", 5, 4099, 8256, 2, seed + 30);
    add("remainder 2-bit rows 5 cols 8256", 9, 5, 8256, 2, seed + 31);  // a partial token tile there
    add("remainder 8-bit rows 4099 cols 192", 5, 4099, 192, 8, seed + 26);
    add("remainder 2-bit rows 4099 cols 192", 5, 4099, 192, 2, seed + 27);
    for (int64_t T : {1, 7, 64})
      for (int64_t rows : {3, 67})
        add("remainder 8-bit rows " + std::to_string(rows), T, rows, 64 * ((rows + T) % 5 + 1), 8, seed + uint64_t(1000 + 100 * T + rows));
    // Other group sizes and 2 bits: for engines' kernels; the bundled ones skip what their limits exclude.
    for (int bits : {8, 4, 2}) {
      const std::string b = " " + std::to_string(bits) + "-bit";
      add("remainder G=32" + b, 7, 33, 96, bits, seed + 2000 + uint64_t(bits), 32);
      add("remainder G=128" + b, 7, 33, 384, bits, seed + 3000 + uint64_t(bits), 128);
    }
    add("remainder 2-bit rows 33", 16, 33, 192, 2, seed + 9);
    // A partial last tile at 2 and 8 bits too (19 = 2 full 8-token tiles + 3): a kernel that
    // sizes the last tile wrongly reads X and writes Y past their ends only here.
    add("remainder 2-bit partial tile rows 5", 19, 5, 192, 2, seed + 16);
    add("remainder 8-bit partial tile rows 5", 19, 5, 192, 8, seed + 17);
    for (int bits : {2, 4, 8})
      out.push_back(matmul_q_exact_case("remainder exact " + std::to_string(bits) + "-bit rows 5 T 9", 9, 5, bits,
                                        seed + 4000 + uint64_t(bits)));
  }
  if (real) {
    // Every projection of both models at decode (T = 1; real_shapes.h), and prefill chunks
    // (T = 16) of the A17B k/v and the A3B expert and router shapes. lm_head is left out
    // (248320 rows, beyond lavapipe's 128 MiB buffers); the expert shapes at T = 16 beyond A3B's
    // are covered by swiglu_expert (A17B down [4096, 1024] at T = 16 through this kernel).
    uint64_t k = 100;
    for (const Projection& pr : real_projections())
      out.push_back(matmul_q_case(decode_label(pr), 1, pr.rows, pr.cols, pr.bits, seed + ++k));
    add("A17B k/v_proj", 16, 512, 4096, 4, seed + 20);
    add("A3B expert gate/up", 16, 512, 2048, 4, seed + 23);
    add("A3B expert down", 16, 2048, 512, 4, seed + 24);
    add("A3B router mlp.gate 8-bit", 16, 256, 2048, 8, seed + 25);
  }
  return out;
}

// `--shapes perf`: 4-bit at the two large A17B projections, speculative-decode and small
// prefill token counts (T = 2..16: still bound by the weights' bytes) and prefill chunks
// (T = 64..512 on A3B's in_proj_qkv, whose f64 truth stays within seconds: bound by arithmetic,
// timed against the FMA peak). Only the one labelled `only` when it is not empty (each case keeps
// its seed).
std::vector<OpCase> matmul_q_perf_cases(uint64_t seed, const std::string& only) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  const auto add = [&](const std::string& label, int64_t T, int64_t rows, int64_t cols) {
    ++k;
    if (only.empty() || label == only) out.push_back(matmul_q_case(label, T, rows, cols, 4, seed + k));
  };
  for (const PerfShape& ps : perf_matvec_shapes()) {
    if (ps.rows > 16384) continue;  // the lm_heads: one token per step
    for (int64_t T : {2, 4, 8, 16})
      add(std::string(ps.name) + " " + std::to_string(ps.rows) + "x" + std::to_string(ps.cols) + " 4-bit T " +
              std::to_string(T),
          T, ps.rows, ps.cols);
  }
  for (int64_t T : {64, 128, 256, 512}) add("A3B in_proj_qkv 8192x2048 4-bit T " + std::to_string(T), T, 8192, 2048);
  return out;
}

}  // namespace moe::compare
