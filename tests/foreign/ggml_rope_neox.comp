#version 450
// Idiom: ggml / llama.cpp Vulkan backend, rope in NeoX mode (rotate-half pairs (i0/2, i0/2 +
// n_dims/2)), one invocation per pair: x = row (token * heads + head), y = pair; ggml-style push
// constants (ncols, n_dims, freq_base, ..., ne01 = rows per position), positions read per row as
// pos[row / ne01]; theta = pos * theta_scale^(i0/2) with theta_scale = freq_base^(-2/n_dims);
// channels at and past n_dims copied two at a time (ggml requires an even ncols).
// Verdict: CORRECT at every subgroup size (no subgroup operations) for even head_dim (the
// manifest declares "head_dim % 2 == 0": ggml asserts ne0 % 2 == 0).
// Note: ggml computes theta_scale on the host (powf) and passes it in the push constants; the
// manifest expressions have no pow, so here it is computed from freq_base in the shader.
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
    const uint i = row * ne0;

    if (i0 >= p.n_dims) {
        data_d[i + i0 + 0] = data_a[i + i0 + 0];
        data_d[i + i0 + 1] = data_a[i + i0 + 1];
        return;
    }

    const uint ic = i0 / 2;
    const uint i2 = row / p.ne01;
    const float theta_scale = pow(p.freq_base, -2.0f / float(p.n_dims));
    const float theta = p.freq_scale * float(data_pos[i2]) * pow(theta_scale, float(ic));
    const float cos_theta = cos(theta) * p.attn_factor;
    const float sin_theta = sin(theta) * p.attn_factor;

    const float x0 = data_a[i + ic];
    const float x1 = data_a[i + ic + p.n_dims / 2];
    data_d[i + ic] = x0 * cos_theta - x1 * sin_theta;
    data_d[i + ic + p.n_dims / 2] = x0 * sin_theta + x1 * cos_theta;
}
