// delta_net: the gated delta rule recurrence over T tokens, state in and out
// (docs/ops/linear-attention.md "Recurrence", "Prefill and state"; HF torch_recurrent_gated_delta_rule,
// mlx-lm _gated_delta_step_ops).
//
// Shape contract (T tokens, Hk k-heads, Hv v-heads with Hv % Hk == 0, dk key_dim, dv value_dim):
//   q     [T, Hk, dk] f32   already normalised and scaled (qk_norm: |q| = 1/sqrt(dk), |k| = 1)
//   k     [T, Hk, dk] f32
//   v     [T, Hv, dv] f32
//   g     [T, Hv] f32       decay factor in [0, 1] (decay_beta), multiplies the state; with
//                           decay_log = 1 its natural log instead (the factor is exp(g))
//   beta  [T, Hv] f32       write strength in [0, 1]
//   state [Hv, dv, dk] f32  in/out: S_h[vi][ki], v-index major, k-index contiguous (MLX layout;
//                           HF's is the transpose [Hv, dk, dv]); zero at sequence start
//   o     [T, Hv, dv] f32   may be the same buffer as v; no other buffer may overlap state or o
// v-head h reads k-head h / (Hv / Hk) (repeat-interleave; head_group = 1: h % Hk). Per token t
// and v-head h:
//   S <- g S;  kv_mem[vi] = sum_ki S[vi][ki] k[ki];  delta[vi] = (v[vi] - kv_mem[vi]) beta;
//   S[vi][ki] += k[ki] delta[vi];  o[vi] = out_scale * sum_ki S[vi][ki] q[ki]   (the UPDATED state).
// Conventions (docs/ops/linear-attention.md "Conventions"): decay_log, head_group and out_scale
// are how engines differ in writing the same recurrence; the defaults are the form above.
// Rows vi are independent, so the tiers process one row at a time.
// f32 tier order (CPU-R, bit-exact with it): S = g*S (rounded), kv_mem = fma(S, k, kv_mem) from 0,
// delta = (v - kv_mem) * beta, S = fma(k, delta, S), o = fma(S, q, o) from 0; ki ascending; the
// factor g is expf(g) under decay_log; o then times out_scale (exact when it is 1).
// Truth: the same in f64 from the f32 state, o read from the f64 updated state.
// Every tier stores the state as f32 after every token (as every engine does), so a T-token
// call equals T one-token calls bit-for-bit in each tier.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct DeltaNetParams {
  int64_t tokens = 1;
  int64_t k_heads = 0;    // Hk
  int64_t v_heads = 0;    // Hv, a multiple of Hk
  int64_t key_dim = 0;    // dk
  int64_t value_dim = 0;  // dv
  // Conventions (defaults: the contract above).
  int64_t decay_log = 0;   // 0: g is the decay factor; 1: g is its log, the factor exp(g) (ggml)
  int64_t head_group = 0;  // 0: v-head h reads q/k head h / (Hv / Hk); 1: h % Hk (ggml)
  float out_scale = 1.0f;  // o = out_scale * S q (ggml passes 1/sqrt(dv)); 1: no multiply
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("k_heads", k_heads), f("v_heads", v_heads), f("key_dim", key_dim),
        f("value_dim", value_dim);
    visit_conventions(*this, f);
  }
  // The convention fields alone (a manifest's "conventions" sets them; Self may be const).
  template <class Self, class F>
  static void visit_conventions(Self& s, F&& f) {
    f("decay_log", s.decay_log), f("head_group", s.head_group), f("out_scale", s.out_scale);
  }
};

// The q/k head v-head h reads, by p.head_group.
inline int64_t delta_net_qk_head(const DeltaNetParams& p, int64_t h) {
  return p.head_group == 1 ? h % p.k_heads : h / (p.v_heads / p.k_heads);
}

template <class Acc>
void delta_net_ref(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                   std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                   std::span<float> state, std::span<float> o);
void delta_net_fast(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                    std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                    std::span<float> state, std::span<float> o);

// Shared by every tier: argument validation with messages naming the op.
void delta_net_validate(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                        std::span<float> state, std::span<float> o);

}  // namespace moe
