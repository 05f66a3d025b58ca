#version 450
// Idiom: ggml / llama.cpp Vulkan backend, a matrix-vector product split along K (the columns)
// into SPLIT_K chunks so that a skinny matvec fills the GPU, followed by the split_k_reduce
// pass (ggml_split_k_reduce.comp): pass 1 writes one partial dot per (chunk, row) into a scratch
// buffer, pass 2 adds the SPLIT_K partials of each row. Weights MLX affine 4-bit, group 64; a
// chunk is a whole number of groups, ceil(groups / SPLIT_K) of them (the last chunk shorter).
// ggml-style push constants (ncols, stride_a, nrows, k_split); one subgroup per row.
// Verdict (with the reduce pass, one sequence): CORRECT at every subgroup size.
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 0) const uint BLOCK_SIZE = 128;
layout(local_size_x_id = 0, local_size_x = 128) in;

layout(binding = 0) readonly buffer A { uint data_a[]; };      // packed 4-bit codes, 8 per word
layout(binding = 1) readonly buffer AS { uint data_a_s[]; };   // bf16 scales, two per word
layout(binding = 2) readonly buffer AB { uint data_a_b[]; };   // bf16 biases, two per word
layout(binding = 3) readonly buffer B { float data_b[]; };
layout(binding = 4) writeonly buffer D { float data_d[]; };    // [k_split][nrows] partials

layout(push_constant) uniform parameter {
    uint ncols;
    uint stride_a;   // words per row
    uint nrows;
    uint k_split;
} p;

float get_bf16(uint w, uint i) { return uintBitsToFloat((i & 1u) == 0u ? (w << 16) : (w & 0xffff0000u)); }

void main() {
    const uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    const uint split = gl_WorkGroupID.y;
    if (row >= p.nrows) {
        return;
    }
    const uint ngroups = p.ncols / 64u;
    const uint groups_per_split = (ngroups + p.k_split - 1u) / p.k_split;
    const uint g_begin = min(split * groups_per_split, ngroups);
    const uint g_end = min(g_begin + groups_per_split, ngroups);

    float tmp = 0.0;
    for (uint wi = g_begin * 8u + gl_SubgroupInvocationID; wi < g_end * 8u; wi += gl_SubgroupSize) {
        const uint g = row * ngroups + wi / 8u;
        const float d = get_bf16(data_a_s[g / 2u], g);
        const float m = get_bf16(data_a_b[g / 2u], g);
        const uint qs = data_a[row * p.stride_a + wi];
        for (uint j = 0u; j < 8u; ++j) {
            tmp += (float((qs >> (4u * j)) & 0xFu) * d + m) * data_b[wi * 8u + j];
        }
    }
    tmp = subgroupAdd(tmp);
    if (subgroupElect()) {
        data_d[split * p.nrows + row] = tmp;
    }
}
