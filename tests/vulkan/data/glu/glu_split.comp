#version 450
// A one-tensor GLU as some engines hold it: row r of x [rows, 2n] is [gate | up] (swapped = 0) or
// [up | gate] (swapped = 1); y [rows, n]. The manifest places the op's gate and up into x with
// views. Defines plant bugs of the op's kind:
//   BUG_ERF_FOR_TANH  the tanh GELU computed with erf (act 1 gets act 2's values)
//   BUG_NAIVE_TANH    tanh(v) as (e^v - e^-v) / (e^v + e^-v): inf / inf = NaN once e^v overflows
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; uint act; uint swapped; } pc;

float erf_as(float v) {
  const float t = 1.0 / (1.0 + 0.3275911 * abs(v));
  const float p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
  const float r = 1.0 - p * exp(-v * v);
  return v < 0.0 ? -r : r;
}

void main() {
  const uint i = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  if (i >= pc.n) return;
  const uint base = row * 2u * pc.n;
  const float g = x[base + (pc.swapped != 0u ? pc.n : 0u) + i];
  const float u = x[base + (pc.swapped != 0u ? 0u : pc.n) + i];
  float a;
  if (pc.act == 0u) {
    a = g / (1.0 + exp(-g));
  } else if (pc.act == 1u) {
#if defined(BUG_ERF_FOR_TANH)
    a = 0.5 * g * (1.0 + erf_as(g * 0.7071067812));
#else
    const float v = 0.7978845608 * g * (1.0 + 0.044715 * g * g);
#if defined(BUG_NAIVE_TANH)
    a = 0.5 * g * (1.0 + (exp(v) - exp(-v)) / (exp(v) + exp(-v)));
#else
    a = 0.5 * g * (2.0 - 2.0 / (exp(2.0 * v) + 1.0));
#endif
#endif
  } else {
    a = 0.5 * g * (1.0 + erf_as(g * 0.7071067812));
  }
  y[row * pc.n + i] = a * u;
}
