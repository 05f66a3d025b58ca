#version 450
// A push-constant block shaped like an engine's: one struct member holding scalars, arrays (one
// of two dimensions), an array of structs and a vector, then a scalar after it (tests member
// paths, docs/manifests.md "push_constants"). WITH_MATRIX adds a matrix, which is refused.
layout(local_size_x = 1) in;
layout(binding = 0) buffer XY { float xy[]; };
struct inner_t {
  uint a;
  float b[2];
};
struct params_t {
  uint rope_mode;
  uint ncols;
  float corr_dims[2];
  int sections[4];
  float m2[2][3];
  inner_t in2[2];
  uvec2 v;
#ifdef WITH_MATRIX
  mat2 m;
#endif
};
layout(push_constant) uniform PC {
  params_t pc;
  uint tail;
} p;
void main() {
  xy[0] = float(p.pc.rope_mode) + p.pc.corr_dims[1] + float(p.pc.sections[3]) + p.pc.m2[1][2] + p.pc.in2[1].b[0] +
          float(p.pc.v.y + p.tail);
}
