// attention: gated GQA attention over a KV cache (docs/ops/attention.md "Full-attention layer" steps
// 6-8 and the softmax of docs/ops/README.md "Scalar helpers"; HF Qwen3_5MoeAttention /
// Qwen3NextAttention: causal SDPA with repeat_kv, softmax in f32, then attn_out * sigmoid(gate)).
//
// Shape contract (all f32, row-major, T = tokens, H = q_heads, Hkv = kv_heads, D = head_dim):
//   q        [T, H, D]              query, already q_norm'ed and RoPE'd
//   gate     [T, H, D]              output gate (the second half of each head's q_proj block,
//                                   un-normalised, un-rotated)
//   k, v     [T, Hkv, D]            the new tokens' key (k_norm'ed, RoPE'd) and value
//   k_cache  [capacity, Hkv, D]     in/out: rows [0, past) hold earlier tokens; the op writes
//   v_cache  [capacity, Hkv, D]     rows [past, past + T) (exact copies of k, v) and no others
//   o        [T, H * D]             out: must not overlap any other argument
//   Requirements: T >= 0 (T = 0 does nothing), H, Hkv, D > 0, H % Hkv == 0,
//   0 <= past, past + T <= capacity, scale finite and >= 0. q, gate, k, v must not overlap the
//   caches (the append would change them mid-call).
//
// Math, for token t (absolute position past + t) and query head h, kv head g = h / (H / Hkv)
// (consecutive query heads share a kv head), len = past + t + 1 (causal, it sees itself):
//   s[p] = dot(q[t][h], K[p][g]) * scale for p in [0, len), scale = 1/sqrt(D) when p.scale == 0
//   P = softmax(s);  o[t][h*D + d] = (sum_p P[p] V[p][g][d]) * sigmoid(gate[t][h][d]).
// All T new rows are appended first; token t only reads rows < past + t + 1, so a prefill of
// T tokens equals T one-token calls (bit-exact per tier).
//
// f32 tier order (CPU-C cpu attention, bit-exact with it): dot = fma over d ascending from 0,
// then * scale (scale = 1/sqrtf(D)); softmax: m = s[0], m = s[p] if s[p] > m (strict), e[p] =
// expf(s[p] - m) stored while sum += e[p] in p order, inv = 1/sum, P[p] = e[p] * inv;
// o[d] = 0, then o[d] += P[p] * v[d] (not fused) for p ascending; o[d] * (1 / (1 + expf(-g))).
// The truth (Acc = double) runs the same formulas in f64 with f64 exp.
// The fast tier splits each row's cache into chunks of kAttentionFastChunk rows and combines
// them with an online softmax (running max, rescaled sums), mathematically equal.
#pragma once
#include <cstdint>
#include <span>

#include "core/check_util.h"

namespace moe {

struct AttentionParams {
  int64_t tokens = 1;     // T new tokens
  int64_t q_heads = 0;    // H
  int64_t kv_heads = 0;   // Hkv
  int64_t head_dim = 0;   // D
  int64_t past = 0;       // rows already in the cache
  int64_t capacity = 0;   // rows the cache holds
  float scale = 0.0f;     // 0 = 1/sqrt(D) (f32 tier: 1/sqrtf(D))
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("q_heads", q_heads), f("kv_heads", kv_heads), f("head_dim", head_dim),
        f("past", past), f("capacity", capacity), f("scale", scale);
  }
};

// Cache rows per chunk of the fast tier's online softmax (the spec's error bound counts the
// chunk combination, so it needs the number).
inline constexpr int64_t kAttentionFastChunk = 1024;

template <class Acc>
void attention_ref(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                   std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                   std::span<float> v_cache, std::span<float> o);
void attention_fast(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                    std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                    std::span<float> v_cache, std::span<float> o);
// One case of attention_check (seeded inputs, three tiers, bounds), for tests that want a
// single real shape without the whole real scope.
CheckResult attention_check_one(const char* label, const AttentionParams& p, uint64_t seed);

// Shared by every tier: argument validation with messages naming the op.
void attention_validate(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                        std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                        std::span<float> v_cache, std::span<float> o);

}  // namespace moe
