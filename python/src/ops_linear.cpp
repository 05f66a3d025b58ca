// Bindings of the linear- and full-attention ops: conv1d_step, decay_beta, delta_net, attention,
// mla_attention.
// The stateful ones take their state (conv state, delta-net state, KV caches) as in/out arrays
// updated in place; python/moeoracle/ops.py copies the caller's state first unless told to
// update it in place (calling convention: ops_quant.cpp).
#include "common.h"
#include "ops_all.h"

namespace moe::python {

void bind_conv1d_step(py::module_& m) {
  def_op<Conv1dStepParams>(
      m, "conv1d_step",
      [](const std::string& tier, const py::dict& params, const py::object& x, const py::object& w,
         const py::object& state, const py::object& y) {
        constexpr const char* op = "conv1d_step";
        const auto p = params_from<Conv1dStepParams>(params, op);
        const auto xs = in<float>(x, op, "x");
        const auto ws = in<float>(w, op, "w");
        const auto ss = out<float>(state, op, "state");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, conv1d_step, p, xs, ws, ss, ys);
      },
      "y [tokens, channels] = silu(causal depthwise conv1d of x); state [kernel-1, channels] in/out");
}

void bind_decay_beta(py::module_& m) {
  def_op<DecayBetaParams>(
      m, "decay_beta",
      [](const std::string& tier, const py::dict& params, const py::object& a, const py::object& b,
         const py::object& A_log, const py::object& dt_bias, const py::object& g, const py::object& beta) {
        constexpr const char* op = "decay_beta";
        const auto p = params_from<DecayBetaParams>(params, op);
        const auto as = in<float>(a, op, "a");
        const auto bs = in<float>(b, op, "b");
        const auto al = in<float>(A_log, op, "A_log");
        const auto dt = in<float>(dt_bias, op, "dt_bias");
        const auto gs = out<float>(g, op, "g");
        const auto be = out<float>(beta, op, "beta");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, decay_beta, p, as, bs, al, dt, gs, be);
      },
      "g = exp(-exp(A_log) softplus(a + dt_bias)), beta = sigmoid(b), [tokens, heads]");
}

void bind_delta_net(py::module_& m) {
  def_op<DeltaNetParams>(
      m, "delta_net",
      [](const std::string& tier, const py::dict& params, const py::object& q, const py::object& k, const py::object& v,
         const py::object& g, const py::object& beta, const py::object& state, const py::object& o) {
        constexpr const char* op = "delta_net";
        const auto p = params_from<DeltaNetParams>(params, op);
        const auto qs = in<float>(q, op, "q");
        const auto ks = in<float>(k, op, "k");
        const auto vs = in<float>(v, op, "v");
        const auto gs = in<float>(g, op, "g");
        const auto bs = in<float>(beta, op, "beta");
        const auto ss = out<float>(state, op, "state");
        const auto os = out<float>(o, op, "o");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, delta_net, p, qs, ks, vs, gs, bs, ss, os);
      },
      "o [tokens, v_heads, value_dim]: gated delta rule; state [v_heads, value_dim, key_dim] in/out");
}

void bind_attention(py::module_& m) {
  def_op<AttentionParams>(
      m, "attention",
      [](const std::string& tier, const py::dict& params, const py::object& q, const py::object& gate,
         const py::object& k, const py::object& v, const py::object& k_cache, const py::object& v_cache,
         const py::object& o) {
        constexpr const char* op = "attention";
        const auto p = params_from<AttentionParams>(params, op);
        const auto qs = in<float>(q, op, "q");
        const auto gs = in<float>(gate, op, "gate");
        const auto ks = in<float>(k, op, "k");
        const auto vs = in<float>(v, op, "v");
        const auto kc = out<float>(k_cache, op, "k_cache");
        const auto vc = out<float>(v_cache, op, "v_cache");
        const auto os = out<float>(o, op, "o");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, attention, p, qs, gs, ks, vs, kc, vc, os);
      },
      "o [tokens, q_heads * head_dim]: gated causal GQA attention; k_cache, v_cache [capacity, kv_heads, head_dim] "
      "in/out (rows past .. past + tokens appended)");
}

void bind_mla_attention(py::module_& m) {
  def_op<MlaAttentionParams>(
      m, "mla_attention",
      [](const std::string& tier, const py::dict& params, const py::object& q, const py::object& latent,
         const py::object& k_pe, const py::object& kv_b, const py::object& latent_cache, const py::object& kpe_cache,
         const py::object& o) {
        constexpr const char* op = "mla_attention";
        const auto p = params_from<MlaAttentionParams>(params, op);
        const auto qs = in<float>(q, op, "q");
        const auto ls = in<float>(latent, op, "latent");
        const auto ks = in<float>(k_pe, op, "k_pe");
        const QuantArg w = quant_arg(kv_b, op, "kv_b");
        const auto lc = out<float>(latent_cache, op, "latent_cache");
        const auto kc = out<float>(kpe_cache, op, "kpe_cache");
        const auto os = out<float>(o, op, "o");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, mla_attention, p, qs, ls, ks, w.m, lc, kc, os);
      },
      "o [tokens, heads * v_dim]: DeepSeek-V3 MLA core over the latent cache; latent_cache [capacity, kv_lora], "
      "kpe_cache [capacity, rope_dim] in/out (rows past .. past + tokens appended)");
}

}  // namespace moe::python
