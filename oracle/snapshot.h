// MFLX engine-state snapshots (docs/ops/formats.md "MFLX snapshot"): little-endian u32 header (v1: 8 words, written
// by the C engine; v2: 10 words, the Rust port), then per layer in order the KV rows
// (i32 len, len*Hkv*D f32 K rows post k_norm and RoPE, the same of V), the MLA rows (v2 only:
// i32 len, len*kv_lora f32 latent rows post kv_a_layernorm, len*qk_rope f32 rope-K rows post
// YaRN) or the linear-attention conv state [(K-1), C] and recurrent state [Hv, dv, dk]. Loading validates the header against
// the model and walks the whole body (preflight) before any state changes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "oracle/config.h"
#include "oracle/state.h"

namespace moe {

inline constexpr uint32_t kMflxMagic = 0x4D464C58;  // "MFLX" as a u32; bytes on disk "XLFM"

std::vector<uint8_t> snapshot_save(const ModelConfig& cfg, const ModelState& state, int version = 1);
void snapshot_save_file(const std::string& path, const ModelConfig& cfg, const ModelState& state, int version = 1);

// Restores into `state` (made for `cfg`); on any error `state` is left untouched. `source` names
// the file in messages. The restored KV capacity is max(state.capacity, snapshot length + room).
void snapshot_load(const std::vector<uint8_t>& bytes, const ModelConfig& cfg, ModelState& state,
                   const std::string& source, int64_t room = 0);
void snapshot_load_file(const std::string& path, const ModelConfig& cfg, ModelState& state, int64_t room = 0);

}  // namespace moe
