#version 450
// Does not compile: the GLSL-compile-error fixture (undeclared identifier on line 6).
layout(local_size_x = 64) in;
layout(binding = 0) buffer Y { float y[]; };
void main() {
  y[gl_GlobalInvocationID.x] = undeclared_thing;
}
