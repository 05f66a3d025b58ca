// residual_add that spins for a very long time when n == SLOW_N (65535 loop iterations in every
// invocation of 65535 x 64 workgroups: minutes on any device), to exercise the dispatch timeout
// and the worker restart after it. Correct for every other n.
// Shape contract: a, b, y [n] f32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  float acc = 0.0;
  if (pc.n == SLOW_N)
    for (uint k = 0u; k < 65000u; ++k) acc = fma(acc, 0.999, a[(k + i) % pc.n]);
  if (i < pc.n) y[i] = a[i] + b[i] + (acc == 12345.678 ? 1.0 : 0.0);
}
