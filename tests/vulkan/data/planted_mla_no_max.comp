#version 450
// PLANTED BUG (tests/vulkan/mla_compare_test.cpp): the softmax without its max shift, at both exponentials: exp(s), right unless exp overflows or underflows.
// mla_attention: DeepSeek-V3 / Cogito-V2 Multi-head Latent Attention core in MFR's absorbed form
// (docs/ops/mla.md "Absorbed form"; kernels_cpu/ops/mla_attention.h has the math and HF's naive form, the truth),
// with the cache append fused in. For token t (position past + t, causal) and head h:
//   q'[c] = sum_d q_nope[d] W_kb,h[d][c]                       (c < L, d < Dn)
//   s[p]  = (q' . lat_p + q_pe . kpe_p) * scale                 (p <= past + t)
//   P     = softmax(s),  vc[c] = sum_p P[p] lat_p[c],  o[e] = sum_c W_vb,h[e][c] vc[c]   (e < Dv)
// W_kb,h / W_vb,h are rows [h (Dn+Dv), + Dn) / [h (Dn+Dv) + Dn, + Dv) of kv_b, MLX affine
// BITS-bit codes (low bits first) with bf16 scales and biases per group of G columns, dequantised
// as fma(code, s, b). Rows p < past come from the caches, rows past.. from the inputs (never read
// back from the caches this dispatch writes: no ordering between workgroups is needed); the
// workgroups of head 0 append their token's latent and k_pe rows to the caches.
// Shape contract: q [T, H, Dn + Dr], latent [T, L], k_pe [T, Dr], latent_cache [capacity, L] and
// kpe_cache [capacity, Dr] in/out (rows [past, past + T) written, no others), kv_b.w
// [H (Dn + Dv), L BITS / 32] u32, kv_b.scales/.biases [H (Dn + Dv), L / G] bf16, o [T, H Dv].
// One workgroup of 64 lanes per (head, token): dispatch (H, T, 1). Softmax in three passes over
// the rows (max, sum, weights; the scores recomputed in the same order each time), the weights of
// 64 rows at a time in shared memory; max and sum by a fixed tree. No subgroup operations.
// Spec constants: 0 BITS, 1 L (kv_lora: the shared q' and vc arrays).
layout(local_size_x = 64) in;
const uint WG = 64u;
layout(constant_id = 0) const uint BITS = 4;
layout(constant_id = 1) const uint L = 512;
const uint CODES = 32u / BITS;
const uint MASK = (1u << BITS) - 1u;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer Lat { float latent[]; };
layout(std430, set = 0, binding = 2) readonly buffer Kpe { float k_pe[]; };
layout(std430, set = 0, binding = 3) buffer LatCache { float latent_cache[]; };
layout(std430, set = 0, binding = 4) buffer KpeCache { float kpe_cache[]; };
layout(std430, set = 0, binding = 5) readonly buffer W { uint kv_w[]; };
layout(std430, set = 0, binding = 6) readonly buffer S { uint kv_s[]; };
layout(std430, set = 0, binding = 7) readonly buffer B { uint kv_b[]; };
layout(std430, set = 0, binding = 8) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push {
  uint heads;
  uint nope;
  uint rope;
  uint v_dim;
  uint past;
  uint group_size;
  float scale;
} pc;

shared float qa[L];
shared float vc[L];
shared float pw[WG];
shared float red[WG];

float bf16_at(uint word, uint e) { return uintBitsToFloat(((e & 1u) != 0u ? word >> 16 : word & 0xFFFFu) << 16); }

float weight(uint row, uint c) {
  const uint code = (kv_w[row * (L / CODES) + c / CODES] >> ((c % CODES) * BITS)) & MASK;
  const uint g = row * (L / pc.group_size) + c / pc.group_size;
  return fma(float(code), bf16_at(kv_s[g >> 1], g), bf16_at(kv_b[g >> 1], g));
}

float lat(uint p, uint c) { return p < pc.past ? latent_cache[p * L + c] : latent[(p - pc.past) * L + c]; }
float kpe(uint p, uint j) {
  return p < pc.past ? kpe_cache[p * pc.rope + j] : k_pe[(p - pc.past) * pc.rope + j];
}

// The score of row p: one fma chain over [q' | q_pe] . [lat_p | kpe_p], then the scale.
float score(uint qrow, uint p) {
  float acc = 0.0;
  for (uint c = 0u; c < L; ++c) acc = fma(qa[c], lat(p, c), acc);
  for (uint j = 0u; j < pc.rope; ++j) acc = fma(q[qrow + pc.nope + j], kpe(p, j), acc);
  return acc * pc.scale;
}

void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
  const uint qrow = (t * pc.heads + h) * (pc.nope + pc.rope);
  const uint krow = h * (pc.nope + pc.v_dim);
  const uint len = pc.past + t + 1u;
  if (h == 0u) {
    for (uint c = lid; c < L; c += WG) latent_cache[(pc.past + t) * L + c] = latent[t * L + c];
    for (uint j = lid; j < pc.rope; j += WG) kpe_cache[(pc.past + t) * pc.rope + j] = k_pe[t * pc.rope + j];
  }
  for (uint c = lid; c < L; c += WG) {
    float acc = 0.0;
    for (uint d = 0u; d < pc.nope; ++d) acc = fma(q[qrow + d], weight(krow + d, c), acc);
    qa[c] = acc;
    vc[c] = 0.0;
  }
  barrier();
  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint p = lid; p < len; p += WG) m = max(m, score(qrow, p));
  red[lid] = m;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] = max(red[lid], red[lid + s]);
    barrier();
  }
  m = red[0];
  barrier();
  float l = 0.0;
  for (uint p = lid; p < len; p += WG) l += exp(score(qrow, p));  // max shift dropped
  red[lid] = l;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] += red[lid + s];
    barrier();
  }
  const float inv = 1.0 / red[0];
  for (uint p0 = 0u; p0 < len; p0 += WG) {
    const uint p = p0 + lid;
    pw[lid] = p < len ? exp(score(qrow, p)) * inv : 0.0;  // max shift dropped
    barrier();
    const uint n = min(WG, len - p0);
    for (uint c = lid; c < L; c += WG) {
      float acc = vc[c];
      for (uint k = 0u; k < n; ++k) acc = fma(pw[k], lat(p0 + k, c), acc);
      vc[c] = acc;
    }
    barrier();
  }
  for (uint e = lid; e < pc.v_dim; e += WG) {
    float acc = 0.0;
    for (uint c = 0u; c < L; ++c) acc = fma(weight(krow + pc.nope + e, c), vc[c], acc);
    o[(t * pc.heads + h) * pc.v_dim + e] = acc;
  }
}
