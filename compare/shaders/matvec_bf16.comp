#version 450
// matvec_bf16: y[r] = sum_c W[r][c] * x[c], W unquantised bf16 (DeepSeek-V3 router gate
// [256, 7168]; the timing shapes of `--shapes perf`).
// Shape contract: W [rows, cols] bf16 row-major, two per uint (element e = r*cols + c in word
// e/2, even elements in the low half; cols may be odd, so a row may start in a word's high
// half), x [cols] f32, y [rows] f32; any rows >= 0, cols >= 1.
// A workgroup takes R consecutive rows (spec id 0) and all its WG lanes stride over those rows'
// columns together; per row a subgroupAdd, then the subgroups' partials summed in shared memory:
// any subgroup size. bf16 -> f32 widening is exact (the high half of the f32).
// Two paths, chosen per dispatch (uniform):
// - cols % 8 == 0 (every real shape): a row is whole uvec4s (8 bf16, 16-byte aligned), read
//   through an alias of binding 0; a lane takes octets base + u*WG + t (U per step, spec id 1)
//   of R rows, every load of a step issued before any arithmetic, and a lane's x (2 vec4 per
//   octet) serves R rows. Why: an element per lane (records/kernels_ab/matvec_bf16_before.comp) keeps one
//   64-byte load per subgroup in flight per iteration, too few bytes in flight for HBM at
//   row counts that fill the GPU only once (A17B o_proj 4096 x 8192: records/kernels_ab/README.md,
//   records/benchmarks-history.md, "matvec_bf16 with 16-byte loads").
// - otherwise: a lane takes elements t, t + WG, ... of the R rows, one bf16 per load.
// Loads past the last row are clamped to it and not stored; octets past the row are clamped
// (in bounds) and their terms skipped.
// Workgroup: WG (spec id 10) >= R, chosen by the manifest from rows and cols.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 0) readonly buffer W8 { uvec4 w8[]; };  // only when cols % 8 == 0
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };  // only when cols % 8 == 0
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
shared float part[R * WG];  // [row][subgroup]

float lo16(uint word) { return uintBitsToFloat(word << 16); }
float hi16(uint word) { return uintBitsToFloat(word & 0xFFFF0000u); }
float bf16_at(uint e) { return (e & 1u) == 0u ? lo16(w[e >> 1]) : hi16(w[e >> 1]); }

// acc[r] += the row's 8 elements of octet wv times x's two vec4s of that octet.
float octet(uvec4 wv, vec4 a, vec4 b, float acc) {
  acc = fma(lo16(wv.x), a.x, acc);
  acc = fma(hi16(wv.x), a.y, acc);
  acc = fma(lo16(wv.y), a.z, acc);
  acc = fma(hi16(wv.y), a.w, acc);
  acc = fma(lo16(wv.z), b.x, acc);
  acc = fma(hi16(wv.z), b.y, acc);
  acc = fma(lo16(wv.w), b.z, acc);
  return fma(hi16(wv.w), b.w, acc);
}

void main() {
  const uint t = gl_LocalInvocationID.x, row0 = gl_WorkGroupID.x * R;
  float acc[R];
  [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
  if (pc.cols % 8u == 0u) {
    const uint octs = pc.cols / 8u;
    for (uint base = 0u; base < octs; base += U * WG) {
      uvec4 wv[U * R];
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        const uint j = min(base + u * WG + t, octs - 1u);
        [[unroll]] for (uint r = 0u; r < R; ++r) wv[u * R + r] = w8[min(row0 + r, pc.rows - 1u) * octs + j];
      }
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        const uint j = base + u * WG + t;
        if (j >= octs) break;
        const vec4 a = x4[2u * j], b = x4[2u * j + 1u];
        [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = octet(wv[u * R + r], a, b, acc[r]);
      }
    }
  } else {
    for (uint c = t; c < pc.cols; c += WG) {
      const float xc = x[c];
      [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = fma(bf16_at(min(row0 + r, pc.rows - 1u) * pc.cols + c), xc, acc[r]);
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
