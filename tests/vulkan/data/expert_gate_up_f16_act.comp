#version 450
// expert_gate_up (stage of swiglu_expert, compare/manifest/chains.h): act[t][i] = silu(g) * u with
// g = gate[i] . X[t], u = up[i] . X[t], silu(g) = g / (1 + exp(-g)); act stored in f32 (the
// engines keep it f32 for the down projection).
// Shape contract: gate, up [inter, hidden] MLX affine quantized with BITS = bits (2, 4 or 8; a
// spec constant, so the code loop unrolls per width): w [inter, hidden * BITS / 32] uint (codes
// low bits first), scales and biases [inter, hidden / G] bf16 pairs, G = group_size a multiple of
// 32 / BITS dividing hidden; X [tokens, hidden] f32 row-major; act [tokens, inter] f32 row-major.
// Grid as matmul_q4.comp: x = ceil_div(inter, ROWS_PER_WG) (subgroups take rows in turn, lanes
// stride over the row's words of gate and up together, coalesced), y = ceil_div(tokens, TILE_T),
// TILE_T = min(8, tokens); both words are dequantised once and used for TILE_T tokens; two
// subgroupAdds per token. Terms are fma(q, s, b) * x, the reference's. For g < -88, exp(-g) is
// +inf and silu gives -0 (the truth is below 1e-36 in magnitude), never NaN.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(constant_id = 1) const uint TILE_T = 8;
layout(constant_id = 2) const uint BITS = 4;
const uint CODES = 32u / BITS;  // codes per word: 16, 8 or 4, i.e. 4, 2 or 1 vec4 of x
const uint MASK = (1u << BITS) - 1u;
layout(std430, set = 0, binding = 0) readonly buffer Gw { uint gw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Gs { uint gs[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gb { uint gb[]; };
layout(std430, set = 0, binding = 3) readonly buffer Uw { uint uw[]; };
layout(std430, set = 0, binding = 4) readonly buffer Us { uint us[]; };
layout(std430, set = 0, binding = 5) readonly buffer Ub { uint ub[]; };
layout(std430, set = 0, binding = 6) readonly buffer X { vec4 x4[]; };  // hidden % 4 == 0
layout(std430, set = 0, binding = 7) writeonly buffer Act { float act[]; };
layout(push_constant) uniform Push { uint inter; uint hidden; uint tokens; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.hidden / CODES, groups = pc.hidden / pc.group_size, wpg = pc.group_size / CODES;
  const uint xrow = pc.hidden / 4u;
  const uint t0 = gl_WorkGroupID.y * TILE_T;
  const uint nt = min(TILE_T, pc.tokens - t0);  // the last tile may be partial
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.inter) break;  // uniform within the subgroup
    float ag[TILE_T], au[TILE_T];
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) ag[t] = 0.0, au[t] = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const uint g = row * groups + j / wpg;
      const float sg = bf16_at(gs[g >> 1], g), bg = bf16_at(gb[g >> 1], g);
      const float su = bf16_at(us[g >> 1], g), bu = bf16_at(ub[g >> 1], g);
      const uint wg = gw[row * words + j], wu = uw[row * words + j];
      float dg[CODES], du[CODES];
      [[unroll]] for (uint n = 0u; n < CODES; ++n) {
        dg[n] = fma(float((wg >> (BITS * n)) & MASK), sg, bg);
        du[n] = fma(float((wu >> (BITS * n)) & MASK), su, bu);
      }
      [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
        if (t < nt) {
          const uint xi = (t0 + t) * xrow + j * (CODES / 4u);
          [[unroll]] for (uint v = 0u; v < CODES / 4u; ++v) {
            const vec4 a = x4[xi + v];
            ag[t] += dg[4u * v] * a.x + dg[4u * v + 1u] * a.y + dg[4u * v + 2u] * a.z + dg[4u * v + 3u] * a.w;
            au[t] += du[4u * v] * a.x + du[4u * v + 1u] * a.y + du[4u * v + 2u] * a.z + du[4u * v + 3u] * a.w;
          }
        }
      }
    }
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
      if (t < nt) {
        const float g = subgroupAdd(ag[t]), u = subgroupAdd(au[t]);
        // PLANTED: act kept at f16 precision (11 significant bits, round to nearest even). Done on
        // the bits: on NVIDIA (driver 580) unpackHalf2x16(packHalf2x16(v)).x came back unrounded.
        const uint b = floatBitsToUint(g / (1.0 + exp(-g)) * u);
        if (subgroupElect()) act[(t0 + t) * pc.inter + row] = uintBitsToFloat((b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu);
      }
    }
  }
}
