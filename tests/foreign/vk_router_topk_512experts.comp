#version 450
// Idiom: a hand-rolled C++ Vulkan engine's MoE router written for Qwen3.5-397B-A17B, with the
// expert count compiled in (NUM_EXPERTS 512, 4 per lane of a 128-lane workgroup): one workgroup
// per token; softmax over the experts (max, exp, 1 / sum); then K rounds of a workgroup argmax
// (largest p, ties to the lowest expert), each winner taken out of the race; slots in the order
// found (descending weight, ties by ascending expert); renormalised over the K winners when asked.
// A token with a NaN or +inf logit, or only -inf logits, gets idx -1 and NaN weights.
// DEFECT: the manifest declares k <= 16 but not experts == 512. At any other expert count a
// token's row is read as 512 logits: the rest of the next tokens' rows (and past the buffer's
// end for the last token) enter the softmax and the race, and experts that do not exist (or
// another token's) are chosen. Caught by the index-set criterion on every case with
// experts != 512 (A3B's 256, the remainders); the A17B cases (512) pass.
#extension GL_KHR_shader_subgroup_arithmetic : require

#define NUM_EXPERTS 512
#define WG 128
#define PER_LANE (NUM_EXPERTS / WG)
#define MAX_TOP_K 16

layout(local_size_x = WG) in;

layout(set = 0, binding = 0) readonly buffer Logits { float logits[]; };
layout(set = 0, binding = 1) writeonly buffer TopkIdx { int topk_idx[]; };
layout(set = 0, binding = 2) writeonly buffer TopkW { float topk_w[]; };

layout(push_constant) uniform Push { uint top_k; uint renormalize; } pc;

shared float red_v[WG];
shared uint red_i[WG];
shared float chosen_w[MAX_TOP_K];

// Workgroup max of v; ties (and, for the argmax, equal values) to the smallest i. Every lane
// gets the winner.
void workgroup_argmax(inout float v, inout uint i) {
    const float sv = subgroupMax(v);
    const uint si = subgroupMin(v == sv ? i : 0xffffffffu);
    barrier();
    if (subgroupElect()) {
        red_v[gl_SubgroupID] = sv;
        red_i[gl_SubgroupID] = si;
    }
    barrier();
    v = red_v[0];
    i = red_i[0];
    for (uint s = 1u; s < gl_NumSubgroups; ++s) {
        if (red_v[s] > v || (red_v[s] == v && red_i[s] < i)) {
            v = red_v[s];
            i = red_i[s];
        }
    }
}

float workgroup_sum(float v) {
    const float s = subgroupAdd(v);
    barrier();
    if (subgroupElect()) {
        red_v[gl_SubgroupID] = s;
    }
    barrier();
    float total = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) {
        total += red_v[g];
    }
    return total;
}

void main() {
    const uint token = gl_WorkGroupID.x;
    const uint lane = gl_LocalInvocationID.x;
    float x[PER_LANE];
    float m = uintBitsToFloat(0xff800000u);  // -inf
    uint bad = 0u;
    for (uint j = 0u; j < PER_LANE; ++j) {
        x[j] = logits[token * NUM_EXPERTS + j * WG + lane];
        const uint bits = floatBitsToUint(x[j]);
        bad |= uint((bits & 0x7fffffffu) > 0x7f800000u || bits == 0x7f800000u);
        m = max(m, x[j]);
    }
    uint unused = 0u;
    float bad_f = float(bad);
    workgroup_argmax(bad_f, unused);
    workgroup_argmax(m, unused);
    const bool undefined = bad_f != 0.0 || floatBitsToUint(m) == 0xff800000u;

    float p[PER_LANE];
    float local_sum = 0.0;
    for (uint j = 0u; j < PER_LANE; ++j) {
        p[j] = exp(x[j] - m);
        local_sum += p[j];
    }
    const float inv_sum = 1.0 / workgroup_sum(local_sum);
    for (uint j = 0u; j < PER_LANE; ++j) {
        p[j] *= inv_sum;
    }

    float chosen_sum = 0.0;
    for (uint k = 0u; k < pc.top_k; ++k) {
        float best = -1.0;
        uint best_e = 0xffffffffu;
        for (uint j = 0u; j < PER_LANE; ++j) {
            if (p[j] > best) {
                best = p[j];
                best_e = j * WG + lane;
            }
        }
        workgroup_argmax(best, best_e);
        if (best_e != 0xffffffffu && best_e % WG == lane) {
            p[best_e / WG] = -1.0;  // out of the race
        }
        chosen_sum += best;
        if (lane == 0u) {
            topk_idx[token * pc.top_k + k] = undefined ? -1 : int(best_e);
            chosen_w[k] = best;
        }
    }
    barrier();
    if (lane < pc.top_k) {
        const float w = pc.renormalize != 0u ? chosen_w[lane] * (1.0 / chosen_sum) : chosen_w[lane];
        topk_w[token * pc.top_k + lane] = undefined ? uintBitsToFloat(0x7fc00000u) : w;
    }
}
