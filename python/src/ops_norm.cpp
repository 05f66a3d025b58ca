// Bindings of the norms, RoPE and the residual add: rmsnorm, qk_norm, rmsnorm_gated, rope,
// rope_yarn, residual_add (the calling convention: ops_quant.cpp).
#include "common.h"
#include "ops_all.h"

namespace moe::python {

void bind_rmsnorm(py::module_& m) {
  def_op<RmsNormParams>(
      m, "rmsnorm",
      [](const std::string& tier, const py::dict& params, const py::object& x, const py::object& w,
         const py::object& y) {
        constexpr const char* op = "rmsnorm";
        const auto p = params_from<RmsNormParams>(params, op);
        const auto xs = in<float>(x, op, "x");
        const auto ws = in<float>(w, op, "w");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, rmsnorm, p, xs, ws, ys);
      },
      "y [rows, dim] = rmsnorm(x) * w (or 1 + w); y may be x");
}

void bind_qk_norm(py::module_& m) {
  def_op<QkNormParams>(
      m, "qk_norm",
      [](const std::string& tier, const py::dict& params, const py::object& q, const py::object& k,
         const py::object& q_out, const py::object& k_out) {
        constexpr const char* op = "qk_norm";
        const auto p = params_from<QkNormParams>(params, op);
        const auto qs = in<float>(q, op, "q");
        const auto ks = in<float>(k, op, "k");
        const auto qo = out<float>(q_out, op, "q_out");
        const auto ko = out<float>(k_out, op, "k_out");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, qk_norm, p, qs, ks, qo, ko);
      },
      "q_out, k_out [tokens, heads, head_dim]: per-head unweighted RMSNorm, q * 1/dk, k * 1/sqrt(dk)");
}

void bind_rmsnorm_gated(py::module_& m) {
  def_op<RmsNormGatedParams>(
      m, "rmsnorm_gated",
      [](const std::string& tier, const py::dict& params, const py::object& o, const py::object& z, const py::object& w,
         const py::object& y) {
        constexpr const char* op = "rmsnorm_gated";
        const auto p = params_from<RmsNormGatedParams>(params, op);
        const auto os = in<float>(o, op, "o");
        const auto zs = in<float>(z, op, "z");
        const auto ws = in<float>(w, op, "w");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, rmsnorm_gated, p, os, zs, ws, ys);
      },
      "y [tokens, heads, head_dim] = rmsnorm(o) * w * silu(z) per head");
}

void bind_rope(py::module_& m) {
  def_op<RopeParams>(
      m, "rope",
      [](const std::string& tier, const py::dict& params, const py::object& positions, const py::object& x,
         const py::object& y) {
        constexpr const char* op = "rope";
        const auto p = params_from<RopeParams>(params, op);
        const auto ps = in<int64_t>(positions, op, "positions");
        const auto xs = in<float>(x, op, "x");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, rope, p, ps, xs, ys);
      },
      "y [tokens, heads, head_dim] = partial half-split RoPE of x; y may be x");
}

void bind_rope_yarn(py::module_& m) {
  def_op<RopeYarnParams>(
      m, "rope_yarn",
      [](const std::string& tier, const py::dict& params, const py::object& positions, const py::object& x,
         const py::object& y) {
        constexpr const char* op = "rope_yarn";
        const auto p = params_from<RopeYarnParams>(params, op);
        const auto ps = in<int64_t>(positions, op, "positions");
        const auto xs = in<float>(x, op, "x");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, rope_yarn, p, ps, xs, ys);
      },
      "y [tokens, heads, rotary_dim] = YaRN RoPE of x (DeepSeek-V3 q_pe / k_pe); y may be x");
}

void bind_residual_add(py::module_& m) {
  def_op<ResidualAddParams>(
      m, "residual_add",
      [](const std::string& tier, const py::dict& params, const py::object& a, const py::object& b,
         const py::object& y) {
        constexpr const char* op = "residual_add";
        const auto p = params_from<ResidualAddParams>(params, op);
        const auto as = in<float>(a, op, "a");
        const auto bs = in<float>(b, op, "b");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, residual_add, p, as, bs, ys);
      },
      "y [n] = a + b; y may be a or b");
}

}  // namespace moe::python
