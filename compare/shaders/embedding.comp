#version 450
// embedding: y[t] = dequant(table row ids[t]) (MLX affine, bits 2/4/8; 4 in every checkpoint),
// bit-exact: q*s is exact in f32, so fma(q, s, b) rounds the exact q*s + b once (Vulkan: add,
// mul and fma are correctly rounded), the same value as the dequant op.
// Shape contract: table w [vocab, dim*bits/32] uint (32/bits codes per word, low bits first),
// scales and biases [vocab, dim/G] bf16 (two per uint, element 0 in the low half), ids [tokens]
// int32 (an unsigned buffer reads the same for ids < 2^31), y [tokens, dim] f32 row-major;
// G = group_size a multiple of 32/bits dividing dim. An id outside [0, vocab) is never used to
// address the table: its row of y is written NaN (the CPU ops reject such ids; this kernel
// makes the error visible instead of reading out of bounds).
// One invocation per packed word of the row: it writes the word's 32/bits consecutive outputs.
// Dispatch (ceil_div(dim*bits/32, WG), tokens, 1). No subgroup operations: any subgroup size.
// Workgroup: WG = min(64, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 64, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint vocab; uint dim; uint bits; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint vpw = 32u / pc.bits, words = pc.dim / vpw, mask = (1u << pc.bits) - 1u;
  const uint j = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (j >= words) return;
  const int id = ids[t];
  const uint out0 = t * pc.dim + j * vpw;
  if (id < 0 || uint(id) >= pc.vocab) {
    for (uint n = 0u; n < vpw; ++n) y[out0 + n] = uintBitsToFloat(0x7FC0DEADu);
    return;
  }
  const uint row = uint(id);
  const uint g = row * (pc.dim / pc.group_size) + (j * vpw) / pc.group_size;  // a word never straddles groups
  const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
  const uint word = wq[row * words + j];
  for (uint n = 0u; n < vpw; ++n) y[out0 + n] = fma(float((word >> (pc.bits * n)) & mask), s, b);
}
