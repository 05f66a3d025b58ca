#version 450
// Idiom: ggml / llama.cpp Vulkan backend, the subgroup-reduction variant of rms_norm written on
// a GPU with 32-wide subgroups: one subgroupAdd per subgroup, the per-subgroup partials in
// `shared float partial[BLOCK_SIZE / 32]` indexed by gl_SubgroupID, combined by the first
// subgroup (lane i reads partial[i]).
// DEFECT: the array is sized for 32-wide subgroups. Below 32 there are more subgroups than
// slots: the extra partials are written past the end of the array (undefined behaviour; on
// lavapipe shared memory is the process's heap, and the write may kill the worker running the
// case) and never added; above 32 there are fewer, and the combine adds slots nobody wrote.
// Every row's sum of squares is wrong at every subgroup size but 32: caught by the per-element
// bound (or by the crash).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform parameter {
    uint ne00; uint ne01; uint ne02; uint ne03;
    uint nb01; uint nb02; uint nb03;
    uint misalign_a; uint misalign_d;
    float param1; float param2;
} p;

layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) readonly buffer B { uint16_t data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

shared float partial[BLOCK_SIZE / 32];

void main() {
    const uint ncols = p.ne00;
    const uint row = gl_WorkGroupID.z * 262144 + gl_WorkGroupID.y * 512 + gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) {
        return;
    }
    const uint a_off = p.misalign_a + row * p.nb01;
    const uint d_off = p.misalign_d + row * ncols;

    float s = 0.0f;
    for (uint col = tid; col < ncols; col += BLOCK_SIZE) {
        const float xi = data_a[a_off + col];
        s += xi * xi;
    }
    s = subgroupAdd(s);
    if (gl_SubgroupInvocationID == 0) {
        partial[gl_SubgroupID] = s;
    }
    barrier();
    if (gl_SubgroupID == 0) {
        float t = gl_SubgroupInvocationID < BLOCK_SIZE / 32 ? partial[gl_SubgroupInvocationID] : 0.0f;
        t = subgroupAdd(t);
        if (gl_SubgroupInvocationID == 0) {
            partial[0] = t;
        }
    }
    barrier();

    const float scale = inversesqrt(partial[0] / float(ncols) + p.param1);
    for (uint col = tid; col < ncols; col += BLOCK_SIZE) {
        data_d[d_off + col] = scale * data_a[a_off + col] * uintBitsToFloat(uint(data_b[col]) << 16);
    }
}
