#version 450
// A delta_net kernel written in ggml's conventions (docs/ops/linear-attention.md "Conventions"):
// g is the log of the decay (the state is multiplied by exp(g)), v-head h reads q/k head
// h % k_heads (HEAD_GROUP_MOD 0: h / (v_heads / k_heads), a planted mistake), and
// o = scale * (S q). Order as ggml's: kv sums (exp(g) S) k without storing the decayed state,
// then S = exp(g) S + k delta. One invocation per state row (h, vi), the tokens in order, the
// state updated in place.
// Shapes: q, k [tokens, k_heads, key_dim]; v, o [tokens, v_heads, value_dim]; g, beta
// [tokens, v_heads]; state [v_heads, value_dim, key_dim]. Dispatch (ceil_div(value_dim, 64), v_heads, 1).
#ifndef HEAD_GROUP_MOD
#define HEAD_GROUP_MOD 1
#endif
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer G { float g[]; };
layout(std430, set = 0, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, set = 0, binding = 5) buffer S { float state[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push {
  uint tokens; uint k_heads; uint v_heads; uint key_dim; uint value_dim; float scale;
} pc;

void main() {
  const uint vi = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y;
  if (vi >= pc.value_dim) return;
#if HEAD_GROUP_MOD
  const uint kh = h % pc.k_heads;
#else
  const uint kh = h / (pc.v_heads / pc.k_heads);
#endif
  const uint dk = pc.key_dim, dv = pc.value_dim, base = (h * dv + vi) * dk;
  for (uint t = 0u; t < pc.tokens; ++t) {
    const uint qk = (t * pc.k_heads + kh) * dk, hv = t * pc.v_heads + h;
    const float decay = exp(g[hv]), bh = beta[hv];
    float kv = 0.0;
    for (uint i = 0u; i < dk; ++i) kv += (decay * state[base + i]) * k[qk + i];
    const float delta = (v[hv * dv + vi] - kv) * bh;
    float acc = 0.0;
    for (uint i = 0u; i < dk; ++i) {
      const float s1 = decay * state[base + i] + k[qk + i] * delta;
      state[base + i] = s1;
      acc += s1 * q[qk + i];
    }
    o[hv * dv + vi] = pc.scale * acc;
  }
}
