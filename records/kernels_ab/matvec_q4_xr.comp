#version 450
// A/B variant of compare/shaders/matvec_q4.comp (read it first: same shape contract, factored sums,
// per-row reduction), x kept in registers: a row fits one step (cols <= 32 U WG, the manifest), so
// lane t's quads are the same in every row block; it loads their x (8 vec4 a quad) and sums once,
// and a persistent grid of G workgroups (the manifest) takes row blocks i, i + G, ... Why: in the
// bundled kernel every row block reloads the lane's x from L1 (128 bytes a quad, lanes 128 bytes
// apart: 32 cache lines a 16-byte load), and R 4 (twice the x reads per weight) is slower than R 8.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uvec4 wq[]; };  // cols % 64: whole uvec4s per row
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
shared float part[R * WG];  // [row][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code p (0..3) of the low 16 bits of h as an exact float.
float code(uint h, uint p) {
  const uint e = (150u - 4u * p) << 23;  // 2^(23-4p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (15u << (4u * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint quads = pc.cols / 32u, groups = pc.cols / 64u, t = gl_LocalInvocationID.x;
  vec4 xv[U * 8u];  // lane t's quads u * WG + t (clamped): their x
  float sx[U];      // and its sum per quad, in the bundled kernel's order
  [[unroll]] for (uint u = 0u; u < U; ++u) {
    const uint j = min(u * WG + t, quads - 1u);
    vec4 sx4 = vec4(0.0);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
      xv[u * 8u + 2u * k] = x[8u * j + 2u * k];
      xv[u * 8u + 2u * k + 1u] = x[8u * j + 2u * k + 1u];
      sx4 += xv[u * 8u + 2u * k] + xv[u * 8u + 2u * k + 1u];
    }
    sx[u] = (sx4.x + sx4.y) + (sx4.z + sx4.w);
  }
  const uint blocks = (pc.rows + R - 1u) / R;
  for (uint blk = gl_WorkGroupID.x; blk < blocks; blk += gl_NumWorkGroups.x) {
    const uint row0 = blk * R;
    uvec4 w[U * R];
    float s[U * R];
    float b[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(u * WG + t, quads - 1u);
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + j / 2u;
        w[u * R + r] = wq[row * quads + j];
        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);
      }
    }
    float acc[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      if (u * WG + t >= quads) break;
      float sq[R];
      [[unroll]] for (uint r = 0u; r < R; ++r) sq[r] = 0.0;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const vec4 lo = xv[u * 8u + 2u * k], hi = xv[u * 8u + 2u * k + 1u];
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint wd = w[u * R + r][k], wh = wd >> 16;
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wd, p), lo[p], sq[r]);
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wh, p), hi[p], sq[r]);
        }
      }
      [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] += fma(s[u * R + r], sq[r], b[u * R + r] * sx[u]);
    }
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      const float sum = subgroupAdd(acc[r]);
      if (subgroupElect()) part[r * WG + gl_SubgroupID] = sum;
    }
    barrier();
    if (t < R && row0 + t < pc.rows) {  // WG >= R (the manifest)
      float sum = 0.0;
      for (uint i = 0u; i < gl_NumSubgroups; ++i) sum += part[t * WG + i];
      y[row0 + t] = sum;
    }
    barrier();  // part is written again by the next block
  }
}
