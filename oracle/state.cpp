#include "oracle/state.h"

#include <algorithm>

namespace moe {

ModelState ModelState::make(const ModelConfig& c, int64_t capacity) {
  ModelState s;
  s.capacity = capacity;
  s.layers.resize(size_t(c.layers));
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerState& l = s.layers[size_t(i)];
    if (c.layer_kinds[size_t(i)] == LayerKind::Full) {
      l.k_cache.assign(size_t(capacity * c.kv_heads * c.head_dim), 0.0f);
      l.v_cache.assign(l.k_cache.size(), 0.0f);
    } else if (c.layer_kinds[size_t(i)] == LayerKind::Mla) {
      l.latent.assign(size_t(capacity * c.mla.kv_lora_rank), 0.0f);
      l.kpe.assign(size_t(capacity * c.mla.qk_rope_dim), 0.0f);
    } else {
      l.conv.assign(size_t((c.conv_kernel - 1) * c.conv_dim()), 0.0f);
      l.ssm.assign(size_t(c.lin_v_heads * c.lin_v_dim * c.lin_k_dim), 0.0f);
    }
  }
  return s;
}

void ModelState::reserve(const ModelConfig& c, int64_t new_capacity) {
  if (new_capacity <= capacity) return;
  capacity = new_capacity;
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerState& l = layers[size_t(i)];
    if (c.layer_kinds[size_t(i)] == LayerKind::Mla) {  // [capacity, row]: growing appends rows
      l.latent.resize(size_t(capacity * c.mla.kv_lora_rank), 0.0f);
      l.kpe.resize(size_t(capacity * c.mla.qk_rope_dim), 0.0f);
    }
    if (c.layer_kinds[size_t(i)] != LayerKind::Full) continue;
    l.k_cache.resize(size_t(capacity * c.kv_heads * c.head_dim), 0.0f);
    l.v_cache.resize(l.k_cache.size(), 0.0f);
  }
}

void ModelState::reset() {
  pos = 0;
  for (LayerState& l : layers) {
    std::fill(l.k_cache.begin(), l.k_cache.end(), 0.0f);
    std::fill(l.v_cache.begin(), l.v_cache.end(), 0.0f);
    std::fill(l.conv.begin(), l.conv.end(), 0.0f);
    std::fill(l.ssm.begin(), l.ssm.end(), 0.0f);
    std::fill(l.latent.begin(), l.latent.end(), 0.0f);
    std::fill(l.kpe.begin(), l.kpe.end(), 0.0f);
    l.len = 0;
  }
}

}  // namespace moe
