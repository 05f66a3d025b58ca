// residual_add with its size in a uniform buffer (the manifest packs the value n into binding 3,
// "descriptor": "uniform"), as engines that keep their parameters in a UBO do.
// Shape contract: a, b, y [n] f32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 3) uniform Params { uint n; uint pad0; uint pad1; uint pad2; } params;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < params.n) y[i] = a[i] + b[i];
}
