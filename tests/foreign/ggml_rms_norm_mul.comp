#version 450
// Idiom: ggml / llama.cpp Vulkan backend (rms_norm fused with the weight multiply).
// ggml-style generic push-constant block (ne/nb tensor geometry, misalignment offsets, two
// float params of which only param1 = eps is used), a spec-constant BLOCK_SIZE, a classic
// shared-memory tree reduction without subgroup operations, 16-bit storage for the bf16 weight.
// Verdict: CORRECT at every subgroup size (no subgroup operations at all).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

#define A_TYPE float
#define B_TYPE uint16_t
#define D_TYPE float
#define FLOAT_TYPE float

layout(constant_id = 0) const uint BLOCK_SIZE = 128;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform parameter {
    uint ne00; uint ne01; uint ne02; uint ne03;
    uint nb01; uint nb02; uint nb03;
    uint misalign_a; uint misalign_d;
    float param1; float param2;
} p;

layout(binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 2) writeonly buffer D { D_TYPE data_d[]; };

shared FLOAT_TYPE sum[BLOCK_SIZE];

// bf16 is the upper half of an f32
FLOAT_TYPE get_b(uint i) { return uintBitsToFloat(uint(data_b[i]) << 16); }

void main() {
    const uint ncols = p.ne00;
    const uint row = gl_WorkGroupID.z * 262144 + gl_WorkGroupID.y * 512 + gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) {
        return;
    }
    const uint a_off = p.misalign_a + row * p.nb01;
    const uint d_off = p.misalign_d + row * ncols;

    FLOAT_TYPE s = FLOAT_TYPE(0.0f);
    [[unroll]] for (uint col = tid; col < ncols; col += BLOCK_SIZE) {
        const FLOAT_TYPE xi = FLOAT_TYPE(data_a[a_off + col]);
        s += xi * xi;
    }
    sum[tid] = s;

    barrier();
    [[unroll]] for (uint off = BLOCK_SIZE / 2; off > 0; off >>= 1) {
        if (tid < off) {
            sum[tid] += sum[tid + off];
        }
        barrier();
    }

    const FLOAT_TYPE mean = sum[0] / FLOAT_TYPE(ncols);
    const FLOAT_TYPE scale = inversesqrt(mean + FLOAT_TYPE(p.param1));

    [[unroll]] for (uint col = tid; col < ncols; col += BLOCK_SIZE) {
        data_d[d_off + col] = D_TYPE(scale * FLOAT_TYPE(data_a[a_off + col]) * get_b(col));
    }
}
