#include "spec/matvec_ggml_spec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/bf16.h"
#include "core/check_util.h"
#include "core/ggml_blocks.h"
#include "core/half.h"
#include "core/rng.h"

namespace moe {
namespace {

// The magnitudes of a format's f16 fields in real GGUFs: d such that the largest code times its
// sub-block scale gives |W| ~ 0.1, m / dmin such that the offset is ~0.1 (ggml stores a block's
// minimum as a positive dmin subtracted, and q4_1 / q5_1's m as the signed minimum).
struct ScaleModel {
  uint32_t type;
  double d;        // |d|, times U(0.5, 1.5)
  bool d_signed;   // d's sign random (ggml's legacy quantisers store -max / 8 and friends)
  double second;   // the second f16 field (m or dmin), times U(0.5, 1.5)
};
constexpr ScaleModel kScales[] = {
    {2, 0.1 / 8, true, 0},           {3, 0.2 / 15, false, -0.1},       {6, 0.1 / 16, true, 0},
    {7, 0.2 / 31, false, -0.1},      {8, 0.1 / 127, true, 0},          {10, 0.2 / (15 * 3), false, 0.1 / 15},
    {11, 0.1 / (32 * 4), false, 0},  {12, 0.2 / (63 * 15), false, 0.1 / 63},
    {13, 0.2 / (63 * 31), false, 0.1 / 63},                            {14, 0.1 / (127 * 32), false, 0},
    {20, 0.1 / 127, true, 0},        {23, 0.1 / (32 * 127), false, 0},
};

const ScaleModel* scale_model(uint32_t type) {
  for (const ScaleModel& s : kScales)
    if (s.type == type) return &s;
  return nullptr;
}

void put_f16(uint8_t* at, uint16_t h) { std::memcpy(at, &h, 2); }

// Float weights (f32 0, f16 1, bf16 30): N(0, 0.05) in the type's bytes.
void float_weights(uint32_t type, Rng rng, std::vector<uint8_t>& bytes) {
  const size_t width = type == 0 ? 4 : 2, n = bytes.size() / width;
  for (size_t i = 0; i < n; ++i) {
    const double v = 0.05 * rng.normal();
    if (type == 0) {
      const float f = float(v);
      std::memcpy(&bytes[i * 4], &f, 4);
    } else if (type == 1) {
      put_f16(&bytes[i * 2], f16_from_double(v));
    } else {
      const bf16 h = f32_to_bf16_rne(float(v));
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
}

}  // namespace

const std::vector<uint32_t>& matvec_ggml_types() {
  static const std::vector<uint32_t> types = {0, 1, 30, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 20, 23};
  return types;
}

MatvecGgmlInputs matvec_ggml_inputs(const MatvecGgmlParams& p, uint64_t seed, bool exact) {
  Rng rng(seed);
  const BlockMatrix shape{uint32_t(p.type), nullptr, p.rows, p.cols};
  MatvecGgmlInputs in;
  in.W.resize(shape.bytes());
  const GgmlBlockFormat& f = *ggml_block_format(uint32_t(p.type));
  if (f.block == 1) {
    float_weights(f.type, rng.fork(1), in.W);
  } else {
    Rng bytes = rng.fork(1), scales = rng.fork(3);
    for (size_t i = 0; i < in.W.size(); i += 8) {
      const uint64_t r = bytes.next_u64();
      std::memcpy(&in.W[i], &r, std::min<size_t>(8, in.W.size() - i));
    }
    const ScaleModel& sm = *scale_model(f.type);
    for (size_t at = 0; at < in.W.size(); at += f.block_bytes) {
      uint8_t* fields = &in.W[at + size_t(f.f16_offset)];
      if (exact) {
        put_f16(fields, 0x3C00);                                    // d = 1
        if (f.f16_fields == 2) put_f16(fields + 2, 0x3800);         // m, dmin = 0.5
        continue;
      }
      double d = sm.d * (0.5 + scales.uniform01());
      if (sm.d_signed && scales.below(2)) d = -d;
      put_f16(fields, f16_from_double(d));
      // Every fifth block has no min (m or dmin 0), as quantisers write for a block whose minimum is
      // 0: ggml's legacy-format shaders special-case it (dm.y == 0: no add, one scale at the end).
      if (f.f16_fields == 2) {
        const bool no_min = (at / f.block_bytes) % 5 == 2;
        put_f16(fields + 2, f16_from_double(no_min ? 0.0 : sm.second * (0.5 + scales.uniform01())));
      }
    }
  }
  if (!exact) {
    in.x = rng.fork(2).activations(p.tokens * p.cols);
  } else {
    in.x.assign(size_t(p.tokens * p.cols), 0.0f);
    Rng hot = rng.fork(2);
    for (int64_t t = 0; t < p.tokens; ++t) in.x[size_t(t * p.cols + hot.below(p.cols))] = 1.0f;
  }
  return in;
}

PrecisionModel matvec_ggml_fast_model(uint32_t type) {
  PrecisionModel m = cpu_f32_model();
  m.quant_weight_rounded_once = !(type == 2 || type == 12);
  return m;
}

std::vector<double> matvec_ggml_bound(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> x,
                                      std::span<const float> truth, const PrecisionModel& m) {
  const double g = m.sum(double(p.cols + 8)) + gamma_n(double(p.cols + 1), 0x1.0p-53);
  const size_t rb = W.row_bytes();
  std::vector<double> bound(truth.size());
#pragma omp parallel
  {
    std::vector<double> a(static_cast<size_t>(p.cols)), b(a.size());
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < p.rows; ++r) {
      ggml_dequant_parts(W.type, {W.data + size_t(r) * rb, rb}, p.cols, a.data(), b.data());
      for (int64_t t = 0; t < p.tokens; ++t) {
        const float* xt = x.data() + t * p.cols;
        double mag = 0;
        for (int64_t c = 0; c < p.cols; ++c) {
          const double ax = std::fabs(double(xt[c]));
          mag += m.quant_weight_rounded_once ? std::fabs(a[size_t(c)] + b[size_t(c)]) * ax
                                             : (std::fabs(a[size_t(c)]) + std::fabs(b[size_t(c)])) * ax;
        }
        const size_t j = size_t(t * p.rows + r);
        bound[j] = g * mag + m.u * std::fabs(double(truth[j])) + double(p.cols + 2) * kMinNormal32;
      }
    }
  }
  return bound;
}

namespace {

std::string type_name(uint32_t type) { return ggml_block_format(type)->name; }

void remainders(std::vector<MatvecGgmlShape>& out) {
  uint64_t k = 0;
  for (uint32_t type : matvec_ggml_types()) {
    const int64_t B = std::max<int64_t>(ggml_block_format(type)->block, 32);  // floats: rows of 32s
    const std::string n = type_name(type) + " remainder";
    auto add = [&](int64_t rows, int64_t cols, int64_t tokens, QuantDotVariant v = {}) {
      out.push_back({n + (v.exact ? " exact" : "") + " rows " + std::to_string(rows) + " cols " +
                         std::to_string(cols) + " T " + std::to_string(tokens),
                     MatvecGgmlParams{type, rows, cols, tokens}, 10000 + 100 * uint64_t(type) + ++k, v});
    };
    add(5, 4 * B, 2, QuantDotVariant{.exact = true});
    add(1, B, 1);
    add(3, 3 * B, 1);
    add(33, (B == 256 ? 9 : 37) * B, 1);  // an odd block count past a workgroup's column span
    add(7, 4096 + B, 3);
    add(5, 2 * B, 8);                     // ggml's largest mul_mat_vec column count
    add(67, 2 * B, 1);                    // partial last workgroup at 2 and 4 rows per workgroup
    if (B != ggml_block_format(type)->block) add(3, 37, 2);  // a float row no block divides
  }
}

// The families' projections as llama.cpp's Q4_K_M / Q8_0 / Q4_0 / IQ4_XS / Q2_K GGUFs store them
// (out x in): attention and expert gate/up in q4_K, expert down and v in q6_K, the router in
// f32 (ggml keeps ffn_gate_inp unquantised), and one tensor in each other format.
void real_shapes(std::vector<MatvecGgmlShape>& out) {
  const struct {
    const char* model;
    const char* name;
    int64_t rows, cols;
    uint32_t type;
  } list[] = {
      {"A3B", "q_proj (+gate), linear in_proj_qkv", 8192, 2048, 12},
      {"A3B", "k_proj", 512, 2048, 12},
      {"A3B", "v_proj", 512, 2048, 14},
      {"A3B", "o_proj, linear out_proj", 2048, 4096, 12},
      {"A3B", "expert gate/up", 512, 2048, 12},
      {"A3B", "expert down", 2048, 512, 14},
      {"A3B", "router ffn_gate_inp", 256, 2048, 0},
      {"A3B", "q_proj (Q8_0)", 8192, 2048, 8},
      {"A3B", "expert gate/up (Q4_0)", 512, 2048, 2},
      {"A3B", "expert gate/up (Q4_1)", 512, 2048, 3},
      {"A3B", "expert gate/up (Q5_0)", 512, 2048, 6},
      {"A3B", "expert gate/up (Q5_1)", 512, 2048, 7},
      {"A3B", "expert gate/up (Q5_K_M)", 512, 2048, 13},
      {"A3B", "expert gate/up (IQ4_NL)", 512, 2048, 20},
      {"A3B", "expert gate/up (IQ4_XS)", 512, 2048, 23},
      {"A3B", "shared_expert_gate (f16)", 1, 2048, 1},
      {"A3B", "router ffn_gate_inp (BF16 GGUF)", 256, 2048, 30},
      {"A17B", "expert gate/up", 1024, 4096, 12},
      {"A17B", "expert down", 4096, 1024, 14},
      {"A17B", "expert gate/up (Q2_K)", 1024, 4096, 10},
      {"A17B", "expert down (Q3_K)", 4096, 1024, 11},
      {"A17B", "o_proj, linear out_proj", 4096, 8192, 12},
      {"DeepSeek-V3", "expert gate/up", 2048, 7168, 12},
      {"DeepSeek-V3", "expert down", 7168, 2048, 14},
  };
  uint64_t k = 20000;
  for (const auto& s : list)
    out.push_back({std::string(s.model) + " decode T 1 " + s.name + " " + std::to_string(s.rows) + "x" +
                       std::to_string(s.cols) + " " + type_name(s.type),
                   MatvecGgmlParams{s.type, s.rows, s.cols, 1}, ++k});
}

}  // namespace

std::vector<MatvecGgmlShape> matvec_ggml_shapes(bool rem, bool real) {
  std::vector<MatvecGgmlShape> out;
  if (rem) remainders(out);
  if (real) real_shapes(out);
  return out;
}

}  // namespace moe
