#include "compare/cases.h"

#include <bit>
#include <cmath>

#include "core/check.h"
#include "core/check_util.h"
#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matvec_q.h"
#include "ops/residual_add.h"
#include "ops/rmsnorm.h"

namespace moe::compare {
namespace {

HostTensor f32_tensor(const std::vector<float>& v, bool output = false) {
  HostTensor t;
  t.type = ElemType::F32, t.elems = int64_t(v.size()), t.output = output;
  t.words.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) t.words[i] = std::bit_cast<uint32_t>(v[i]);
  return t;
}

HostTensor bf16_tensor(const std::vector<bf16>& v) {
  HostTensor t;
  t.type = ElemType::BF16, t.elems = int64_t(v.size());
  t.words.assign((v.size() + 1) / 2, 0u);
  for (size_t i = 0; i < v.size(); ++i) t.words[i / 2] |= uint32_t(v[i]) << (16 * (i % 2));
  return t;
}

HostTensor u32_tensor(const std::vector<uint32_t>& v) {
  HostTensor t;
  t.type = ElemType::U32, t.elems = int64_t(v.size()), t.words = v;
  return t;
}

HostTensor output_f32(int64_t n) { return f32_tensor(std::vector<float>(size_t(n), 0.0f), true); }

std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

template <class P>
void set_vars(OpCase& c, const P& p) {
  c.params = params_to_string(p);
  p.visit([&](const char* name, const auto& value) { c.vars[name] = double(value); });
}

// ---- rmsnorm: weights are stored bf16 in checkpoints, so the case draws bf16 weights.
OpCase rmsnorm_case(const char* label, int64_t rows, int64_t dim, bool add_one, uint64_t seed) {
  RmsNormParams p;
  p.rows = rows, p.dim = dim, p.eps = 1e-6f, p.add_one = add_one;
  OpCase c{"rmsnorm", label, "", seed, {}, {}, {}, {}};
  set_vars(c, p);
  Rng rng(seed);
  const std::vector<float> x = rng.fork(1).activations(rows * dim);
  const std::vector<bf16> wb = rng.fork(2).bf16_normal_vec(dim, 0.2, add_one ? 0.0 : 1.0);
  std::vector<float> w(wb.size()), y(x.size());
  for (size_t i = 0; i < wb.size(); ++i) w[i] = bf16_to_f32(wb[i]);
  rmsnorm_ref<double>(p, x, w, y);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["w"] = bf16_tensor(wb);
  c.tensors["y"] = output_f32(rows * dim);
  // Bound in f32 accumulation, any order: sum of squares gamma_dim (halved by the square root);
  // the division by dim (Vulkan: 2.5 ULP), + eps (correctly rounded), inversesqrt (2 ULP), 1 + w,
  // x * inv, * w (1 each) and the truth's own rounding: 9.5u -> 12u with slack for the ULP
  // budgets counted as u each; plus the smallest normal for subnormal results.
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const double rel = gamma_n(double(dim)) / 2 + 12 * kU32;
  for (float v : y) s.bound.push_back(std::fabs(double(v)) * rel + kMinNormal32);
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

// ---- residual_add: one correctly rounded f32 add (Vulkan requires it): bit-exact.
OpCase residual_add_case(const char* label, int64_t n, uint64_t seed) {
  ResidualAddParams p;
  p.n = n;
  OpCase c{"residual_add", label, "", seed, {}, {}, {}, {}};
  set_vars(c, p);
  Rng rng(seed);
  const std::vector<float> a = rng.fork(1).activations(n), b = rng.fork(2).activations(n);
  std::vector<float> y(size_t(n));
  residual_add_ref<double>(p, a, b, y);
  c.tensors["a"] = f32_tensor(a), c.tensors["b"] = f32_tensor(b), c.tensors["y"] = output_f32(n);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Exact;
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

// ---- matvec_q: each term is the reference's t = fma(q, s, b) (exact: q*s is exact, so fused or
// not it is one rounding of q*s + b) times x, summed in any order: gamma_{cols+1} sum|t x|, plus
// the truth's rounding u|y| and a subnormal floor.
OpCase matvec_q_case(const char* label, int64_t rows, int64_t cols, int bits, uint64_t seed) {
  MatvecQParams p;
  p.rows = rows, p.cols = cols, p.bits = bits, p.group_size = 64;
  OpCase c{"matvec_q", label, "", seed, {}, {}, {}, {}};
  set_vars(c, p);
  Rng rng(seed);
  const QuantStorage W = random_quant(rng.fork(1), rows, cols, bits);
  const std::vector<float> x = rng.fork(2).activations(cols);
  std::vector<float> y(size_t(rows));
  matvec_q_ref<double>(p, W.view(), x, y);
  c.tensors["W.w"] = u32_tensor(W.w);
  c.tensors["W.scales"] = bf16_tensor(W.scales);
  c.tensors["W.biases"] = bf16_tensor(W.biases);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(rows);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const QuantMatrix m = W.view();
  const double g = gamma_n(double(cols + 1));
  for (int64_t r = 0; r < rows; ++r) {
    double abs_sum = 0;
    const uint32_t* wr = m.w + r * m.words_per_row();
    for (int64_t col = 0; col < cols; ++col) {
      const double sc = bf16_to_f32(m.scales[r * m.groups_per_row() + col / 64]);
      const double bi = bf16_to_f32(m.biases[r * m.groups_per_row() + col / 64]);
      abs_sum += std::fabs(quant_code(wr, col, bits) * sc + bi) * std::fabs(double(x[size_t(col)]));
    }
    s.bound.push_back(g * abs_sum + kU32 * std::fabs(double(y[size_t(r)])) + double(cols + 1) * 0x1.0p-149);
  }
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

bool want(const std::string& shapes, bool real) {
  MOE_CHECK(shapes == "remainders" || shapes == "real" || shapes == "all",
            "compare: --shapes '" << shapes << "', expected remainders, real or all");
  return shapes == "all" || (real ? shapes == "real" : shapes == "remainders");
}

}  // namespace

std::vector<std::string> case_ops() { return {"rmsnorm", "residual_add", "matvec_q"}; }

std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed) {
  std::vector<OpCase> out;
  const bool rem = want(shapes, false), real = want(shapes, true);
  if (op == "rmsnorm") {
    if (rem)
      for (int64_t dim : {1, 31, 33, 67, 4099}) out.push_back(rmsnorm_case("remainder", 3, dim, dim % 2 == 1, seed + dim));
    if (real) {
      out.push_back(rmsnorm_case("A17B hidden", 1, 4096, false, seed));
      out.push_back(rmsnorm_case("A17B q heads", 32, 256, false, seed + 1));
      out.push_back(rmsnorm_case("A3B hidden", 1, 2048, false, seed + 2));
      out.push_back(rmsnorm_case("A3B prefill 16", 16, 2048, false, seed + 3));
      out.push_back(rmsnorm_case("HF checkpoint (1+w)", 2, 2048, true, seed + 4));
    }
  } else if (op == "residual_add") {
    if (rem)
      for (int64_t n : {1, 31, 255, 257, 4099}) out.push_back(residual_add_case("remainder", n, seed + n));
    if (real) {
      out.push_back(residual_add_case("A17B hidden", 4096, seed));
      out.push_back(residual_add_case("A3B prefill 64", 64 * 2048, seed + 1));
    }
  } else if (op == "matvec_q") {
    if (rem)
      for (int64_t rows : {1, 3, 31, 33, 67}) out.push_back(matvec_q_case("remainder", rows, 64 * (rows % 5 + 1), 4, seed + rows));
    if (real) {
      out.push_back(matvec_q_case("A17B k/v_proj", 512, 4096, 4, seed));
      out.push_back(matvec_q_case("A17B o_proj", 4096, 8192, 4, seed + 1));
      out.push_back(matvec_q_case("A3B in_proj_qkv", 8192, 2048, 4, seed + 2));
      out.push_back(matvec_q_case("A3B expert down", 2048, 512, 4, seed + 3));
      out.push_back(matvec_q_case("A3B shared_expert_gate", 1, 2048, 4, seed + 4));
    }
  } else {
    MOE_FAIL("compare: no cases for op '" << op << "' yet (cases exist for rmsnorm, residual_add, matvec_q)");
  }
  for (OpCase& c : out) c.seed = seed;
  return out;
}

}  // namespace moe::compare
