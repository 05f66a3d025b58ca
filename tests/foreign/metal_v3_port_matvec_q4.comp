#version 450
// Idiom: a port of a Metal "v3" 4-bit dequant matvec (256 threads, 8 rows per threadgroup: one
// per SIMD group of 32 in Metal; here the subgroups take the 8 rows in turn, whatever their
// width), the whole x vector staged in threadgroup memory `x_shared[4096]`, sized for the 4096
// hidden size and zero-padded so the staging loop has a fixed trip count; MLX affine 4-bit,
// group 64, the FMA term acc += fma(q, s * x, b * x).
// DEFECT: in the Metal engine the host picks this kernel only for in_dim <= 4096; the port is
// called for every matvec and its manifest forgets that limit. For in_dim > 4096 (the A17B
// o_proj, 8192 columns) the dot product reads x_shared past its 4096 slots: the upper half of
// every row is multiplied by whatever lies beyond the array. Caught on those cases (per-element
// bound, or NaN); every case with cols <= 4096 passes.
#extension GL_KHR_shader_subgroup_arithmetic : require

#define X_SHARED 4096
#define ROWS_PER_TG 8

layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer W { uint W_q[]; };
layout(set = 0, binding = 1) readonly buffer S { uint W_s[]; };
layout(set = 0, binding = 2) readonly buffer B { uint W_b[]; };
layout(set = 0, binding = 3) readonly buffer X { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Y { float out_y[]; };

layout(push_constant) uniform Args { uint out_dim; uint in_dim; } args;

shared float x_shared[X_SHARED];

float unpack_bf16(uint word, uint i) {
    return uintBitsToFloat((i & 1u) != 0u ? (word & 0xffff0000u) : (word << 16));
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    for (uint i = tid; i < X_SHARED; i += 256u) {
        x_shared[i] = i < args.in_dim ? x[i] : 0.0;
    }
    barrier();

    const uint simd_lane = gl_SubgroupInvocationID;
    const uint packed_cols = args.in_dim / 8u;
    const uint num_groups = args.in_dim / 64u;
    for (uint r = gl_SubgroupID; r < ROWS_PER_TG; r += gl_NumSubgroups) {
        const uint row = gl_WorkGroupID.x * ROWS_PER_TG + r;
        if (row >= args.out_dim) {
            break;
        }
        float acc = 0.0;
        for (uint col = simd_lane; col < packed_cols; col += gl_SubgroupSize) {
            const uint g = row * num_groups + col / 8u;
            const float scale = unpack_bf16(W_s[g / 2u], g);
            const float bias = unpack_bf16(W_b[g / 2u], g);
            const uint packed = W_q[row * packed_cols + col];
            const uint x_base = col * 8u;
            for (uint n = 0u; n < 8u; ++n) {
                const float xn = x_shared[x_base + n];
                acc += fma(float((packed >> (4u * n)) & 0xfu), scale * xn, bias * xn);
            }
        }
        acc = subgroupAdd(acc);
        if (simd_lane == 0u) {
            out_y[row] = acc;
        }
    }
}
