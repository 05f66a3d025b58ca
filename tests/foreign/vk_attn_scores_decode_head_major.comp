#version 450
// Idiom: a hand-rolled C++ Vulkan engine's decode attention (one new token, the usual case
// while generating), scores stage: the key cache is the engine's head-major allocation for
// MAX_SEQ (8192) positions, cache[kv_head][pos][head_dim]; one workgroup per (block of 32 positions,
// query head); each subgroup takes positions in turn, its lanes walk head_dim and subgroupAdd the
// partial dots. GQA: query head h reads kv head h / (n_heads / n_kv_heads).
//   scores[h][p] = dot(q[h], K[kv(h)][p]) * scale,  p < n_kv = pos + 1 (the new token included)
// Verdict: CORRECT at every subgroup size for one token (tokens == 1) and n_kv <= MAX_SEQ (both
// declared in the manifest's limits).
#extension GL_KHR_shader_subgroup_arithmetic : require

#define MAX_SEQ 8192
#define POS_PER_WG 32

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Query { float q[]; };        // [n_heads][head_dim]
layout(set = 0, binding = 1) readonly buffer KCache { float k_cache[]; }; // [n_kv_heads][MAX_SEQ][head_dim]
layout(set = 0, binding = 2) writeonly buffer Scores { float scores[]; }; // [n_heads][n_kv]

layout(push_constant) uniform Push {
    uint n_heads;
    uint n_kv_heads;
    uint head_dim;
    uint n_kv;
    float scale;
} pc;

void main() {
    const uint h = gl_WorkGroupID.y;
    const uint kvh = h / (pc.n_heads / pc.n_kv_heads);
    const uint p0 = gl_WorkGroupID.x * POS_PER_WG;
    const uint q_base = h * pc.head_dim;
    for (uint j = gl_SubgroupID; j < POS_PER_WG; j += gl_NumSubgroups) {
        const uint p = p0 + j;
        if (p >= pc.n_kv) {
            break;
        }
        const uint k_base = (kvh * MAX_SEQ + p) * pc.head_dim;
        float dot = 0.0;
        for (uint d = gl_SubgroupInvocationID; d < pc.head_dim; d += gl_SubgroupSize) {
            dot = fma(q[q_base + d], k_cache[k_base + d], dot);
        }
        dot = subgroupAdd(dot);
        if (subgroupElect()) {
            scores[h * pc.n_kv + p] = dot * pc.scale;
        }
    }
}
