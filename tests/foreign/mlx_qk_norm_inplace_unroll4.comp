#version 450
// Idiom: a port of an MLX-style fused "rms_norm then scale" kernel used in place on the
// linear-attention q and k buffers (each normalised in its own buffer), with the loops unrolled
// by hand four channels at a time (N_READS = 4), as MLX's Metal rms_norm reads.
//   q *= rsqrt(mean(q^2) + eps) / head_dim,  k *= rsqrt(mean(k^2) + eps) / sqrt(head_dim)
// DEFECT: the unrolled loops stop at the last whole group of four and the head_dim % 4 tail is
// forgotten, both in the sum of squares and in the scaling. head_dim is 128 in every model, so
// it never showed; for head_dim % 4 != 0 the tail keeps its input value (the buffer is updated
// in place, so it is not "unwritten") and the rest is scaled by a norm short of the tail's
// squares: caught by the per-element bound. Correct when head_dim % 4 == 0.
#extension GL_KHR_shader_subgroup_arithmetic : require

#define N_READS 4

layout(local_size_x = 32) in;

layout(set = 0, binding = 0) buffer Q { float q[]; };
layout(set = 0, binding = 1) buffer K { float k[]; };

layout(push_constant) uniform Params { uint head_dim; float eps; } params;

shared float local_sums[32];

float row_sum_of_squares(uint base, bool is_k) {
    float acc = 0.0;
    for (uint i = gl_LocalInvocationID.x * N_READS; i + N_READS <= params.head_dim; i += gl_WorkGroupSize.x * N_READS) {
        for (uint r = 0u; r < N_READS; ++r) {
            const float v = is_k ? k[base + i + r] : q[base + i + r];
            acc += v * v;
        }
    }
    return acc;
}

void main() {
    const uint row = gl_WorkGroupID.x;  // token * heads + head
    const bool is_k = gl_WorkGroupID.y == 1u;
    const uint base = row * params.head_dim;

    const float acc = subgroupAdd(row_sum_of_squares(base, is_k));
    if (subgroupElect()) {
        local_sums[gl_SubgroupID] = acc;
    }
    barrier();
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        total += local_sums[s];
    }
    barrier();
    const float inv = inversesqrt(total / float(params.head_dim) + params.eps);
    const float inv_scale = inversesqrt(float(params.head_dim));
    const float scale = (is_k ? inv_scale : inv_scale * inv_scale) * inv;

    for (uint i = gl_LocalInvocationID.x * N_READS; i + N_READS <= params.head_dim; i += gl_WorkGroupSize.x * N_READS) {
        for (uint r = 0u; r < N_READS; ++r) {
            if (is_k) {
                k[base + i + r] = k[base + i + r] * scale;
            } else {
                q[base + i + r] = q[base + i + r] * scale;
            }
        }
    }
}
