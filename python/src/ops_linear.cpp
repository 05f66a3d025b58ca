// Bindings of the linear- and full-attention ops: conv1d_step, decay_beta, delta_net, attention,
// mla_attention.
// The stateful ones take their state (conv state, delta-net state, KV caches) as in/out arrays
// updated in place; python/moeoracle/ops.py copies the caller's state first unless told to
// update it in place (calling convention: ops_quant.cpp).
#include "common.h"
#include "ops_all.h"

namespace moe::python {

void bind_conv1d_step(py::module_& m) {
  bind_op(
      m, "conv1d_step", {"x", "w", "state", "y"},
      [](Tier t, const Conv1dStepParams& p, In<float> x, In<float> w, Out<float> state, Out<float> y) {
        MOE_PY_CALL_TIER(t, conv1d_step, p, x, w, state, y);
      },
      "y [tokens, channels] = silu(causal depthwise conv1d of x); state [kernel-1, channels] in/out");
}

void bind_decay_beta(py::module_& m) {
  bind_op(
      m, "decay_beta", {"a", "b", "A_log", "dt_bias", "g", "beta"},
      [](Tier t, const DecayBetaParams& p, In<float> a, In<float> b, In<float> A_log, In<float> dt_bias, Out<float> g,
         Out<float> beta) { MOE_PY_CALL_TIER(t, decay_beta, p, a, b, A_log, dt_bias, g, beta); },
      "g = exp(-exp(A_log) softplus(a + dt_bias)), beta = sigmoid(b), [tokens, heads]");
}

void bind_delta_net(py::module_& m) {
  bind_op(
      m, "delta_net", {"q", "k", "v", "g", "beta", "state", "o"},
      [](Tier t, const DeltaNetParams& p, In<float> q, In<float> k, In<float> v, In<float> g, In<float> beta,
         Out<float> state, Out<float> o) { MOE_PY_CALL_TIER(t, delta_net, p, q, k, v, g, beta, state, o); },
      "o [tokens, v_heads, value_dim]: gated delta rule; state [v_heads, value_dim, key_dim] in/out");
}

void bind_attention(py::module_& m) {
  bind_op(
      m, "attention", {"q", "gate", "k", "v", "k_cache", "v_cache", "o"},
      [](Tier t, const AttentionParams& p, In<float> q, In<float> gate, In<float> k, In<float> v, Out<float> k_cache,
         Out<float> v_cache, Out<float> o) { MOE_PY_CALL_TIER(t, attention, p, q, gate, k, v, k_cache, v_cache, o); },
      "o [tokens, q_heads * head_dim]: gated causal GQA attention; k_cache, v_cache [capacity, kv_heads, head_dim] "
      "in/out (rows past .. past + tokens appended)");
}

void bind_mla_attention(py::module_& m) {
  bind_op(
      m, "mla_attention", {"q", "latent", "k_pe", "kv_b", "latent_cache", "kpe_cache", "o"},
      [](Tier t, const MlaAttentionParams& p, In<float> q, In<float> latent, In<float> k_pe, const QuantArg& kv_b,
         Out<float> latent_cache, Out<float> kpe_cache,
         Out<float> o) { MOE_PY_CALL_TIER(t, mla_attention, p, q, latent, k_pe, kv_b.m, latent_cache, kpe_cache, o); },
      "o [tokens, heads * v_dim]: DeepSeek-V3 MLA core over the latent cache; latent_cache [capacity, kv_lora], "
      "kpe_cache [capacity, rope_dim] in/out (rows past .. past + tokens appended)");
}

}  // namespace moe::python
