#version 450
// PLANTED BUG (tests/vulkan/route_compare_test.cpp): ties go to the LAST index of the maximum (>= in the scan, max index in the reductions).
// argmax: idx[r] = the first index of the maximum of row r of x (strict `>` scan: ties to the
// lowest index; -0.0 == +0.0). A NaN counts as the maximum: a row holding one returns its
// first NaN (numpy/torch semantics, kernels_cpu/ops/argmax.h). +-inf are ordinary values.
// Shape contract: x [rows, n] f32, idx [rows] i32; n >= 1 any size (vocab 248320).
// One workgroup per row: each lane keeps the best (key, index) of its strided, coalesced
// elements, then subgroupMax / subgroupMin pick the workgroup's best; correct for every
// subgroup size and workgroup size (the per-subgroup partials, at most WG of them, are reduced
// by subgroup 0 in strides of its size).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
// Comparisons are made on an order-preserving integer key of the float bits, so NaN, -0.0 and
// infinities follow the contract exactly whatever the device's float comparison does with them
// (Vulkan does not promise IEEE NaN behaviour without SignedZeroInfNanPreserve).
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer I { int idx[]; };
layout(push_constant) uniform Push { uint n; } pc;
shared uint part_key[WG];  // one per subgroup (at most WG)
shared uint part_idx[WG];

// Monotone key: larger float -> larger key; -0.0 maps as +0.0; every NaN maps above +inf.
uint order_key(float v) {
  uint b = floatBitsToUint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;  // NaN: the maximum
  if (b == 0x80000000u) b = 0u;                              // -0.0 == +0.0
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

// The workgroup's best (largest key, then lowest index) of every lane's (key, i).
void reduce_best(inout uint key, inout uint i) {
  uint k = subgroupMax(key);
  i = subgroupMax(key == k ? i : 0u);
  if (subgroupElect()) part_key[gl_SubgroupID] = k, part_idx[gl_SubgroupID] = i;
  barrier();
  if (gl_SubgroupID == 0u) {
    uint bk = 0u, bi = 0xFFFFFFFFu;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) {
      if (part_key[s] > bk || (part_key[s] == bk && (part_idx[s] > bi || bi == 0xFFFFFFFFu))) bk = part_key[s], bi = part_idx[s];
    }
    k = subgroupMax(bk);
    bi = subgroupMax(bk == k && bi != 0xFFFFFFFFu ? bi : 0u);
    if (subgroupElect()) part_key[0] = k, part_idx[0] = bi;
  }
  barrier();
  key = part_key[0], i = part_idx[0];
}

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint base = row * pc.n;
  // Key 0 is below every real key (the smallest, -inf, is 0x007FFFFF): "nothing yet".
  uint best_key = 0u, best_i = 0xFFFFFFFFu;
  for (uint i = gl_LocalInvocationID.x; i < pc.n; i += gl_WorkGroupSize.x) {
    const uint k = order_key(x[base + i]);
    if (k >= best_key) best_key = k, best_i = i;  // ascending i: strict `>` keeps the first
  }
  reduce_best(best_key, best_i);
  if (gl_LocalInvocationID.x == 0u) idx[row] = int(best_i);
}
