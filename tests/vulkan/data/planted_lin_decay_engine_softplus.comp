#version 450
// PLANTED BUG (tests/vulkan/lin_compare_test.cpp): NOT a bug: the engines' softplus log(1 + exp(u)) (docs/ops/README.md "Scalar helpers"), which must pass (no false alarm).
// decay_beta: per (token, v-head) decay and write strength of the gated delta rule:
//   g = exp(-exp(A_log[h]) * softplus(a + dt_bias[h])),  beta = 1 / (1 + exp(-b)).
// Shape contract: a, b, g, beta [tokens, heads] f32; A_log [heads] f32; dt_bias [heads] bf16
// (two per uint, element 0 in the low half). One invocation per element, dispatch
// (ceil_div(heads, 64), tokens, 1). softplus in the overflow-free form
// max(u, 0) + log(1 + exp(-|u|)): the engines' log(1 + exp(u)) is inf past u = 88.7 (g = 0
// however small A is) and loses e^u below u = -16.6; this form is accurate on both sides.
// No subgroup operations: any subgroup size.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) readonly buffer AL { float A_log[]; };
layout(std430, set = 0, binding = 3) readonly buffer DT { uint dt_bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer G { float g[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Beta { float beta[]; };
layout(push_constant) uniform Push { uint heads; } pc;

float bias(uint h) {
  const uint word = dt_bias[h >> 1];
  return uintBitsToFloat(((h & 1u) == 0u ? word << 16 : word & 0xFFFF0000u));
}

void main() {
  const uint h = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (h >= pc.heads) return;
  const uint i = t * pc.heads + h;
  const float u = a[i] + bias(h);
  const float sp = log(1.0 + exp(u));
  g[i] = exp(-(exp(A_log[h]) * sp));
  beta[i] = 1.0 / (1.0 + exp(-b[i]));
}
