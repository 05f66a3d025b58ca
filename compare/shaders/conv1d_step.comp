#version 450
// conv1d_step: causal depthwise conv1d over the last K inputs + SiLU, state updated in place.
// Shape contract: x [tokens, C] f32, w [C, K] bf16 (flat c*K + j, two per uint, element 0 in the
// low half; tap K-1 multiplies the current token), state [K-1, C] f32 in/out (slot 0 oldest),
// y [tokens, C] f32. Per token t, channel c:
//   acc = fma chain over j < K-1 of state[j][c] * w[c][j], then + x[t][c] * w[c][K-1];
//   y = acc / (1 + exp(-acc)) (the engines' division form); shift the window, newest = x[t][c].
// One invocation per channel (dispatch ceil_div(C, WG)): adjacent lanes read adjacent channels
// (coalesced), and each invocation owns its channel's state column, so the in-place update is
// race-free. The window lives in registers over the T tokens of a prefill call: the state is
// read once and written once per call. K <= KMAX (declared in the manifest's limits).
// No subgroup operations: any subgroup size.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) buffer S { float state[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint tokens; uint channels; uint kernel; } pc;
const uint KMAX = 8u;

float weight(uint i) {
  const uint word = w[i >> 1];
  return uintBitsToFloat(((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u));
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint C = pc.channels, K = pc.kernel;
  if (c >= C) return;
  float taps[KMAX], win[KMAX];
  for (uint j = 0u; j < K; ++j) taps[j] = weight(c * K + j);
  for (uint j = 0u; j + 1u < K; ++j) win[j] = state[j * C + c];
  for (uint t = 0u; t < pc.tokens; ++t) {
    const float xt = x[t * C + c];
    float acc = 0.0;
    for (uint j = 0u; j + 1u < K; ++j) acc = fma(win[j], taps[j], acc);
    acc = fma(xt, taps[K - 1u], acc);
    y[t * C + c] = acc / (1.0 + exp(-acc));
    for (uint j = 0u; j + 2u < K; ++j) win[j] = win[j + 1u];
    if (K > 1u) win[K - 2u] = xt;
  }
  for (uint j = 0u; j + 1u < K; ++j) state[j * C + c] = win[j];
}
