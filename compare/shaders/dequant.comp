#version 450
// dequant: y[r][c] = q[r][c] * s[r][c/G] + b[r][c/G] (MLX affine, bits 2/4/8), bit-exact: q*s is
// exact in f32 (an integer < 2^8 times an 8-bit significand), so fma(q, s, b) and q*s + b both
// round the exact sum once (Vulkan: add, mul and fma are correctly rounded).
// Shape contract: w [rows, cols*bits/32] uint (32/bits codes per word, low bits first), scales
// and biases [rows, cols/G] bf16 (two per uint, element 0 in the low half), y [rows, cols] f32
// row-major; bits in {2, 4, 8}, G = group_size a multiple of 32/bits dividing cols.
// One invocation per packed word: it writes the word's 32/bits consecutive outputs. Dispatch
// (ceil_div(cols*bits/32, WG), rows, 1). No subgroup operations: any subgroup size.
// Workgroup: WG = min(64, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 64, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint cols; uint bits; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint vpw = 32u / pc.bits, words = pc.cols / vpw, mask = (1u << pc.bits) - 1u;
  const uint j = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  if (j >= words) return;
  const uint g = row * (pc.cols / pc.group_size) + (j * vpw) / pc.group_size;  // a word never straddles groups
  const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
  const uint word = wq[row * words + j];
  const uint out0 = row * pc.cols + j * vpw;
  for (uint n = 0u; n < vpw; ++n) y[out0 + n] = fma(float((word >> (pc.bits * n)) & mask), s, b);
}
