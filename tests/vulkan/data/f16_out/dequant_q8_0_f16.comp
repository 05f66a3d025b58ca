#version 450
// dequant_ggml for q8_0 in the idiom of an engine's to-f16 pass (llama.cpp's dequant shaders): one
// invocation per value, the result stored as f16 for a half-precision matmul. Blocks are 34
// bytes (f16 d, 32 int8 codes), read from 32-bit words. PLANT selects a planted bug:
//   1  the value scaled by 1 + 2^-8 before it is stored (four f16 spacings off)
//   2  the codes read as unsigned (0..255): every negative code wrong
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef PLANT
#define PLANT 0
#endif

layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { uint words[]; };
layout(binding = 1) writeonly buffer D { float16_t y[]; };
layout(push_constant) uniform Params { uint n; } p;

uint byte_at(uint b) { return (words[b >> 2] >> (8u * (b & 3u))) & 0xFFu; }

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  const uint blk = 34u * (i / 32u);
  const float d = unpackHalf2x16(byte_at(blk) | (byte_at(blk + 1u) << 8)).x;
  const uint raw = byte_at(blk + 2u + i % 32u);
#if PLANT == 2
  const int q = int(raw);
#else
  const int q = int(raw) - (raw >= 128u ? 256 : 0);
#endif
  float v = d * float(q);  // exact: an 11-bit d times 8 bits
#if PLANT == 1
  v *= 1.00390625;
#endif
  y[i] = float16_t(v);
}
