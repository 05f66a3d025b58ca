#version 450
// Idiom: a hand-rolled C++ Vulkan engine's elementwise kernel with vec4 loads and stores, one
// vec4 per invocation (written for hidden sizes 2048 / 4096, which are multiples of 4).
// DEFECT: the n % 4 tail is forgotten: for n not a multiple of 4 the last 1-3 outputs are never
// written (caught as unwritten: they keep the poison pattern). Correct when n % 4 == 0.
layout(local_size_x_id = 0, local_size_x = 256) in;  // the host picks 256, or less where a workgroup cannot hold 256 lanes

layout(set = 0, binding = 0) readonly buffer BufA { vec4 a[]; };
layout(set = 0, binding = 1) readonly buffer BufB { vec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer BufY { vec4 y[]; };

layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n / 4u) {
        return;
    }
    y[i] = a[i] + b[i];
}
