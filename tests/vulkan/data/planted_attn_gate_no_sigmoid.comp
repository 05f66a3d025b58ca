#version 450
// attention_gate: o[i] = attn[i] * sigmoid(gate[i]), sigmoid(x) = 1 / (1 + exp(-x)), for the
// tokens * q_heads * head_dim elements (HF: attn_output * torch.sigmoid(gate)).
// Shape contract: attn, gate, o [tokens, q_heads * head_dim] f32 (gate is laid out [T, H, D],
// the same order). One invocation per element (dispatch ceil_div(n, WG)), coalesced, the tail
// guarded. exp(-x) overflows to +inf for x < -88.7: 1 / (1 + inf) = 0, the limit sigmoid has
// there.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float attn[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float gate[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  o[i] = attn[i] * gate[i];  // PLANTED: gate applied without sigmoid
}
