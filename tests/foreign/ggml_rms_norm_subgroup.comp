#version 450
// Idiom: ggml / llama.cpp Vulkan backend, the subgroup-reduction variant of rms_norm, ported
// from a CUDA kernel: WARP_SIZE 32, warp = tid / WARP_SIZE, lane = tid % WARP_SIZE, one
// subgroupAdd per warp, the per-warp partials in `shared float partial[BLOCK_SIZE / WARP_SIZE]`,
// combined by the first warp.
// DEFECT: the shared array and its indices assume 32-wide subgroups. With subgroups of 16, 8 or
// 4 lanes, 2, 4 or 8 subgroups share one `tid / 32` slot: they overwrite each other's partial
// (only one survives), and at size 4 the first subgroup's lanes cannot read all the slots
// either; with 64-wide subgroups each subgroup holds two "warps" whose lane 0 both store the
// subgroup's whole sum, counted twice. Every row's sum of squares is wrong at every subgroup
// size but 32: caught by the per-element bound.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#define WARP_SIZE 32

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

shared float partial[BLOCK_SIZE / WARP_SIZE];

void main() {
    const uint ncols = p.ne00;
    const uint row = gl_WorkGroupID.z * 262144 + gl_WorkGroupID.y * 512 + gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = tid / WARP_SIZE;
    const uint lane = tid % WARP_SIZE;
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
    if (lane == 0) {
        partial[warp] = s;
    }
    barrier();
    if (warp == 0) {
        float t = lane < BLOCK_SIZE / WARP_SIZE ? partial[lane] : 0.0f;
        t = subgroupAdd(t);
        if (lane == 0) {
            partial[0] = t;
        }
    }
    barrier();

    const float scale = inversesqrt(partial[0] / float(ncols) + p.param1);
    for (uint col = tid; col < ncols; col += BLOCK_SIZE) {
        data_d[d_off + col] = scale * data_a[a_off + col] * uintBitsToFloat(uint(data_b[col]) << 16);
    }
}
