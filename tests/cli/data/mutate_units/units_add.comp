#version 450
// residual_add in two forms picked by a specialization constant, the way engines build variants
// of one file: MODE 0 one element per invocation, MODE 1 four (each guarded). Shape contract:
// a, b, y [n] f32; dispatch ceil_div(n, 64) (MODE 0) or ceil_div(n, 256) (MODE 1) workgroups of 64.
#include "units_terms.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint g = gl_GlobalInvocationID.x;
  if (MODE == 1u) {
    for (uint j = 0u; j < 4u; ++j) {
      const uint i = g * 4u + j;
      if (i < pc.n) y[i] = add_terms(a[i], b[i]);
    }
  } else if (g < pc.n) {
    y[g] = add_terms(a[g], b[g]);
  }
}
