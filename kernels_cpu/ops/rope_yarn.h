// rope_yarn: YaRN rotary position embedding of DeepSeek-V3 / Cogito-V2 MLA attention, applied to
// the rope parts only: q_pe (every head) and k_pe (one shared head) (docs/ops/mla.md "YaRN RoPE").
// Upstream truth: HF transformers 5.17
// models/deepseek_v3/modeling_deepseek_v3.py (DeepseekV3RotaryEmbedding, apply_rotary_pos_emb,
// apply_rotary_pos_emb_interleave) and modeling_rope_utils.py (_compute_yarn_parameters).
//
// Shape contract:
//   positions [tokens] int64         absolute 0-based position of each token, in [0, 2^31)
//   x         [tokens, heads, R] f32  row-major; q_pe (128 heads) or k_pe (1 head), R = 64
//   y         [tokens, heads, R] f32  may be the same buffer as x; any other overlap is an error
// Every channel is rotated (x is the rope part alone; the nope part never comes here).
//
// Frequencies (HF _compute_yarn_parameters; R = dim = qk_rope_head_dim, since DeepseekV3Config
// sets head_dim = qk_rope_head_dim; half = R/2; all of it once per call):
//   corr(n)   = R ln(L / (2 pi n)) / (2 ln theta)            find_correction_dim, L = original_max_position
//   low       = max(floor(corr(beta_fast)), 0)                find_correction_range with truncate = True
//   high      = min(ceil(corr(beta_slow)), R - 1)             (HF's default; no DeepSeek config sets it;
//                                                             note the clamp is to R-1 though the ramp has R/2 entries)
//   if low == high: high += 0.001                             linear_ramp_factor's singularity guard
//   w_i       = clamp((i - low) / (high - low), 0, 1)         linear_ramp_factor, i in [0, half)
//   pf_i      = theta^(2i/R)                                  pos_freqs
//   extra_i   = 1 / pf_i                                      inv_freq_extrapolation
//   inter_i   = 1 / (factor pf_i)                             inv_freq_interpolation
//   inv_i     = inter_i w_i + extra_i (1 - w_i)               HF: inter (1 - e) + extra e with e = 1 - w
// factor is rope_parameters["factor"]; 5.17 takes max_position_embeddings / L only when it is
// absent (4.x versions, from memory, took the ratio whenever L was given): 163840 / 4096 = 40
// for Cogito either way.
// Cogito (theta 1e4, factor 40, L 4096, beta 32/1, R 64): corr = 10.47 / 22.51, low 10, high 23.
// Attention factor (HF, "mscale"; multiplies cos and sin; the softmax scale is not this op's):
//   get_mscale(s, m) = 1 if s <= 1 else 0.1 m ln(s) + 1
//   m = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)   if mscale != 0 and mscale_all_dim != 0
//     = get_mscale(factor, 1)                                             otherwise (HF: `if mscale and mscale_all_dim`)
// Cogito: mscale = mscale_all_dim = 1, so m = 1 exactly. An absent config key is passed as 0.
// Rotation, per token (angle a_i = pos inv_i, c_i = m cos a_i, s_i = m sin a_i), for each head:
//   interleaved (HF rope_interleave = True, apply_rotary_pos_emb_interleave, the default): the
//   stored pairs are (x[2i], x[2i+1]); 5.17 rotates the even/odd slices directly,
//   cat([x1 c - x2 s, x2 c + x1 s]) (earlier versions de-interleaved with view/transpose and
//   applied rotate-half: the same values), so the OUTPUT is half-split:
//     y[i] = x[2i] c_i - x[2i+1] s_i,   y[i + half] = x[2i] s_i + x[2i+1] c_i
//   half-split (interleaved = false; HF apply_rotary_pos_emb, and moeflux MFR yarn_rope_apply):
//     y[i] = x[i] c_i - x[i+half] s_i,  y[i + half] = x[i] s_i + x[i+half] c_i
// So interleaved(x) == half_split(deinterleave(x)) bit for bit in every tier. The official
// DeepSeek inference code and MLX (traditional=True) rotate the same interleaved pairs but keep
// the output interleaved: a permutation of HF's output, identical q.k scores when q_pe and k_pe
// share the layout. MFR pairs (x[i], x[i+32]) on the stored (interleaved) weights, which
// docs/ops/verification.md "MFR YaRN pairing" calls a probable MFR bug; interleaved = false expresses it.
//
// Tiers:
//   truth (double): every formula above in f64 (low/high, ramp, pow, reciprocals, m, angle,
//   cos/sin, rotation), rounded to f32 once at the end.
//   f32: moeflux MFR's order (riir/attn/rope.rs compute_yarn_inv_freq, yarn_get_mscale_full,
//   apply_rotary_emb_yarn; the Metal yarn_rope_apply computes the same per element):
//     e = (float)(2i) / (float)R; pf = powf(theta, e); extra = 1.0f / pf;
//     inter = 1.0f / (factor * pf)                                      (HF's formula: see below)
//     low/high in double as HF (integers; MFR's f32 floor/ceil agree unless corr() is within an
//     f32 rounding of an integer), w = clamp(((float)i - low) / (high - low)) in f32,
//     inv = inter * w + extra * (1.0f - w)                              (MFR; HF weights inter by 1-(1-w))
//     m = (0.1f*mscale*logf(factor) + 1) / (0.1f*mscale_all_dim*logf(factor) + 1) in f32
//         (HF's branch for a zero mscale; MFR always divides)
//     per token: a = (float)pos * inv; c = cosf(a) * m; s = sinf(a) * m;
//     (x0*c - x1*s, x0*s + x1*c) without FMA.
//   fast: the f32 tier's table (the same function), libm cosf/sinf once per token, the rotation
//   vectorised over the pairs (Eigen, FMA contraction allowed), tokens over threads.
// MFR differs from HF in its interpolation frequency: compute_yarn_inv_freq takes
// 1/powf(factor*theta, e) = (factor theta)^-e, where HF (and DeepSeek's modeling_deepseek.py)
// take 1/(factor theta^e); at Cogito's i = 23..31 (w = 1) MFR's frequency is 40^(1-2i/64) =
// 2.8x .. 1.1x HF's. The f32 tier follows HF there (a semantic difference, not an operation
// order); docs/ops/mla.md "YaRN RoPE" gives both forms.
// HF's float64 model path is not an f64 evaluation: DeepseekV3RotaryEmbedding.forward casts
// inv_freq and the positions to float32 and disables autocast, and _compute_yarn_parameters builds
// inv_freq in float32; only the rotation runs in float64. The golden
// (tests/oracle/deepseek_yarn_rope_golden_test.cpp) therefore also holds HF's formulas run in f64
// throughout, which our truth tier reproduces to the f32 rounding of every element.
// The f32 angle carries an absolute error growing with |a| (the f32 inv_freq is within ~7u, the
// product adds u): 1.6e5 * 0.75 * ~3u ~ 0.02 rad at Cogito's last position. The bound in
// spec/rope_yarn_spec.h (rope_yarn_f32_bound) is derived from it; HF's own f32 path (and its
// float64 path, whose angles HF forces to f32) carries the same kind of error.
// Position 0 gives y = fl(x m) on the half-split layout (y = x when m = 1, bit for bit, finite
// x) and the de-interleaved x when interleaved.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace moe {

struct RopeYarnParams {
  int64_t tokens = 1;
  int64_t heads = 1;                     // 128 for q_pe (Cogito-V2 / DeepSeek-V3), 1 for k_pe
  int64_t rotary_dim = 64;               // R = qk_rope_head_dim
  float theta = 1e4f;                    // rope_theta
  float factor = 40.0f;                  // rope_scaling.factor
  int64_t original_max_position = 4096;  // rope_scaling.original_max_position_embeddings
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  float mscale = 1.0f;                   // 0 = absent from the config
  float mscale_all_dim = 1.0f;           // 0 = absent from the config
  bool interleaved = true;               // HF rope_interleave (DeepseekV3Config default True)
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("rotary_dim", rotary_dim), f("theta", theta), f("factor", factor),
        f("original_max_position", original_max_position), f("beta_fast", beta_fast), f("beta_slow", beta_slow),
        f("mscale", mscale), f("mscale_all_dim", mscale_all_dim), f("interleaved", interleaved);
  }
};

template <class Acc>
void rope_yarn_ref(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                   std::span<float> y);
void rope_yarn_fast(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                    std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void rope_yarn_validate(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                        std::span<const float> y);

// The pieces of the frequency table, for the tiers, the tests and the golden comparison.
struct YarnRange {
  double low = 0, high = 0;  // high after the singularity guard
};
YarnRange rope_yarn_range(const RopeYarnParams& p);
// inv_freq [R/2] and the attention factor m, in the tier's precision and order (see above).
template <class Acc>
std::vector<Acc> rope_yarn_inv_freq(const RopeYarnParams& p);
template <class Acc>
Acc rope_yarn_attention_factor(const RopeYarnParams& p);
// Where pair i of a head is read from: (2i, 2i+1) interleaved, (i, i + R/2) half-split. Its
// results always go to (i, i + R/2).
inline void rope_yarn_pair(const RopeYarnParams& p, int64_t i, int64_t& a, int64_t& b) {
  if (p.interleaved) a = 2 * i, b = 2 * i + 1;
  else a = i, b = i + p.rotary_dim / 2;
}

// Per-element bound on |y - y_truth| for any f32 evaluation that follows the formulas above with
// one rounding per operation (the f32 and fast tiers, HF's float32 path): spec/rope_yarn_spec.h's
// rope_yarn_bound under cpu_f32_model().
std::vector<double> rope_yarn_f32_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                        std::span<const float> x);

}  // namespace moe
