// argmax in two passes over a named scratch buffer: PASS 1 finds the best (value, index) of each
// block of 1024 elements of a row (one workgroup per block), PASS 2 the best of a row's blocks.
// "Best": a NaN beats any number (the first NaN wins), then the larger value, then the lower index.
// Shape contract: x [rows][n] f32; part [rows][blocks][2] u32 (value bits, index); idx [rows] i32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Part { uint part[]; };
#if PASS == 2
layout(set = 0, binding = 2) writeonly buffer I { int idx[]; };
#endif
layout(push_constant) uniform P { uint n; uint blocks; } pc;
shared float sv[64];
shared uint si[64];
bool better(float a, uint ai, float b, uint bi) {
  if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ai < bi);
  return a > b || (a == b && ai < bi);
}
void main() {
  uint t = gl_LocalInvocationID.x;
  float bv = 0.0;
  uint bi = 0xffffffffu;
#if PASS == 1
  uint row = gl_WorkGroupID.y, block = gl_WorkGroupID.x;
  for (uint i = block * 1024u + t; i < min(pc.n, (block + 1u) * 1024u); i += 64u) {
    float v = x[row * pc.n + i];
    if (bi == 0xffffffffu || better(v, i, bv, bi)) bv = v, bi = i;
  }
#else
  uint row = gl_WorkGroupID.x;
  for (uint b = t; b < pc.blocks; b += 64u) {
    float v = uintBitsToFloat(part[(row * pc.blocks + b) * 2u]);
    uint i = part[(row * pc.blocks + b) * 2u + 1u];
    if (bi == 0xffffffffu || better(v, i, bv, bi)) bv = v, bi = i;
  }
#endif
  sv[t] = bv, si[t] = bi;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (t < s && si[t + s] != 0xffffffffu && (si[t] == 0xffffffffu || better(sv[t + s], si[t + s], sv[t], si[t])))
      sv[t] = sv[t + s], si[t] = si[t + s];
    barrier();
  }
  if (t != 0u) return;
#if PASS == 1
  part[(row * pc.blocks + block) * 2u] = floatBitsToUint(sv[0]);
  part[(row * pc.blocks + block) * 2u + 1u] = si[0];
#else
  idx[row] = int(si[0]);
#endif
}
