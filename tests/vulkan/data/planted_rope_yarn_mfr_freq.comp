#version 450
// Planted bug (tests/vulkan/rope_yarn_compare_test.cpp): moeflux MFR's interpolation frequency (factor theta)^-e instead of HF's
// extra / factor (docs/ops/mla.md "YaRN RoPE" gives both forms; kernels_cpu/ops/rope_yarn.h).
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
    const float inter = exp2(-(float(2u * i) / float(pc.rotary_dim)) * log2(pc.factor * pc.theta));
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
