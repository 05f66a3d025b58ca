// Everything a forward carries from one token to the next: per full-attention layer a KV cache
// (rows [0, len) valid), per MLA layer the latent and rope-key rows, per linear-attention layer the conv state (raw in_proj_qkv outputs of
// the last K-1 tokens, slot 0 oldest) and the delta-net state [Hv, dv, dk]. Positions advance with
// every token; the MFLX snapshot (docs/ops/formats.md "MFLX snapshot") saves and restores exactly this.
#pragma once
#include <cstdint>
#include <vector>

#include "oracle/config.h"

namespace moe {

struct LayerState {
  // full attention
  std::vector<float> k_cache, v_cache;  // [capacity, Hkv, D]
  int64_t len = 0;                      // rows [0, len) valid (full attention and MLA)
  // MLA (DeepSeek-V3): what engines cache and MFLX v2 snapshots store (docs/ops/formats.md "MFLX snapshot")
  std::vector<float> latent;            // [capacity, kv_lora_rank], post kv_a_layernorm
  std::vector<float> kpe;               // [capacity, qk_rope_head_dim], post RoPE
  // linear attention
  std::vector<float> conv;  // [K-1, C]
  std::vector<float> ssm;   // [Hv, dv, dk]
};

struct ModelState {
  std::vector<LayerState> layers;
  int64_t pos = 0;        // next token's position
  int64_t capacity = 0;   // KV rows per full layer

  // Zero state for `cfg` with room for `capacity` positions.
  static ModelState make(const ModelConfig& cfg, int64_t capacity);
  // Room for at least `capacity` positions, the rows already cached kept (a cache is
  // [capacity, Hkv, D] row-major, so growing appends rows); never shrinks.
  void reserve(const ModelConfig& cfg, int64_t capacity);
  void reset();
};

}  // namespace moe
