// delta_net: the gated delta rule recurrence over T tokens, state in and out
// (docs/ops/linear-attention.md "Recurrence", "Prefill and state"; HF torch_recurrent_gated_delta_rule,
// mlx-lm _gated_delta_step_ops).
//
// Shape contract (T tokens, Hk k-heads, Hv v-heads with Hv % Hk == 0, dk key_dim, dv value_dim):
//   q     [T, Hk, dk] f32   already normalised and scaled (qk_norm: |q| = 1/sqrt(dk), |k| = 1)
//   k     [T, Hk, dk] f32
//   v     [T, Hv, dv] f32
//   g     [T, Hv] f32       decay factor in [0, 1] (decay_beta), multiplies the state
//   beta  [T, Hv] f32       write strength in [0, 1]
//   state [Hv, dv, dk] f32  in/out: S_h[vi][ki], v-index major, k-index contiguous (MLX layout;
//                           HF's is the transpose [Hv, dk, dv]); zero at sequence start
//   o     [T, Hv, dv] f32   may be the same buffer as v; no other buffer may overlap state or o
// v-head h reads k-head h / (Hv / Hk) (repeat-interleave). Per token t and v-head h:
//   S <- g S;  kv_mem[vi] = sum_ki S[vi][ki] k[ki];  delta[vi] = (v[vi] - kv_mem[vi]) beta;
//   S[vi][ki] += k[ki] delta[vi];  o[vi] = sum_ki S[vi][ki] q[ki]   (the UPDATED state).
// Rows vi are independent, so the tiers process one row at a time.
// f32 tier order (CPU-R, bit-exact with it): S = g*S (rounded), kv_mem = fma(S, k, kv_mem) from 0,
// delta = (v - kv_mem) * beta, S = fma(k, delta, S), o = fma(S, q, o) from 0; ki ascending.
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
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("k_heads", k_heads), f("v_heads", v_heads), f("key_dim", key_dim),
        f("value_dim", value_dim);
  }
};

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
