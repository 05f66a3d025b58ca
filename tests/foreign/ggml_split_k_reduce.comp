#version 450
// Idiom: ggml / llama.cpp Vulkan backend, split_k_reduce: the second pass of a split-K
// product, data_d[i] = sum over k of data_a[k * ne + i]. One invocation per output.
// Verdict: CORRECT (with its pass 1 in one sequence) at every subgroup size.
// The partials are ggml's readonly buffer: the manifest binds them as a named scratch buffer
// with access "in" (pass 1 of the sequence wrote them).
layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(binding = 0) readonly buffer A { float data_a[]; };
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
