#version 450
// Idiom: a hand-rolled C++ Vulkan streaming-MoE engine's decode (one token) MoE combine: each of
// the K = 8 routed experts streams its output into its own buffer (bindings 1..8, one per slot),
// the router's 8 weights, the shared-expert gate logit and the hidden size travel together in one
// small `params` buffer, and the residual stream is updated in place:
//   hidden += sum_k w_k * expert_k + sigmoid(gate) * shared.
// Verdict: CORRECT at every subgroup size for one token, K = 8, gated (declared in the limits).
#define NUM_EXPERTS_PER_TOK 8

layout(local_size_x_id = 0, local_size_x = 256) in;  // the host picks 256, or less where a workgroup cannot hold 256 lanes

layout(set = 0, binding = 0) buffer Hidden { float hidden[]; };
layout(set = 0, binding = 1) readonly buffer Expert0 { float expert0[]; };
layout(set = 0, binding = 2) readonly buffer Expert1 { float expert1[]; };
layout(set = 0, binding = 3) readonly buffer Expert2 { float expert2[]; };
layout(set = 0, binding = 4) readonly buffer Expert3 { float expert3[]; };
layout(set = 0, binding = 5) readonly buffer Expert4 { float expert4[]; };
layout(set = 0, binding = 6) readonly buffer Expert5 { float expert5[]; };
layout(set = 0, binding = 7) readonly buffer Expert6 { float expert6[]; };
layout(set = 0, binding = 8) readonly buffer Expert7 { float expert7[]; };
layout(set = 0, binding = 9) readonly buffer SharedExpert { float shared_expert[]; };
// params[0..7]: routing weights in slot order; params[8]: shared_expert_gate logit;
// params[9]: hidden size (uint bits).
layout(set = 0, binding = 10) readonly buffer Params { float params[]; };

void main() {
    const uint hidden_size = floatBitsToUint(params[NUM_EXPERTS_PER_TOK + 1]);
    const uint i = gl_GlobalInvocationID.x;
    if (i >= hidden_size) {
        return;
    }
    float moe = 0.0;
    moe = fma(params[0], expert0[i], moe);
    moe = fma(params[1], expert1[i], moe);
    moe = fma(params[2], expert2[i], moe);
    moe = fma(params[3], expert3[i], moe);
    moe = fma(params[4], expert4[i], moe);
    moe = fma(params[5], expert5[i], moe);
    moe = fma(params[6], expert6[i], moe);
    moe = fma(params[7], expert7[i], moe);
    const float gate = 1.0 / (1.0 + exp(-params[NUM_EXPERTS_PER_TOK]));
    hidden[i] = hidden[i] + moe + gate * shared_expert[i];
}
