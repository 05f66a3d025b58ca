#version 450
// rope_yarn: YaRN rotary position embedding of DeepSeek-V3 / Cogito-V2 MLA (q_pe of every head,
// the shared k_pe), HF transformers 5.17 semantics (kernels_cpu/ops/rope_yarn.h has the formulas):
//   extra_i = theta^(-2i/R) = exp2(-(2i/R) log2 theta),  inter_i = extra_i / factor,
//   w_i = clamp((i - low) / (high - low), 0, 1),  inv_i = inter_i w_i + extra_i (1 - w_i),
//   a = float(pos) inv_i reduced to [-pi, pi] (Vulkan defines sin/cos precision only there),
//   c = m cos a, s = m sin a (m = the YaRN attention factor),
//   pair i read from (x[2i], x[2i+1]) when interleaved (HF rope_interleave), else (x[i], x[i+R/2]);
//   written to (y[i], y[i+R/2]) = (x1 c - x2 s, x1 s + x2 c): HF's output is half-split either way.
// The host computes the integer ramp ends (low, high after HF's singularity guard) and m once per
// model, as engines do: they arrive as push constants. The angle is formed in f32 per element.
// Shape contract: positions [tokens] u32 (< 2^31); x, y [tokens, heads, R] f32 row-major, y
// distinct from x (an interleaved pair is written to other channels than it is read from);
// push constants R = rotary_dim (even, > 0), interleaved (0 or 1), theta (> 1), factor (> 0),
// low, high, m; one workgroup per (head, token): dispatch (heads, tokens, 1); lanes stride over
// the R/2 pairs. No subgroup operations (any subgroup size).
// Workgroup: WG = min(64, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 64, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer P { uint positions[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint rotary_dim;
  uint interleaved;
  float theta;
  float factor;
  float ramp_low;
  float ramp_high;
  float attention_factor;
} pc;

const float kTwoPi = 6.28318530717958647692;
const float kInvTwoPi = 0.15915494309189533577;
const float kPi = 3.14159265358979323846;

void main() {
  const uint token = gl_WorkGroupID.y;
  const uint base = (token * gl_NumWorkGroups.x + gl_WorkGroupID.x) * pc.rotary_dim;
  const uint half_r = pc.rotary_dim / 2u;
  const float pos = float(positions[token]);
  const float log2_theta = log2(pc.theta);
  for (uint i = gl_LocalInvocationID.x; i < half_r; i += gl_WorkGroupSize.x) {
    const float extra = exp2(-(float(2u * i) / float(pc.rotary_dim)) * log2_theta);
    const float inter = extra / pc.factor;
    const float w = clamp((float(i) - pc.ramp_low) / (pc.ramp_high - pc.ramp_low), 0.0, 1.0);
    const float a = pos * (inter * w + extra * (1.0 - w));
    float r = a - roundEven(a * kInvTwoPi) * kTwoPi;
    if (r > kPi) r -= kTwoPi;
    else if (r < -kPi) r += kTwoPi;
    const float c = cos(r) * pc.attention_factor, s = sin(r) * pc.attention_factor;
    const uint i1 = pc.interleaved != 0u ? 2u * i : i;
    const uint i2 = pc.interleaved != 0u ? 2u * i + 1u : i + half_r;
    const float x1 = x[base + i1], x2 = x[base + i2];
    y[base + i] = x1 * c - x2 * s;
    y[base + i + half_r] = x1 * s + x2 * c;
  }
}
