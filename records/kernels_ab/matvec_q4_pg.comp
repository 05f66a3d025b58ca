#version 450
// A/B variant of compare/shaders/matvec_q4.comp (read it first: same shape contract, factored sums,
// work split within a workgroup and manifest rule) with a persistent grid: the manifest dispatches
// at most G workgroups (spec id 2) and workgroup i takes row blocks i, i + G, ... in turn. Why: at
// 12-16k rows the bundled grid (one workgroup per R rows) is about one wave of the GPU, and its
// ramp and tail weigh; a fixed grid keeps every slot busy until the last blocks.
// matvec_q (4-bit, MLX affine, group 64): y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 1;
layout(constant_id = 2) const uint G = 1024;  // workgroups dispatched (the manifest: min(G, blocks))
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
  for (uint block = gl_WorkGroupID.x; block * R < pc.rows; block += G) {
    const uint row0 = block * R;
    float acc[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
    for (uint base = 0u; base < quads; base += U * WG) {
      uvec4 w[U * R];
      float s[U * R];
      float b[U * R];
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        const uint j = min(base + u * WG + t, quads - 1u);
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + j / 2u;
          w[u * R + r] = wq[row * quads + j];
          s[u * R + r] = bf16_at(scales[g >> 1], g);
          b[u * R + r] = bf16_at(biases[g >> 1], g);
        }
      }
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        const uint j = base + u * WG + t;
        if (j >= quads) break;
        float sq[R];  // sum of q x over quad j, per row
        [[unroll]] for (uint r = 0u; r < R; ++r) sq[r] = 0.0;
        vec4 sx4 = vec4(0.0);  // sum of x over quad j, in 4 lanes
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          const vec4 lo = x[8u * j + 2u * k], hi = x[8u * j + 2u * k + 1u];
          sx4 += lo + hi;
          [[unroll]] for (uint r = 0u; r < R; ++r) {
            const uint wd = w[u * R + r][k], wh = wd >> 16;
            [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wd, p), lo[p], sq[r]);
            [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wh, p), hi[p], sq[r]);
          }
        }
        const float sx = (sx4.x + sx4.y) + (sx4.z + sx4.w);
        [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] += fma(s[u * R + r], sq[r], b[u * R + r] * sx);
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
    barrier();  // part[] is read above before the next block writes it
  }
}
