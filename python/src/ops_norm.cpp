// Bindings of the norms, RoPE and the residual add: rmsnorm, qk_norm, rmsnorm_gated, rope,
// rope_yarn, residual_add (the calling convention: ops_quant.cpp).
#include "common.h"
#include "ops_all.h"

namespace moe::python {

void bind_rmsnorm(py::module_& m) {
  bind_op(
      m, "rmsnorm", {"x", "w", "y"},
      [](Tier t, const RmsNormParams& p, In<float> x, In<float> w, Out<float> y) {
        MOE_PY_CALL_TIER(t, rmsnorm, p, x, w, y);
      },
      "y [rows, dim] = rmsnorm(x) * w (or 1 + w); y may be x");
}

void bind_qk_norm(py::module_& m) {
  bind_op(
      m, "qk_norm", {"q", "k", "q_out", "k_out"},
      [](Tier t, const QkNormParams& p, In<float> q, In<float> k, Out<float> q_out, Out<float> k_out) {
        MOE_PY_CALL_TIER(t, qk_norm, p, q, k, q_out, k_out);
      },
      "q_out, k_out [tokens, heads, head_dim]: per-head unweighted RMSNorm, q * 1/dk, k * 1/sqrt(dk)");
}

void bind_rmsnorm_gated(py::module_& m) {
  bind_op(
      m, "rmsnorm_gated", {"o", "z", "w", "y"},
      [](Tier t, const RmsNormGatedParams& p, In<float> o, In<float> z, In<float> w, Out<float> y) {
        MOE_PY_CALL_TIER(t, rmsnorm_gated, p, o, z, w, y);
      },
      "y [tokens, heads, head_dim] = rmsnorm(o) * w * silu(z) per head");
}

void bind_rope(py::module_& m) {
  bind_op(
      m, "rope", {"positions", "x", "y"},
      [](Tier t, const RopeParams& p, In<int64_t> positions, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, rope, p, positions, x, y);
      },
      "y [tokens, heads, head_dim] = partial half-split RoPE of x; y may be x");
}

void bind_rope_yarn(py::module_& m) {
  bind_op(
      m, "rope_yarn", {"positions", "x", "y"},
      [](Tier t, const RopeYarnParams& p, In<int64_t> positions, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, rope_yarn, p, positions, x, y);
      },
      "y [tokens, heads, rotary_dim] = YaRN RoPE of x (DeepSeek-V3 q_pe / k_pe); y may be x");
}

void bind_residual_add(py::module_& m) {
  bind_op(
      m, "residual_add", {"a", "b", "y"},
      [](Tier t, const ResidualAddParams& p, In<float> a, In<float> b, Out<float> y) {
        MOE_PY_CALL_TIER(t, residual_add, p, a, b, y);
      },
      "y [n] = a + b; y may be a or b");
}

}  // namespace moe::python
