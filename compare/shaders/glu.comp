#version 450
// glu: y = act(gate) * up elementwise. Shape contract: gate, up, y [rows, n] f32.
// act 0: SiLU, gate / (1 + exp(-gate)) * up.
// act 1: GELU, tanh approximation, 0.5 g (2 - 2 / (exp(2 v) + 1)) * up with
//        v = sqrt(2/pi) g (1 + 0.044715 g g): 1 + tanh(v) from one exp, which saturates to 2 or 0
//        where exp overflows or underflows (no inf / inf).
// act 2: GELU, erf, 0.5 g (1 + erf(g / sqrt 2)) * up; GLSL has no erf: 1 - P(t) t exp(-x^2),
//        t = 1 / (1 + p |x|) with the sign of x (Abramowitz & Stegun 7.1.26, within 1.5e-7).
// One invocation per element; dispatch (ceil_div(n, WG), rows, 1). No subgroup operations.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer G { float gate[]; };
layout(std430, set = 0, binding = 1) readonly buffer U { float up[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; uint act; } pc;

float erf_as(float x) {
  const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  const float p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
  const float r = 1.0 - p * exp(-x * x);
  return x < 0.0 ? -r : r;
}

void main() {
  const uint i = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  if (i >= pc.n) return;
  const uint at = row * pc.n + i;
  const float g = gate[at];
  float a;
  if (pc.act == 0u) {
    a = g / (1.0 + exp(-g));
  } else if (pc.act == 1u) {
    const float v = 0.7978845608 * g * (1.0 + 0.044715 * g * g);
    a = 0.5 * g * (2.0 - 2.0 / (exp(2.0 * v) + 1.0));
  } else {
    a = 0.5 * g * (1.0 + erf_as(g * 0.7071067812));
  }
  y[at] = a * up[at];
}
