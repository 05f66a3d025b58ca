#version 450
// PLANTED BUG (tests/vulkan/route_compare_test.cpp): sigmoid as exp(x) / (1 + exp(x)) for every finite x: right until exp(x) overflows (x > 88.7: inf / inf).
// router_noaux: the DeepSeek-V3 noaux_tc router (kernels_cpu/ops/router_noaux.h, docs/ops/moe.md "noaux_tc router"):
// s = sigmoid(logit), c = s + bias; group score G = top1 + top2 of c over each of the n_group
// contiguous groups; the topk_group largest G are kept (ties to the lower group); the K largest
// c of the kept experts (ties to the lower expert); w = s / sum of the K chosen s (if
// renormalize, else s), then * routed_scaling_factor.
// Shape contract: logits [tokens, experts] f32, bias [experts] f32 (finite), idx [tokens, k]
// i32, w [tokens, k] f32; experts % n_group == 0, experts / n_group >= 2, 1 <= topk_group <=
// n_group, 1 <= k <= min(64, topk_group * experts / n_group), experts <= 2048 (c kept in shared
// memory), n_group <= 256. Slot order (the comparison relies on it): descending w as computed
// here, ties by ascending expert index (CPU op: by c; engines differ: docs/ops/verification.md "Top-K slot order").
// A token with a NaN logit gets idx = -1 and w = NaN in every slot; +-inf logits are ordinary
// (s = 1 or 0, set exactly: Vulkan bounds exp only for finite arguments).
// sigmoid: 1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below, so the divisor is in
// [1, 2] (Vulkan bounds division only for |y| in [2^-126, 2^126]) and nothing overflows.
// One workgroup per token; groups by a lane each (rank among the n_group scores), the experts
// by k passes over the kept experts in (c descending, index ascending) order on an
// order-preserving integer key of c (subgroup max/min, then per-subgroup partials reduced by
// subgroup 0: any subgroup size); the k slots strided over the lanes (any workgroup size).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer L { float logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float bias[]; };
layout(std430, set = 0, binding = 2) writeonly buffer I { int idx[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Wo { float w[]; };
layout(push_constant) uniform Push {
  uint experts; uint k; uint n_group; uint topk_group; float routed_scaling_factor; uint renormalize;
} pc;
const uint MAX_E = 2048u, MAX_K = 64u;
shared float c[MAX_E];
shared float gscore[256];
shared uint kept[256];
shared uint part_key[WG];  // one per subgroup (at most WG)
shared uint part_idx[WG];
shared uint chosen[MAX_K];
shared float chosen_s[MAX_K];
shared uint bad;

uint order_key(float v) {
  uint b = floatBitsToUint(v);
  if (b == 0x80000000u) b = 0u;  // -0.0 == +0.0
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

float sigmoid(float x) {
  const uint b = floatBitsToUint(x);
  if (b == 0x7F800000u) return 1.0;  // +inf
  if (b == 0xFF800000u) return 0.0;  // -inf
  // (the x >= 0 branch 1 / (1 + exp(-x)) dropped)
  const float t = exp(x);
  return t / (1.0 + t);
}

// The workgroup's best (largest key, then lowest index) of the lanes' (key, i); key 0: none.
void reduce_best(inout uint key, inout uint i) {
  uint k = subgroupMax(key);
  i = subgroupMin(key == k ? i : 0xFFFFFFFFu);
  if (subgroupElect()) part_key[gl_SubgroupID] = k, part_idx[gl_SubgroupID] = i;
  barrier();
  if (gl_SubgroupID == 0u) {
    uint bk = 0u, bi = 0xFFFFFFFFu;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) {
      if (part_key[s] > bk || (part_key[s] == bk && part_idx[s] < bi)) bk = part_key[s], bi = part_idx[s];
    }
    k = subgroupMax(bk);
    bi = subgroupMin(bk == k ? bi : 0xFFFFFFFFu);
    if (subgroupElect()) part_key[0] = k, part_idx[0] = bi;
  }
  barrier();
  key = part_key[0], i = part_idx[0];
  barrier();  // part_* are reused by the next reduction
}

// The k chosen experts' weights, written at their slots. Slots are strided over the lanes, so k
// may exceed the workgroup size.
void write_slots(uint base, uint out_base) {
  const uint l = gl_LocalInvocationID.x;
  // Weights from the un-biased s: (s / sum) * routed_scaling_factor, as HF (divide, then scale).
  for (uint j = l; j < pc.k; j += WG) chosen_s[j] = sigmoid(logits[base + chosen[j]]);
  barrier();
  float sum = 0.0;
  if (l < pc.k)
    for (uint j = 0u; j < pc.k; ++j) sum += chosen_s[j];  // every lane in the same order
  barrier();
  for (uint j = l; j < pc.k; j += WG) {
    const float s = chosen_s[j];
    const float norm = pc.renormalize == 0u ? s : (sum > 0.0 ? s / sum : 0.0);
    chosen_s[j] = norm * pc.routed_scaling_factor;
  }
  barrier();
  // Slot = rank by (w descending, expert ascending): the contract's order, exactly.
  for (uint i = l; i < pc.k; i += WG) {
    const float wv = chosen_s[i];
    const uint e = chosen[i];
    uint rank = 0u;
    for (uint j = 0u; j < pc.k; ++j) {
      const float q = chosen_s[j];
      rank += (q > wv || (q == wv && chosen[j] < e)) ? 1u : 0u;
    }
    idx[out_base + rank] = int(e);
    w[out_base + rank] = wv;
  }
}

void main() {
  const uint t = gl_WorkGroupID.x, l = gl_LocalInvocationID.x;
  const uint base = t * pc.experts, out_base = t * pc.k, gsize = pc.experts / pc.n_group;
  if (l == 0u) bad = 0u;
  barrier();
  bool nan = false;
  for (uint e = l; e < pc.experts; e += WG) {
    const float x = logits[base + e];
    nan = nan || (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u;
    c[e] = sigmoid(x) + bias[e];
  }
  if (subgroupAny(nan) && subgroupElect()) bad = 1u;
  barrier();
  if (bad != 0u) {
    for (uint j = l; j < pc.k; j += WG) idx[out_base + j] = -1, w[out_base + j] = uintBitsToFloat(0x7FC00000u);
    return;  // uniform over the workgroup
  }

  // Group scores, then each group's rank by (G descending, group ascending).
  for (uint g = l; g < pc.n_group; g += WG) {
    float top1 = c[g * gsize], top2 = c[g * gsize + 1u];
    if (top2 > top1) { const float tmp = top1; top1 = top2; top2 = tmp; }
    for (uint e = g * gsize + 2u; e < (g + 1u) * gsize; ++e) {
      const float v = c[e];
      if (v > top1) { top2 = top1; top1 = v; } else if (v > top2) { top2 = v; }
    }
    gscore[g] = top1 + top2;
  }
  barrier();
  for (uint g = l; g < pc.n_group; g += WG) {
    const float G = gscore[g];
    uint rank = 0u;
    for (uint h = 0u; h < pc.n_group; ++h) rank += (gscore[h] > G || (gscore[h] == G && h < g)) ? 1u : 0u;
    kept[g] = rank < pc.topk_group ? 1u : 0u;
  }
  barrier();

  // k passes over the kept experts.
  uint prev_key = 0xFFFFFFFFu, prev_i = 0u;
  for (uint j = 0u; j < pc.k; ++j) {
    uint bk = 0u, bi = 0xFFFFFFFFu;
    for (uint e = l; e < pc.experts; e += WG) {
      if (kept[e / gsize] == 0u) continue;
      const uint key = order_key(c[e]);
      const bool after = key < prev_key || (key == prev_key && e > prev_i);
      if (after && (key > bk || (key == bk && e < bi))) bk = key, bi = e;
    }
    reduce_best(bk, bi);
    if (l == 0u) chosen[j] = bi;
    prev_key = bk, prev_i = bi;
  }
  barrier();

  write_slots(base, out_base);
}
