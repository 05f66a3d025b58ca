#version 450
// The output buffer lives in descriptor set 1; the runner binds set 0 only.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) buffer Y { float y[]; };
void main() { y[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x]; }
