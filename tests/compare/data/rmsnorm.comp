#version 450
// A small but real RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, one workgroup per row: the
// reflection fixture (3 storage buffers, a 12-byte push-constant block from an include, the
// workgroup size from spec constant 0, a second spec constant 1).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint UNROLL = 1;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
#include "rmsnorm_common.glsl"

shared float partial[128];

void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  float s = 0.0;
  for (uint i = t; i < pc.dim; i += n * UNROLL) s += x[row * pc.dim + i] * x[row * pc.dim + i];
  partial[t] = s;
  barrier();
  if (t == 0) {
    float total = 0.0;
    for (uint i = 0; i < n; ++i) total += partial[i];
    partial[0] = inversesqrt(total / float(pc.dim) + pc.eps);
  }
  barrier();
  for (uint i = t; i < pc.dim; i += n) y[row * pc.dim + i] = x[row * pc.dim + i] * partial[0] * w[i];
}
