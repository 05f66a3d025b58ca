#version 450
// y = a * x with a fixed workgroup size chosen by a define (tests "defines"); no push constants.
#ifndef WG
#error WG must be defined by the manifest
#endif
layout(local_size_x = WG, local_size_y = 2) in;
layout(constant_id = 3) const float A = 2.0;
layout(binding = 0) buffer XY { float xy[]; };
void main() { xy[gl_GlobalInvocationID.x] *= A; }
