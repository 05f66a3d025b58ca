// conv1d_step with the state read from one buffer and written to another (the idiom of engines
// whose graph copies the state: docs/manifests.md "A state read from one binding and written to
// another"), the taps read as f32 (the manifest converts the op's bf16 w exactly).
// One invocation per channel. Per token t: acc = fma chain over the window concat(state, x)
// rows t .. t + K - 1 times w[c][j]; y = acc / (1 + exp(-acc)); the new state is rows
// T .. T + K - 2 of the window.
// Variants (defines): ONE_KERNEL (default layout: binding 3 holds y then the new state),
// PASS_Y (binding 3 holds y only), PASS_STATE (binding 4 holds the new state only).
// Planted bugs: SKIP_STATE (the new state not written), LATE_STATE (rows T - 1 .. T + K - 3:
// the state one token late).
// Shape contract: x [T][C] f32, w [C][K] f32, state [K-1][C] f32, y [T][C] f32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
#ifndef PASS_STATE
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
#endif
layout(set = 0, binding = 2) readonly buffer S { float s_in[]; };
#ifdef PASS_STATE
layout(set = 0, binding = 4) writeonly buffer O { float o[]; };
#else
layout(set = 0, binding = 3) writeonly buffer O { float o[]; };
#endif
layout(push_constant) uniform P { uint tokens; uint channels; uint kernel; } pc;

// Row r of the window concat(state, x), channel c.
float window(uint r, uint c) {
  const uint K = pc.kernel, C = pc.channels;
  return r + 1u < K ? s_in[r * C + c] : x[(r + 1u - K) * C + c];
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint K = pc.kernel, C = pc.channels, T = pc.tokens;
  if (c >= C) return;
#ifndef PASS_STATE
  for (uint t = 0u; t < T; ++t) {
    float acc = 0.0;
    for (uint j = 0u; j < K; ++j) acc = fma(window(t + j, c), w[c * K + j], acc);
    o[t * C + c] = acc / (1.0 + exp(-acc));
  }
#endif
#if !defined(PASS_Y) && !defined(SKIP_STATE)
#ifdef PASS_STATE
  const uint base = 0u;
#else
  const uint base = T * C;
#endif
#ifdef LATE_STATE
  for (uint j = 0u; j + 1u < K; ++j) o[base + j * C + c] = window(T - 1u + j, c);
#else
  for (uint j = 0u; j + 1u < K; ++j) o[base + j * C + c] = window(T + j, c);
#endif
#endif
}
