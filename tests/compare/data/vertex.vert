#version 450
// A vertex shader: the "entry point is not a compute shader" fixture (vertex.spv is built from it
// with `glslc vertex.vert -o vertex.spv`).
void main() { gl_Position = vec4(0.0); }
