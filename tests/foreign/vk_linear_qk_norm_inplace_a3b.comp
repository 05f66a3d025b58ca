#version 450
// Idiom: a hand-rolled C++ Vulkan engine's linear-attention q/k normalisation for
// Qwen3.6-35B-A3B, done in place in the conv1d output: one buffer per token row
// [q (16 x 128) | k (16 x 128) | v (32 x 128)] (CONV_DIM floats per token), q and k scaled in
// their own places, v untouched. Dimensions compiled in; one workgroup per (token, head), a lane
// per channel, subgroup sums combined through `shared float partial[HEAD_K_DIM]` (a slot per
// subgroup even for subgroups of one lane).
//   q *= rsqrt(mean(q^2) + eps) / HEAD_K_DIM,  k *= rsqrt(mean(k^2) + eps) / sqrt(HEAD_K_DIM)
// Verdict: CORRECT at every subgroup size for heads == 16, head_dim == 128 (declared limits).
#extension GL_KHR_shader_subgroup_arithmetic : require

#define NUM_K_HEADS 16
#define HEAD_K_DIM 128
#define NUM_V_HEADS 32
#define HEAD_V_DIM 128
#define KEY_DIM (NUM_K_HEADS * HEAD_K_DIM)
#define CONV_DIM (2 * KEY_DIM + NUM_V_HEADS * HEAD_V_DIM)

layout(local_size_x = HEAD_K_DIM) in;

layout(set = 0, binding = 0) buffer ConvOut { float conv_out[]; };  // [n_tokens][CONV_DIM]

layout(push_constant) uniform Push { float eps; } pc;

shared float partial[HEAD_K_DIM];

void main() {
    const uint head = gl_WorkGroupID.x;   // 0 .. NUM_K_HEADS - 1
    const uint is_k = gl_WorkGroupID.y;   // 0: q, 1: k
    const uint token = gl_WorkGroupID.z;
    const uint c = gl_LocalInvocationID.x;
    const uint idx = token * CONV_DIM + is_k * KEY_DIM + head * HEAD_K_DIM + c;

    const float v = conv_out[idx];
    const float ss = subgroupAdd(v * v);
    if (subgroupElect()) {
        partial[gl_SubgroupID] = ss;
    }
    barrier();
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        total += partial[s];
    }
    const float inv = inversesqrt(total / float(HEAD_K_DIM) + pc.eps);
    const float inv_scale = inversesqrt(float(HEAD_K_DIM));
    const float scale = is_k != 0u ? inv_scale : inv_scale * inv_scale;
    conv_out[idx] = v * inv * scale;
}
