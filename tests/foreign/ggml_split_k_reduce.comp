#version 450
// Idiom: ggml / llama.cpp Vulkan backend, split_k_reduce: the second pass of a split-K
// product, data_d[i] = sum over k of data_a[k * ne + i]. One invocation per output.
// Verdict: CORRECT (with its pass 1 in one sequence) at every subgroup size.
// One change made for the harness: ggml declares the partials `readonly` here, but a manifest
// scratch binding must be written (access "out" or "inout") and a readonly buffer can only be
// "in", so no manifest describes that form (a gap of the format, reported); this copy drops
// `readonly`.
layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(binding = 0) buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

layout(push_constant) uniform parameter {
    uint ne;
    uint k_num;
} p;

void main() {
    const uint idx = gl_GlobalInvocationID.x;
    if (idx >= p.ne) {
        return;
    }
    float result = 0.0f;
    for (uint i = 0; i < p.k_num; i++) {
        result += data_a[i * p.ne + idx];
    }
    data_d[idx] = result;
}
