// moe_combine with the K = 8 routed expert outputs as eight bindings (one [tokens][dim] buffer
// per slot) and the routing weights, the shared-expert gate and dim packed into one params
// buffer: w [tokens][8] at 0, gamma [tokens] at tokens*8, dim (u32) at tokens*9.
// Shape contract: h, sh, out [tokens][dim]; one invocation per element, gated only.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer H { float h[]; };
layout(set = 0, binding = 1) readonly buffer E0 { float e0[]; };
layout(set = 0, binding = 2) readonly buffer E1 { float e1[]; };
layout(set = 0, binding = 3) readonly buffer E2 { float e2[]; };
layout(set = 0, binding = 4) readonly buffer E3 { float e3[]; };
layout(set = 0, binding = 5) readonly buffer E4 { float e4[]; };
layout(set = 0, binding = 6) readonly buffer E5 { float e5[]; };
layout(set = 0, binding = 7) readonly buffer E6 { float e6[]; };
layout(set = 0, binding = 8) readonly buffer E7 { float e7[]; };
layout(set = 0, binding = 9) readonly buffer SH { float sh[]; };
layout(set = 0, binding = 10) readonly buffer PF { float pf[]; };
layout(set = 0, binding = 10) readonly buffer PU { uint pu[]; };
layout(set = 0, binding = 11) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { uint tokens; } pc;
void main() {
  uint dim = pu[pc.tokens * 9u];
  uint t = gl_GlobalInvocationID.y, i = gl_GlobalInvocationID.x;
  if (i >= dim || t >= pc.tokens) return;
  uint j = t * dim + i;
  float m = 0.0;
  m = fma(pf[t * 8u + 0u], e0[j], m);
  m = fma(pf[t * 8u + 1u], e1[j], m);
  m = fma(pf[t * 8u + 2u], e2[j], m);
  m = fma(pf[t * 8u + 3u], e3[j], m);
  m = fma(pf[t * 8u + 4u], e4[j], m);
  m = fma(pf[t * 8u + 5u], e5[j], m);
  m = fma(pf[t * 8u + 6u], e6[j], m);
  m = fma(pf[t * 8u + 7u], e7[j], m);
  float g = 1.0 / (1.0 + exp(-pf[pc.tokens * 8u + t]));
  o[j] = (h[j] + m) + sh[j] * g;
}
