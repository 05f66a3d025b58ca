#version 450
// Binding 1 is a uniform buffer, which the runner cannot bind (storage buffers only).
layout(local_size_x = 64) in;
layout(binding = 0) buffer Y { float y[]; };
layout(binding = 1) uniform U { float scale; } u;
void main() { y[gl_GlobalInvocationID.x] *= u.scale; }
