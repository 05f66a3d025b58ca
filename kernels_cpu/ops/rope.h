// rope: partial rotary position embedding, half-split ("NeoX", rotate-half) pairs
// (docs/ops/attention.md "RoPE"; HF apply_rotary_pos_emb, MLX
// nn.RoPE(R, traditional=False, base=theta)).
//
// Shape contract:
//   positions [tokens] int64       absolute 0-based position of each token, in [0, 2^31)
//   x         [tokens, heads, head_dim] f32, row-major     q (H heads) or k (Hkv heads), after q/k norm
//   y         [tokens, heads, head_dim] f32                may be the same buffer as x; any other
//                                                          overlap is an error
// With D = head_dim, R = rotary_dim (even, 0 < R <= D), half = R/2, for each head vector and
// i in [0, half):
//   inv_freq_i = theta^(-2i/R),  a = pos * inv_freq_i,  c = cos(a), s = sin(a)
//   (y[i], y[i + half]) = (x[i] c - x[i + half] s,  x[i] s + x[i + half] c)
// Pairs are (x[i], x[i + R/2]), not the interleaved (x[2i], x[2i+1]). Channels [R, D) are
// copied bit-exactly (NaN payloads included). Qwen3.5/3.6: D = 256, R = 64, theta = 1e7
// (read theta from the config: MLX defaults to 1e5 when it is missing,
// docs/ops/verification.md "RoPE theta default").
//
// Tiers:
//   truth (double): inv_freq = 1/pow(theta, 2i/R), a = pos * inv_freq, cos/sin all in f64.
//   f32 (the engines: CPU-C apply_rotary_emb, CPU-R rope.rs, VK full_attn.c, bit-exact with
//   them): inv_freq = 1 / powf(theta, (float)(2i) / (float)R); a = (float)pos * inv_freq;
//   c = cosf(a), s = sinf(a); (x1*c - x2*s, x1*s + x2*c) without FMA.
// The f32 angle carries an absolute error growing with |a| (at most ~|a| * 4u for R = 64, i.e.
// 0.24 rad at pos 1e6; ~0.03 observed at D 256, theta 1e7): the error of the f32 tier (and of
// every engine) grows with the position; the bound in spec/rope_spec.h is derived from it. Rotation never changes a pair's norm beyond
// rounding, whatever the angle error.
// Position 0 returns x bit-exactly (cos 0 = 1, sin 0 = 0 exactly) for finite x, except that a
// -0 paired with a negative partner comes back +0; an infinity in a rotated pair gives NaN
// (inf * sin 0), as in the engines.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>

namespace moe {

struct RopeParams {
  int64_t tokens = 1;
  int64_t heads = 1;
  int64_t head_dim = 256;    // D
  int64_t rotary_dim = 64;   // R = head_dim * partial_rotary_factor
  float theta = 1e7f;        // rope_theta
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("head_dim", head_dim), f("rotary_dim", rotary_dim),
        f("theta", theta);
  }
};

template <class Acc>
void rope_ref(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x, std::span<float> y);
void rope_fast(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void rope_validate(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x,
                   std::span<const float> y);

// Shared by the rotary ops (rope, rope_yarn): x and y hold tokens * heads * dim values (no int64
// overflow; `dim_name` names dim in the message), one position per token in [0, 2^31) (engines
// hold positions in an int: anything else is a caller bug, not a position), and y is x or
// disjoint from it (each head is read whole before it is written; a shifted overlap is not).
void rotary_validate_io(const char* op, int64_t tokens, int64_t heads, int64_t dim, const char* dim_name,
                        std::span<const int64_t> positions, std::span<const float> x, std::span<const float> y);

// One token's rotation table for the fast tiers, in f32 with libm (~1 ulp, as the bounds assume;
// vectorised sin/cos do not promise it): c[i] = cos(pos inv[i]) m, s[i] = sin(pos inv[i]) m.
// m = 1 is exact, so rope's table is the unscaled one.
template <class Arr>
void rotary_table_f32(float pos, const float* inv, int64_t half, float m, Arr& c, Arr& s) {
  for (int64_t i = 0; i < half; ++i) {
    const float angle = pos * inv[i];
    c[i] = std::cos(angle) * m, s[i] = std::sin(angle) * m;
  }
}

}  // namespace moe
