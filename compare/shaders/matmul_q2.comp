#version 450
// matmul_q (2-bit, MLX affine, group 64: the moeflux 2-bit experts): Y[t][r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * X[t][c].
// Shape contract: w [rows, cols/16] uint (16 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint, element 0 in the low half), X [tokens, cols] f32 row-major,
// Y [tokens, rows] f32 row-major; cols % 64 == 0, tokens >= 1.
// Grid: x = ceil_div(rows, R), y = ceil_div(tokens, TT). A workgroup takes R rows (spec id 0) and
// a tile of TT tokens (spec id 1); its WG lanes stride over the words of those rows together
// (lane l: words l, l + WG, ...; a warp's loads of one row are one coalesced line).
// Why this register tile: a lane dequantises each of its R words once and uses it for TT tokens,
// and loads each x value once for its R rows, so per multiply-add it moves 4/R bytes of x and
// 1/(4 TT) bytes of weights through L1; the previous kernel (one row per subgroup) loaded x once
// per row, which bound it by L1 at T >= 2 (records/benchmarks-history.md, "matmul_q: a register tile").
// Lanes read x 64 bytes apart (16 codes per word): a warp's vec4 load of x is 16 lines, each used whole by the 4 loads.
// No int->float conversion (quarter rate on NVIDIA): code p of a 16-bit half h, masked in place
// and or-ed with the exponent of 2^(23-2p), is the float 2^(23-2p) + q exactly; minus 2^(23-2p)
// it is float(q) exactly. Each term is fma(q, s, b) * x, the reference's. Rows and tokens past
// the end are clamped for the loads and not stored. Per (row, token) a subgroupAdd; when the
// workgroup holds several subgroups their partials are summed in shared memory: any subgroup
// size. Loop trips per invocation: words / WG (lavapipe ends loops at 65535).
// Workgroup: WG (spec id 10) lanes, at most 128; the manifest's default is one subgroup (no
// shared-memory round, more workgroups in flight).
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint TT = 8;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x4[]; };  // cols % 64 == 0: rows are vec4-aligned
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint tokens; } pc;
const uint C = 8u;  // (row, token) pairs combined per round when a workgroup has several subgroups
// [round parity][pair][subgroup]: a round writes the half the previous round did not read, so
// one barrier per round orders everything (a round's reads end before the next round's barrier).
shared float part[2u * C * WG];

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code p (0..7) of the low 16 bits of h as an exact float.
float code(uint h, uint p) {
  const uint e = (150u - 2u * p) << 23;  // 2^(23-2p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (3u << (2u * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint words = pc.cols / 16u, groups = pc.cols / 64u, xrow = pc.cols / 4u, l = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * R, t0 = gl_WorkGroupID.y * TT;
  float acc[R * TT];
  [[unroll]] for (uint i = 0u; i < R * TT; ++i) acc[i] = 0.0;
  for (uint j = l; j < words; j += WG) {
    uint wd[R];
    float s[R], b[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + j / 4u;  // 4 words per group
      wd[r] = wq[row * words + j];
      s[r] = bf16_at(scales[g >> 1], g);
      b[r] = bf16_at(biases[g >> 1], g);
    }
    vec4 xv[4u * TT];  // [token][quarter of the word]
    [[unroll]] for (uint t = 0u; t < TT; ++t) {
      const uint xi = min(t0 + t, pc.tokens - 1u) * xrow + 4u * j;
      [[unroll]] for (uint q = 0u; q < 4u; ++q) xv[4u * t + q] = x4[xi + q];
    }
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      float d[16];
      [[unroll]] for (uint p = 0u; p < 8u; ++p) {
        d[p] = fma(code(wd[r], p), s[r], b[r]);
        d[8u + p] = fma(code(wd[r] >> 16, p), s[r], b[r]);
      }
      [[unroll]] for (uint t = 0u; t < TT; ++t) {
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
          const vec4 a = xv[4u * t + q];
          acc[r * TT + t] += d[4u * q] * a.x + d[4u * q + 1u] * a.y + d[4u * q + 2u] * a.z + d[4u * q + 3u] * a.w;
        }
      }
    }
  }
  // One subgroup per workgroup (the manifest's default WG): its sums are the results.
  if (gl_NumSubgroups == 1u) {
    [[unroll]] for (uint i = 0u; i < R * TT; ++i) {
      const float sum = subgroupAdd(acc[i]);
      const uint r = i / TT, t = i % TT;
      if (subgroupElect() && row0 + r < pc.rows && t0 + t < pc.tokens) y[(t0 + t) * pc.rows + row0 + r] = sum;
    }
    return;
  }
  // Several subgroups: their partials through shared memory, C (row, token) pairs at a time.
  [[unroll]] for (uint i0 = 0u; i0 < R * TT; i0 += C) {
    const uint side = (i0 / C) % 2u * C * WG;
    [[unroll]] for (uint c = 0u; c < C; ++c) {
      if (i0 + c < R * TT) {
        const float sum = subgroupAdd(acc[i0 + c]);
        if (subgroupElect()) part[side + c * WG + gl_SubgroupID] = sum;
      }
    }
    barrier();
    for (uint c = l; c < C && i0 + c < R * TT; c += WG) {
      const uint r = (i0 + c) / TT, t = (i0 + c) % TT;
      float sum = 0.0;
      for (uint k = 0u; k < gl_NumSubgroups; ++k) sum += part[side + c * WG + k];
      if (row0 + r < pc.rows && t0 + t < pc.tokens) y[(t0 + t) * pc.rows + row0 + r] = sum;
    }
  }
}
