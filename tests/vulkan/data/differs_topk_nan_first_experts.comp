#version 450
// router_topk: p = softmax(logits) over all E experts; the K largest p (ties to the lowest
// expert index); w = p, or p / sum of the K chosen p when renormalize (kernels_cpu/ops/
// router_topk.h, docs/ops/moe.md "Softmax router").
// Shape contract: logits [tokens, experts] f32; idx [tokens, k] i32; w [tokens, k] f32;
// 1 <= k <= min(experts, 64). Slot order (the comparison relies on it): descending w as this
// kernel computed it, ties by ascending expert index; idx[t][j] is the expert of w[t][j].
// A token whose softmax is undefined by an infinity (a +inf logit, or every logit -inf) gets
// idx = -1 and w = NaN in all k slots; a token with a NaN logit does NOT (see main): this test
// kernel (tests/vulkan/differences_test.cpp) has one declared difference from the contract. A -inf logit (in a valid token) has p = 0 exactly.
// One workgroup per token. The max and the selection use an order-preserving integer key of
// the logit bits (-0.0 keyed as +0.0), so NaN/inf handling and the tie rule do not depend on the
// device's float comparisons. Selection ranks LOGITS: softmax is strictly increasing in the
// logit, so this is the exact top-K of the exact p, free of the rounding of the computed p.
// k passes, each picking the largest (key, lowest index) strictly after the previous pick in
// that order (no "taken" flags). Reductions: subgroupMax/Min/Add then per-subgroup partials in
// shared memory reduced by subgroup 0: correct for every subgroup size. Per lane the loops run
// k * ceil(experts / WG) times (declared limit, far below lavapipe's 65535). The k slots are
// strided over the lanes, so any k <= 64 runs at any workgroup size.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer L { float logits[]; };
layout(std430, set = 0, binding = 1) writeonly buffer I { int idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Wo { float w[]; };
layout(push_constant) uniform Push { uint experts; uint k; uint renormalize; } pc;
const uint MAX_K = 64u;
shared uint part_key[WG];  // one per subgroup (at most WG)
shared uint part_idx[WG];
shared float part_sum[WG];
shared uint chosen[MAX_K];
shared float chosen_p[MAX_K];
shared uint bad;  // the token has a NaN logit

uint order_key(float v) {
  uint b = floatBitsToUint(v);
  if (b == 0x80000000u) b = 0u;  // -0.0 == +0.0
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}
const uint KEY_NEG_INF = 0x007FFFFFu, KEY_POS_INF = 0xFF800000u;

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

float reduce_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) part_sum[gl_SubgroupID] = v;
  barrier();
  if (gl_SubgroupID == 0u) {
    float t = 0.0;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) t += part_sum[s];
    t = subgroupAdd(t);
    if (subgroupElect()) part_sum[0] = t;
  }
  barrier();
  const float r = part_sum[0];
  barrier();
  return r;
}

// The k chosen experts' weights, written at their slots. Slots are strided over the lanes, so k
// may exceed the workgroup size.
void write_slots(uint base, uint out_base, float m, float inv) {
  const uint l = gl_LocalInvocationID.x;
  // Probabilities of the chosen (as the reference: e * (1/sum)), then the renormalisation.
  for (uint j = l; j < pc.k; j += WG) {
    const float x = logits[base + chosen[j]];
    chosen_p[j] = order_key(x) == KEY_NEG_INF ? 0.0 : exp(x - m) * inv;
  }
  barrier();
  float rescale = 1.0;
  if (pc.renormalize != 0u && l < pc.k) {
    float cs = 0.0;
    for (uint j = 0u; j < pc.k; ++j) cs += chosen_p[j];  // every lane in the same order
    rescale = 1.0 / cs;
  }
  barrier();
  if (pc.renormalize != 0u)
    for (uint j = l; j < pc.k; j += WG) chosen_p[j] = chosen_p[j] * rescale;
  barrier();
  // Slot = rank by (w descending, expert ascending): the contract's order, exactly.
  for (uint i = l; i < pc.k; i += WG) {
    const float p = chosen_p[i];
    const uint e = chosen[i];
    uint rank = 0u;
    for (uint j = 0u; j < pc.k; ++j) {
      const float q = chosen_p[j];
      rank += (q > p || (q == p && chosen[j] < e)) ? 1u : 0u;
    }
    idx[out_base + rank] = int(e);
    w[out_base + rank] = p;
  }
}

void main() {
  const uint t = gl_WorkGroupID.x, l = gl_LocalInvocationID.x;
  const uint base = t * pc.experts, out_base = t * pc.k;

  // Max key and NaN detection (by bits: Vulkan does not promise isnan without
  // SignedZeroInfNanPreserve).
  if (l == 0u) bad = 0u;
  barrier();
  uint best = 0u, best_i = 0xFFFFFFFFu;
  bool nan = false;
  for (uint i = l; i < pc.experts; i += WG) {
    const uint b = floatBitsToUint(logits[base + i]);
    nan = nan || (b & 0x7FFFFFFFu) > 0x7F800000u;
    const uint key = order_key(uintBitsToFloat(b));
    if (key > best) best = key, best_i = i;
  }
  if (subgroupAny(nan) && subgroupElect()) bad = 1u;  // every writer writes 1
  reduce_best(best, best_i);                          // its barriers publish `bad`
  const bool undefined = bad != 0u || best == KEY_POS_INF || best == KEY_NEG_INF;
  // The test's difference from the op's contract: a token with a NaN logit goes to experts
  // 0..k-1 with weight 1/k (an engine's choice, declared in differences.json), where the
  // contract says idx = -1, w = NaN. Tokens undefined by an infinity keep the contract.
  if (bad != 0u) {
    for (uint j = l; j < pc.k; j += WG) idx[out_base + j] = int(j), w[out_base + j] = 1.0 / float(pc.k);
    return;  // uniform over the workgroup
  }
  if (undefined) {
    for (uint j = l; j < pc.k; j += WG) idx[out_base + j] = -1, w[out_base + j] = uintBitsToFloat(0x7FC00000u);
    return;  // uniform over the workgroup
  }
  const float m = logits[base + best_i];

  // Softmax denominator: sum of exp(x - m); -inf logits contribute exactly 0.
  float s = 0.0;
  for (uint i = l; i < pc.experts; i += WG) {
    const float x = logits[base + i];
    s += order_key(x) == KEY_NEG_INF ? 0.0 : exp(x - m);
  }
  const float inv = 1.0 / reduce_sum(s);

  // k selection passes in (key descending, index ascending) order.
  uint prev_key = 0xFFFFFFFFu, prev_i = 0u;
  for (uint j = 0u; j < pc.k; ++j) {
    uint bk = 0u, bi = 0xFFFFFFFFu;
    for (uint i = l; i < pc.experts; i += WG) {
      const uint key = order_key(logits[base + i]);
      const bool after = key < prev_key || (key == prev_key && i > prev_i);
      if (after && (key > bk || (key == bk && i < bi))) bk = key, bi = i;
    }
    reduce_best(bk, bi);
    if (l == 0u) chosen[j] = bi;
    prev_key = bk, prev_i = bi;
  }
  barrier();

  write_slots(base, out_base, m, inv);
}
