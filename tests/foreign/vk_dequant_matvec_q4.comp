#version 450
// Idiom: a hand-rolled C++ Vulkan engine's port of MLX's 4-bit affine matvec (value = q * scale
// + bias, group 64, 8 codes per word, low bits first): the whole input vector staged once in
// `shared float xs[8192]` (32 KiB: the engine asserts in_dim <= 8192 on the host), vec4 loads of
// x and uvec4 loads of the packed weights (32 codes per load), one row per subgroup, lanes
// striding over the row, and MLX's reassociated term acc += fma(q, s * x, b * x).
// Verdict: CORRECT at every subgroup size, for cols <= 8192 (declared in the manifest's limits).
#extension GL_KHR_shader_subgroup_arithmetic : require

#define BITS 4
#define GROUP_SIZE 64
#define X_CACHE 8192

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Weights { uvec4 w_packed[]; };
layout(set = 0, binding = 1) readonly buffer Scales { uint scales_bf16[]; };
layout(set = 0, binding = 2) readonly buffer Biases { uint biases_bf16[]; };
layout(set = 0, binding = 3) readonly buffer Input { vec4 x_in[]; };
layout(set = 0, binding = 4) writeonly buffer Output { float y_out[]; };

layout(push_constant) uniform PushConstants {
    uint out_dim;
    uint in_dim;
} pc;

shared float xs[X_CACHE];

float bf16_at(uint packed, uint idx) {
    return uintBitsToFloat((idx & 1u) == 0u ? (packed << 16) : (packed & 0xFFFF0000u));
}

void main() {
    for (uint i = gl_LocalInvocationID.x; i < pc.in_dim / 4u; i += WG_SIZE) {
        const vec4 v = x_in[i];
        xs[4u * i + 0u] = v.x;
        xs[4u * i + 1u] = v.y;
        xs[4u * i + 2u] = v.z;
        xs[4u * i + 3u] = v.w;
    }
    barrier();

    const uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    if (row >= pc.out_dim) {
        return;
    }
    const uint vec_per_row = pc.in_dim / 32u;  // uvec4 = 4 words = 32 codes
    const uint groups_per_row = pc.in_dim / GROUP_SIZE;

    float acc = 0.0;
    for (uint c = gl_SubgroupInvocationID; c < vec_per_row; c += gl_SubgroupSize) {
        const uvec4 packed = w_packed[row * vec_per_row + c];
        const uint col0 = c * 32u;
        const uint g = row * groups_per_row + col0 / GROUP_SIZE;
        const float s = bf16_at(scales_bf16[g >> 1], g);
        const float b = bf16_at(biases_bf16[g >> 1], g);
        for (uint k = 0u; k < 4u; ++k) {
            const uint word = packed[k];
            for (uint n = 0u; n < 8u; ++n) {
                const float xv = xs[col0 + 8u * k + n];
                const float q = float((word >> (BITS * n)) & 0xFu);
                acc += fma(q, s * xv, b * xv);
            }
        }
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) {
        y_out[row] = acc;
    }
}
