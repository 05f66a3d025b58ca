#version 450
// Planted bug (tests/vulkan/mla_compare_test.cpp): the softmax scale left out.
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
  return acc;
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
  for (uint p = lid; p < len; p += WG) l += exp(score(qrow, p) - m);
  red[lid] = l;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] += red[lid + s];
    barrier();
  }
  const float inv = 1.0 / red[0];
  for (uint p0 = 0u; p0 < len; p0 += WG) {
    const uint p = p0 + lid;
    pw[lid] = p < len ? exp(score(qrow, p) - m) * inv : 0.0;
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
