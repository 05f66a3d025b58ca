// Shared by rmsnorm.comp: the push-constant block (tests that #include resolves relative to
// the including file).
layout(push_constant) uniform Params {
  uint dim;   // offset 0
  float eps;  // offset 4
  uint rows;  // offset 8
} pc;
