#version 450
// matvec_q (4-bit, MLX affine, group 64), an A/B variant of the bundled matvec_q4 (not bundled):
// y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
// The bundled kernel's split with a lane loading 8 bytes per row per step, not 16: a uvec2 (2
// words, 16 codes, a quarter group: one scale and bias), so 2x fewer weight and scale loads than
// one word per lane, and 4 vec4 of x per uvec2 (lanes 64 bytes apart: 16 cache lines per x load
// and warp). R rows per workgroup (spec id 0), U uvec2 per lane per step (spec id 1), all loads
// of a step before any arithmetic; per row a subgroupAdd, then the subgroups' partials in shared
// memory. Each term is fma(q, s, b) * x, the reference's; q by exponent or-ing (exact, see
// matvec_q4.comp).
// Workgroup: WG (spec id 10) = enough lanes for a row's uvec2s in one step, at least R, at most 128.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uvec2 wq[]; };  // cols % 64: whole uvec2s per row
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
shared float part[R * WG];  // [row][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
float code(uint h, uint p) {
  const uint e = (150u - 4u * p) << 23;
  return uintBitsToFloat((h & (15u << (4u * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint pairs = pc.cols / 16u, groups = pc.cols / 64u, t = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * R;
  float acc[R];
  [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
  for (uint base = 0u; base < pairs; base += U * WG) {
    uvec2 w[U * R];
    float s[U * R];
    float b[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + t, pairs - 1u);
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + j / 4u;
        w[u * R + r] = wq[row * pairs + j];
        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = base + u * WG + t;
      if (j >= pairs) break;
      [[unroll]] for (uint k = 0u; k < 2u; ++k) {
        const vec4 lo = x[4u * j + 2u * k], hi = x[4u * j + 2u * k + 1u];
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint wd = w[u * R + r][k], wh = wd >> 16;
          const float sc = s[u * R + r], bi = b[u * R + r];
          [[unroll]] for (uint p = 0u; p < 4u; ++p) acc[r] += fma(code(wd, p), sc, bi) * lo[p];
          [[unroll]] for (uint p = 0u; p < 4u; ++p) acc[r] += fma(code(wh, p), sc, bi) * hi[p];
        }
      }
    }
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
}
