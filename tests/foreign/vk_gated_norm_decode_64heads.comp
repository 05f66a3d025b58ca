#version 450
// Idiom: a hand-rolled C++ Vulkan engine's decode-only (one token) kernel with the model's
// dimensions compiled in: NUM_V_HEADS 64 and HEAD_V_DIM 128 (Qwen3.5-397B-A17B's linear
// attention), the host dispatching NUM_V_HEADS workgroups, one lane per channel; gated RMSNorm
// y = o * rsqrt(mean(o^2) + eps) * silu(z) * w per value head.
// DEFECT: hard-wired to 64 heads. The manifest declares tokens == 1 and head_dim == 128 but not
// heads == 64: at the 32-head A3B shape, workgroups 32..63 read past o and z and write past
// the end of y (caught by the guard region after y). Correct at 64 heads (A17B decode), at
// every subgroup size (a lane per channel, the partials in shared memory sized for subgroups
// of one lane).
#extension GL_KHR_shader_subgroup_arithmetic : require

#define NUM_V_HEADS 64
#define HEAD_V_DIM 128

layout(local_size_x = HEAD_V_DIM) in;

layout(set = 0, binding = 0) readonly buffer AttnOut { float attn_out[]; };  // [NUM_V_HEADS * HEAD_V_DIM]
layout(set = 0, binding = 1) readonly buffer Gate { float z_gate[]; };       // [NUM_V_HEADS * HEAD_V_DIM]
layout(set = 0, binding = 2) readonly buffer NormW { uint norm_w_bf16[]; };  // [HEAD_V_DIM] bf16 pairs
layout(set = 0, binding = 3) writeonly buffer Out { float gated_out[]; };    // [NUM_V_HEADS * HEAD_V_DIM]

layout(push_constant) uniform Push { float rms_eps; } pc;

shared float sg_sums[HEAD_V_DIM];

void main() {
    const uint head = gl_WorkGroupID.x;
    const uint c = gl_LocalInvocationID.x;
    const uint idx = head * HEAD_V_DIM + c;

    const float o = attn_out[idx];
    const float ss = subgroupAdd(o * o);
    if (subgroupElect()) {
        sg_sums[gl_SubgroupID] = ss;
    }
    barrier();
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        total += sg_sums[s];
    }
    const float inv_rms = inversesqrt(total / float(HEAD_V_DIM) + pc.rms_eps);

    const float z = z_gate[idx];
    const float silu_z = z / (1.0 + exp(-z));
    const uint wword = norm_w_bf16[c >> 1];
    const float w = uintBitsToFloat((c & 1u) == 0u ? (wword << 16) : (wword & 0xFFFF0000u));
    gated_out[idx] = o * inv_rms * silu_z * w;
}
