#version 450
// kv_append: rows [past, past + tokens) of k_cache and v_cache := k and v (the attention
// chain's first stage, kernels_cpu/ops/attention.h step 1); every other cache row untouched.
// Shape contract: k, v [tokens, kv_heads, head_dim] f32; k_cache, v_cache [capacity, kv_heads,
// head_dim] f32, read-write; past + tokens <= capacity. One invocation per copied element
// (consecutive invocations copy consecutive words: coalesced), any size (the tail is guarded).
// Words are moved as uint so no float conversion can touch their bits (the stage is Exact).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 1) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 2) buffer KC { uint k_cache[]; };
layout(std430, set = 0, binding = 3) buffer VC { uint v_cache[]; };
layout(push_constant) uniform Push { uint tokens; uint kv_heads; uint head_dim; uint past; } pc;

void main() {
  const uint row = pc.kv_heads * pc.head_dim;  // words per cache row (one position)
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.tokens * row) return;
  k_cache[(pc.past + 1u) * row + i] = k[i];  // PLANTED: one row too far
  v_cache[(pc.past + 1u) * row + i] = v[i];
}
