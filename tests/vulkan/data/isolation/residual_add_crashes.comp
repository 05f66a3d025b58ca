// residual_add that writes its shared array far out of bounds when n == CRASH_N: on a CPU
// driver (lavapipe) shared memory lives in the harness's process, so this kills the process that
// runs it (SIGSEGV, or an abort from the corrupted heap). Correct for every other n.
// Shape contract: a, b, y [n] f32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
shared float scratch[64];
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (pc.n == CRASH_N) scratch[gl_LocalInvocationID.x * 4000000u + 100000000u] = 1.0;
  barrier();
  if (i < pc.n) y[i] = a[i] + b[i];
}
