#version 450
// moe_combine: out = h_mid + sum_k w_k e_k + sigmoid(gamma) sh  (gated; ungated: + sh).
// Shape contract: h_mid [tokens, dim] f32, e [tokens, k, dim] f32 (slot k of token t at
// (t*k + k)*dim: the K routed expert rows of a token in one buffer), w [tokens, k] f32 routing
// weights, sh [tokens, dim] f32 shared expert output, gamma [tokens] f32 shared_expert_gate
// logit (read only when gated), out [tokens, dim] f32. Any k (0 allowed: no routed experts).
// Order as CPU-C: moe = 0, moe = fma(w_k, e_k, moe) for k ascending, shg = sh * sigmoid(gamma)
// with sigmoid = 1 / (1 + exp(-gamma)), out = (h_mid + moe) + shg.
// One invocation per element; dispatch (ceil_div(dim, WG), tokens, 1). No subgroup
// operations: any subgroup size.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer H { float h_mid[]; };
layout(std430, set = 0, binding = 1) readonly buffer E { float e[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, set = 0, binding = 3) readonly buffer Sh { float sh[]; };
layout(std430, set = 0, binding = 4) readonly buffer G { float gamma[]; };
layout(std430, set = 0, binding = 5) writeonly buffer O { float outp[]; };
layout(push_constant) uniform Push { uint dim; uint k; uint gated; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (i >= pc.dim) return;
  float moe = 0.0;
  for (uint k = 0u; k < pc.k; ++k) moe = fma(w[t * pc.k + k], e[(t * pc.k + k) * pc.dim + i], moe);
  const float s = sh[t * pc.dim + i];
  const float shg = pc.gated != 0u ? s * (1.0 / (1.0 + exp(-gamma[t]))) : s;
  outp[t * pc.dim + i] = (h_mid[t * pc.dim + i] + moe) + shg;
}
