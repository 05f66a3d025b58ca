#version 450
// rope: partial rotary position embedding, half-split ("NeoX") pairs (x[i], x[i + R/2]), i < R/2:
//   inv_freq_i = exp2(-(2i/R) * log2(theta))  (= theta^(-2i/R), GLSL's own pow formula)
//   a = float(pos) * inv_freq_i, reduced to [-pi, pi] here (Vulkan defines sin/cos precision
//   only there): r = a - roundEven(a / 2pi) * 2pi, folded once more if it lands outside;
//   (y[i], y[i + R/2]) = (x[i] cos r - x[i + R/2] sin r,  x[i] sin r + x[i + R/2] cos r);
//   channels [R, D) copied bit-exactly (x and y are read and written as uint words).
// The angle is formed in f32, as every engine does: its error grows with the position (the
// case's bound, compare/cases/rope_case.cpp, is derived from the Vulkan precision of exp2,
// log2, division and sin/cos).
// Shape contract: positions [tokens] u32 (absolute position of each token, < 2^31: a buffer,
// so a prefill chunk or any set of positions runs in one dispatch); x, y [tokens, heads, D] f32,
// row-major (y distinct from x); push constants D = head_dim, R = rotary_dim (even,
// 0 < R <= D), theta; one workgroup per (head, token): dispatch (heads, tokens, 1); lanes stride
// over the R/2 pairs, then over the tail. No subgroup operations (any subgroup size).
// Workgroup: WG = min(64, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 64, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer P { uint positions[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push { uint head_dim; uint rotary_dim; float theta; } pc;

const float kTwoPi = 6.28318530717958647692;
const float kInvTwoPi = 0.15915494309189533577;
const float kPi = 3.14159265358979323846;

void main() {
  const uint token = gl_WorkGroupID.y;
  const uint base = (token * gl_NumWorkGroups.x + gl_WorkGroupID.x) * pc.head_dim;
  const uint half_r = pc.rotary_dim / 2u;
  const float pos = float(positions[token]);
  const float log2_theta = log2(pc.theta);
  for (uint i = gl_LocalInvocationID.x; i < half_r; i += gl_WorkGroupSize.x) {
    const float e = float(2u * i) / float(pc.rotary_dim);
    const float a = pos * exp2(-e * log2_theta);
    float r = a - roundEven(a * kInvTwoPi) * kTwoPi;
    if (r > kPi) r -= kTwoPi;
    else if (r < -kPi) r += kTwoPi;
    const float c = cos(r), s = sin(r);
    const float x1 = uintBitsToFloat(x[base + i]), x2 = uintBitsToFloat(x[base + i + half_r]);
    y[base + i] = floatBitsToUint(x1 * c - x2 * s);
    y[base + i + half_r] = floatBitsToUint(x1 * s + x2 * c);
  }
  for (uint j = pc.rotary_dim + gl_LocalInvocationID.x; j < pc.head_dim; j += gl_WorkGroupSize.x) y[base + j] = x[base + j];
}
