#version 450
// Idiom: ggml / llama.cpp Vulkan backend, rope in "normal" mode (GPT-J interleaved pairs
// (i0, i0 + 1)), same push constants and grid as the NeoX variant.
// DEFECT: the wrong rotation pairing for Qwen3.5/3.6 (which rotate half-split pairs (i, i + R/2),
// HF rotate_half): the graph picked ggml's normal mode instead of NeoX. Position 0 is the identity
// either way; every other position rotates the wrong channel pairs by the wrong frequencies:
// caught by the per-element bound on every case.
layout(local_size_x = 1, local_size_y = 128, local_size_z = 1) in;

layout(binding = 0) readonly buffer Y { uint data_pos[]; };
layout(binding = 1) readonly buffer A { float data_a[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

layout(push_constant) uniform parameter {
    uint ncols;
    uint n_dims;
    float freq_base;
    float freq_scale;
    uint ne01;
    float attn_factor;
} p;

void main() {
    const uint i0 = 2 * gl_GlobalInvocationID.y;
    const uint ne0 = p.ncols;
    if (i0 >= ne0) {
        return;
    }
    const uint row = gl_GlobalInvocationID.x;
    const uint i = row * ne0 + i0;

    if (i0 >= p.n_dims) {
        data_d[i + 0] = data_a[i + 0];
        data_d[i + 1] = data_a[i + 1];
        return;
    }

    const uint i2 = row / p.ne01;
    const float theta_scale = pow(p.freq_base, -2.0f / float(p.n_dims));
    const float theta = p.freq_scale * float(data_pos[i2]) * pow(theta_scale, float(i0 / 2));
    const float cos_theta = cos(theta) * p.attn_factor;
    const float sin_theta = sin(theta) * p.attn_factor;

    const float x0 = data_a[i + 0];
    const float x1 = data_a[i + 1];
    data_d[i + 0] = x0 * cos_theta - x1 * sin_theta;
    data_d[i + 1] = x0 * sin_theta + x1 * cos_theta;
}
