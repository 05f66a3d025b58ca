#version 450
// Two views of binding 0 (floats and raw words), as engines alias a buffer by type: one
// manifest binding covers both.
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer XF { float xf[]; };
layout(binding = 0) readonly buffer XU { uint xu[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  y[i] = xf[i] + float(xu[i] & 1u);
}
