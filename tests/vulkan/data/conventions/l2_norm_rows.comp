#version 450
// One tensor's per-row L2 norm as ggml writes it (docs/ops/norms.md "q/k norm conventions"):
// y = x * (1 / max(sqrt(sum x^2), eps)), no scale. qk_norm runs it twice, on q then on k (a
// sequence). One invocation per row of `dim` elements; rows = tokens * heads.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } pc;

void main() {
  const uint r = gl_GlobalInvocationID.x;
  if (r >= pc.rows) return;
  float ss = 0.0;
  for (uint i = 0u; i < pc.dim; ++i) ss += x[r * pc.dim + i] * x[r * pc.dim + i];
  const float inv = 1.0 / max(sqrt(ss), pc.eps);
  for (uint i = 0u; i < pc.dim; ++i) y[r * pc.dim + i] = x[r * pc.dim + i] * inv;
}
