#version 450
// softmax: y[r] = softmax(x[r] * scale + mask[r % mask_rows]) over each row (mask_rows 0: no
// mask, the mask buffer unread). Shape contract: x, y [rows, cols] f32, mask [mask_rows, cols]
// f32 (0, -inf or finite biases). One workgroup per row; its WG lanes stride over the row. Three
// passes: the max of z = x * scale + mask, then e = exp(z - max) stored into y while summing,
// then y *= 1 / sum (each lane re-reads only what it wrote). A row of -inf gives NaN (the max is
// -inf). Workgroup reductions: subgroupMax / subgroupAdd, then subgroup 0 combines the
// per-subgroup partials from shared memory: correct for every subgroup and workgroup size.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer M { float mask[]; };
layout(std430, set = 0, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint cols; uint mask_rows; float scale; } pc;
shared float partial[WG];  // one per subgroup (at most WG)

// op 0: max, op 1: sum. Every lane gets the workgroup's result.
float reduce(float v, uint op) {
  v = op == 0u ? subgroupMax(v) : subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  if (gl_SubgroupID == 0) {
    float r = op == 0u ? uintBitsToFloat(0xFF800000u) : 0.0;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize)
      r = op == 0u ? max(r, partial[s]) : r + partial[s];
    r = op == 0u ? subgroupMax(r) : subgroupAdd(r);
    if (subgroupElect()) partial[0] = r;
  }
  barrier();
  const float r = partial[0];
  barrier();  // partial is reused by the next reduction
  return r;
}

float z(uint base, uint mbase, uint p) {
  return x[base + p] * pc.scale + (pc.mask_rows > 0u ? mask[mbase + p] : 0.0);
}

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint base = row * pc.cols;
  const uint mbase = pc.mask_rows > 0u ? (row % pc.mask_rows) * pc.cols : 0u;
  const uint lane = gl_LocalInvocationID.x;

  float m = uintBitsToFloat(0xFF800000u);
  for (uint p = lane; p < pc.cols; p += WG) m = max(m, z(base, mbase, p));
  m = reduce(m, 0u);

  float sum = 0.0;
  for (uint p = lane; p < pc.cols; p += WG) {
    const float e = exp(z(base, mbase, p) - m);
    y[base + p] = e;
    sum += e;
  }
  sum = reduce(sum, 1u);

  const float inv = 1.0 / sum;
  for (uint p = lane; p < pc.cols; p += WG) y[base + p] *= inv;
}
