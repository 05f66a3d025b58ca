#version 450
// attention_softmax: probs[t][h][p] = exp(s[p] - m) / sum_{i < len} exp(s[i] - m) for
// p < len = past + t + 1, m = max_{i < len} s[i] (max-subtracted: no overflow for any finite
// scores); probs = 0 for len <= p < L. Masked scores (p >= len) are not read.
// Shape contract: scores, probs [tokens, q_heads, L] f32, L = past + tokens (row-major, the
// scores stage's layout). One workgroup per (t, h) row; its WG lanes stride over the row
// (coalesced; ceil(L/WG) iterations per pass; the manifest declares ceil(L/WG) <= 16384, so
// the three passes stay under lavapipe's 65535 cut). The passes: max, then e = exp(s - m)
// stored into probs while summing, then probs *= 1/sum (each lane re-reads only what it
// wrote). Workgroup reductions: subgroupMax/subgroupAdd, then subgroup 0 combines the
// per-subgroup partials from shared memory: correct for every subgroup and workgroup size.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer S { float scores[]; };
layout(std430, set = 0, binding = 1) buffer P { float probs[]; };
layout(push_constant) uniform Push { uint tokens; uint q_heads; uint past; } pc;
shared float partial[WG];  // one per subgroup (at most WG)

// op 0: max, op 1: sum. Every lane gets the workgroup's result.
float reduce(float x, uint op) {
  x = op == 0u ? subgroupMax(x) : subgroupAdd(x);
  if (subgroupElect()) partial[gl_SubgroupID] = x;
  barrier();
  if (gl_SubgroupID == 0) {
    float r = op == 0u ? uintBitsToFloat(0xFF800000u) : 0.0;
    for (uint s = gl_SubgroupInvocationID; s < 8u; s += 32u)  // PLANTED: 256 / 32 = 8 subgroups assumed
      r = op == 0u ? max(r, partial[s]) : r + partial[s];
    r = op == 0u ? subgroupMax(r) : subgroupAdd(r);
    if (subgroupElect()) partial[0] = r;
  }
  barrier();
  const float r = partial[0];
  barrier();  // partial is reused by the next reduction
  return r;
}

void main() {
  const uint row = gl_WorkGroupID.x;  // t * q_heads + h
  const uint t = row / pc.q_heads;
  const uint L = pc.past + pc.tokens;
  const uint len = pc.past + t + 1;
  const uint base = row * L;
  const uint lane = gl_LocalInvocationID.x;

  float m = uintBitsToFloat(0xFF800000u);
  for (uint p = lane; p < len; p += WG) m = max(m, scores[base + p]);
  m = reduce(m, 0u);

  float sum = 0.0;
  for (uint p = lane; p < len; p += WG) {
    const float e = exp(scores[base + p] - m);
    probs[base + p] = e;
    sum += e;
  }
  sum = reduce(sum, 1u);

  const float inv = 1.0 / sum;
  for (uint p = lane; p < len; p += WG) probs[base + p] *= inv;
  for (uint p = len + lane; p < L; p += WG) probs[base + p] = 0.0;
}
