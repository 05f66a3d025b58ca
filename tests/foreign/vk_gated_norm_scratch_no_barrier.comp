#version 450
// Idiom: a hand-rolled C++ Vulkan engine whose kernels keep shared memory for their big operands
// and put cross-subgroup partial sums in a global scratch buffer instead (`reduce_scratch`, 32
// floats per workgroup, allocated once by the host). Gated RMSNorm per value head, one workgroup
// per (token, head), 128 lanes striding over head_dim:
//   y = o * rsqrt(mean(o^2) + eps) * w * silu(z)
// Each subgroup writes its partial to scratch; then every lane adds them up.
// DEFECT: no barrier between writing the partials and reading them back: the first subgroups
// read slots the others have not written yet. The harness fills scratch with its NaN poison
// before every step, so those rows come out NaN (the poison's payload survives the arithmetic:
// the verdict sees the poison bits and reports the elements as never written). Caught wherever a
// workgroup (128 lanes) holds more than one subgroup; on a GPU, a race.
// (With memoryBarrierBuffer() alone, the other common form of this bug, lavapipe passes: its
// memory barrier also synchronises the workgroup, so the race cannot show there.)
#extension GL_KHR_shader_subgroup_arithmetic : require

#define WG 128
#define MAX_SUBGROUPS 32

layout(local_size_x = WG) in;

layout(set = 0, binding = 0) readonly buffer O { float o_in[]; };
layout(set = 0, binding = 1) readonly buffer Z { float z_in[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w_bf16[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y_out[]; };
layout(set = 0, binding = 4) buffer Scratch { float reduce_scratch[]; };

layout(push_constant) uniform Push { uint head_dim; float eps; } pc;

float norm_weight(uint i) {
    const uint word = w_bf16[i >> 1];
    return uintBitsToFloat((i & 1u) != 0u ? (word & 0xffff0000u) : (word << 16));
}

void main() {
    const uint row = gl_WorkGroupID.x;
    const uint base = row * pc.head_dim;
    const uint slot = row * MAX_SUBGROUPS;

    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += WG) {
        ss += o_in[base + i] * o_in[base + i];
    }
    ss = subgroupAdd(ss);
    if (subgroupElect()) {
        reduce_scratch[slot + gl_SubgroupID] = ss;
    }
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        total += reduce_scratch[slot + s];
    }
    const float inv = inversesqrt(total / float(pc.head_dim) + pc.eps);
    for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += WG) {
        const float z = z_in[base + i];
        y_out[base + i] = o_in[base + i] * inv * norm_weight(i) * (z / (1.0 + exp(-z)));
    }
}
