#version 450
// Idiom: a hand-rolled C++ Vulkan engine's KV-cache write. The engine allocates each layer's
// caches once for max_seq positions, head-major: cache[kv_head][pos][head_dim], so that one
// head's keys are contiguous for the attention kernel; the new tokens' k and v arrive
// token-major [n_tokens][n_kv_heads][head_dim]. One invocation per copied float; positions
// start at `pos` (the tokens already cached).
// DEFECT: the host allocates the caches for 8192 positions per head (its max_seq), but this
// shader still says MAX_SEQ 2048 (the context length was raised on the host only). Head 0 is
// written correctly; head h > 0 lands at h * 2048 rows, inside head 0's unused rows: written
// outside the cache's views (caught by the fill check; head h's own rows also keep their old
// contents). Correct when there is one kv head.
#define MAX_SEQ 2048

layout(local_size_x_id = 0, local_size_x = 256) in;  // the host picks 256, or less where a workgroup cannot hold 256 lanes

layout(set = 0, binding = 0) readonly buffer KNew { float k_new[]; };
layout(set = 0, binding = 1) readonly buffer VNew { float v_new[]; };
layout(set = 0, binding = 2) buffer KCache { float k_cache[]; };
layout(set = 0, binding = 3) buffer VCache { float v_cache[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_kv_heads;
    uint head_dim;
    uint pos;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    const uint per_token = pc.n_kv_heads * pc.head_dim;
    if (i >= pc.n_tokens * per_token) {
        return;
    }
    const uint t = i / per_token;
    const uint h = (i % per_token) / pc.head_dim;
    const uint d = i % pc.head_dim;
    const uint dst = (h * MAX_SEQ + pc.pos + t) * pc.head_dim + d;
    k_cache[dst] = k_new[i];
    v_cache[dst] = v_new[i];
}
