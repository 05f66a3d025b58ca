#version 450
// A softmax over rows of x [rows, cols] with a mask [mask_rows, cols] broadcast r % mask_rows, one
// workgroup of 64 per row and a shared-memory tree reduction (no subgroup operations). Defines
// plant bugs of the op's kind:
//   BUG_MASK_HEAD_MAJOR   mask row r / (rows / mask_rows): the broadcast taken head-major
//   BUG_SCALE_AFTER_MASK  (x + mask) * scale instead of x * scale + mask
//   BUG_NO_MAX            exp(z) / sum exp(z) without subtracting the max: overflows past z ~ 88
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer M { float mask[]; };
layout(std430, set = 0, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint mask_rows; float scale; } pc;
shared float part[64];

float reduce(float v, bool is_max) {
  const uint l = gl_LocalInvocationID.x;
  part[l] = v;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (l < s) part[l] = is_max ? max(part[l], part[l + s]) : part[l] + part[l + s];
    barrier();
  }
  const float r = part[0];
  barrier();
  return r;
}

float z(uint row, uint p) {
  if (pc.mask_rows == 0u) return x[row * pc.cols + p] * pc.scale;
#if defined(BUG_MASK_HEAD_MAJOR)
  const uint mrow = row / (pc.rows / pc.mask_rows);
#else
  const uint mrow = row % pc.mask_rows;
#endif
  const float mv = mask[mrow * pc.cols + p];
#if defined(BUG_SCALE_AFTER_MASK)
  return (x[row * pc.cols + p] + mv) * pc.scale;
#else
  return x[row * pc.cols + p] * pc.scale + mv;
#endif
}

void main() {
  const uint row = gl_WorkGroupID.x, l = gl_LocalInvocationID.x;
  float m = uintBitsToFloat(0xFF800000u);
  for (uint p = l; p < pc.cols; p += 64u) m = max(m, z(row, p));
  m = reduce(m, true);
#if defined(BUG_NO_MAX)
  m = 0.0;
#endif
  float sum = 0.0;
  for (uint p = l; p < pc.cols; p += 64u) {
    const float e = exp(z(row, p) - m);
    y[row * pc.cols + p] = e;
    sum += e;
  }
  sum = reduce(sum, false);
  const float inv = 1.0 / sum;
  for (uint p = l; p < pc.cols; p += 64u) y[row * pc.cols + p] *= inv;
}
