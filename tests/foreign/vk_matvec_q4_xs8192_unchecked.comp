#version 450
// Idiom: a hand-rolled C++ Vulkan engine's 4-bit matvec (MLX affine, group 64) for the models'
// projections: the input vector cached in `shared float xs[8192]` (32 KiB, "enough for every
// in_dim of the model": A17B's largest is the o_proj's 8192), then each subgroup takes two rows
// at a time, its lanes striding over the packed words, `acc += fma(q, s * x, b * x)`.
// DEFECT: nothing checks in_dim against the cache: the manifest declares bits and group size
// only. For cols > 8192 the staging loop writes past xs (undefined behaviour: on lavapipe the
// process's heap, which may kill the worker running the case) and the dot reads back whatever
// lies there. Caught on every case with cols > 8192 (per-element bound, NaN, or the crash);
// every case with cols <= 8192 passes, the A17B o_proj (exactly 8192) included.
#extension GL_KHR_shader_subgroup_arithmetic : require

#define X_CACHE 8192
#define ROWS_PER_SG 2

layout(local_size_x_id = 0, local_size_x = 128) in;

layout(set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(set = 0, binding = 1) readonly buffer Sc { uint sc_bf16[]; };
layout(set = 0, binding = 2) readonly buffer Bi { uint bi_bf16[]; };
layout(set = 0, binding = 3) readonly buffer X { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push { uint n_rows; uint n_cols; } pc;

shared float xs[X_CACHE];

float bf16(uint word, uint idx) {
    return uintBitsToFloat((idx & 1u) == 0u ? (word << 16) : (word & 0xFFFF0000u));
}

float row_dot(uint row, uint words) {
    const uint groups = pc.n_cols / 64u;
    float acc = 0.0;
    for (uint w = gl_SubgroupInvocationID; w < words; w += gl_SubgroupSize) {
        const uint g = row * groups + w / 8u;
        const float s = bf16(sc_bf16[g >> 1], g);
        const float b = bf16(bi_bf16[g >> 1], g);
        const uint packed = wq[row * words + w];
        for (uint n = 0u; n < 8u; ++n) {
            const float xv = xs[8u * w + n];
            acc += fma(float((packed >> (4u * n)) & 15u), s * xv, b * xv);
        }
    }
    return subgroupAdd(acc);
}

void main() {
    for (uint i = gl_LocalInvocationID.x; i < pc.n_cols; i += gl_WorkGroupSize.x) {
        xs[i] = x[i];
    }
    barrier();
    const uint words = pc.n_cols / 8u;
    const uint row0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * ROWS_PER_SG;
    for (uint r = 0u; r < ROWS_PER_SG; ++r) {
        if (row0 + r >= pc.n_rows) {
            break;
        }
        const float sum = row_dot(row0 + r, words);
        if (subgroupElect()) {
            y[row0 + r] = sum;
        }
    }
}
