#version 450
// Idiom: a hand-rolled C++ Vulkan engine's elementwise kernel with vec4 loads and stores: the
// same buffer bound twice (a vec4 view for the body, a float view for the n % 4 tail), one vec4
// per invocation, the last invocation also finishing the tail.
// Verdict: CORRECT at every subgroup size, any n.
layout(local_size_x_id = 0, local_size_x = 256) in;  // the host picks 256, or less where a workgroup cannot hold 256 lanes

layout(set = 0, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(set = 0, binding = 0) readonly buffer BufA1 { float a1[]; };
layout(set = 0, binding = 1) readonly buffer BufB4 { vec4 b4[]; };
layout(set = 0, binding = 1) readonly buffer BufB1 { float b1[]; };
layout(set = 0, binding = 2) writeonly buffer BufY4 { vec4 y4[]; };
layout(set = 0, binding = 2) writeonly buffer BufY1 { float y1[]; };

layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    const uint n4 = pc.n / 4u;
    if (i < n4) {
        y4[i] = a4[i] + b4[i];
    }
    if (i == n4) {
        for (uint j = 4u * n4; j < pc.n; ++j) {
            y1[j] = a1[j] + b1[j];
        }
    }
}
