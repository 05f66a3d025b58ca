// A loaded model: the config and every weight resolved, shape-checked and ready for the forward.
// Quantized matrices are views into the mapped files (no copy), except Qwen3-Next's fused
// in_proj_qkvz / in_proj_ba, whose per-key-head groups are de-interleaved at load into the
// contiguous q|k|v, z, b, a layout (docs/ops/linear-attention.md "Input projections"). Small weights (norms, conv,
// A_log, dt_bias) are widened to f32 (exact for bf16).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/expert_blob.h"
#include "core/quant.h"
#include "oracle/config.h"
#include "oracle/tensor_table.h"

namespace moe {

struct LinearAttnWeights {
  QuantMatrix qkv, z, b, a, out;          // [C, d], [Vt, d], [Hv, d], [Hv, d], [d, Vt]
  std::vector<float> conv_w;              // [C, K] (flat c*K + j)
  std::vector<float> A_log, dt_bias;      // [Hv]
  std::vector<float> norm;                // [dv], gated norm (never +1)
};

struct FullAttnWeights {
  QuantMatrix q, k, v, o;                 // [2*H*D, d] (per head q | gate), [Hkv*D, d] x2, [d, H*D]
  std::vector<float> q_norm, k_norm;      // [D], +1 already applied when the file needed it
};

struct MlaAttnWeights {                   // DeepSeek-V3 MLA (HF DeepseekV3Attention)
  QuantMatrix q_a, q_b;                   // [q_lora, d], [H (Dn + Dr), q_lora]
  QuantMatrix kv_a, kv_b;                 // [L + Dr, d] (latent | k_pe), [H (Dn + Dv), L]
  QuantMatrix o;                          // [d, H Dv]
  std::vector<float> q_a_norm, kv_a_norm; // [q_lora], [L]: w x^ (no +1)
};

struct MlpWeights {                       // MoE block (router + shared expert) or a dense MLP
  QuantMatrix router;                     // [E, d] (Qwen: quantized)
  std::span<const bf16> router_bf16;      // [E, d] (DeepSeek-V3: unquantized BF16, a view into the file)
  std::vector<float> score_bias;          // [E] DeepSeek-V3 e_score_correction_bias (selection only)
  QuantMatrix shared_expert_gate;         // [1, d] (Qwen only: DeepSeek-V3's shared experts are ungated)
  ExpertWeights shared;                   // gate/up [Is, d], down [d, Is]; dense MLP for non-MoE layers
};

struct LayerWeights {
  LayerKind kind = LayerKind::Linear;
  bool moe = true;
  std::vector<float> input_norm, post_norm;  // [d]
  LinearAttnWeights lin;
  FullAttnWeights full;
  MlaAttnWeights mla;
  MlpWeights mlp;
};

class Model {
 public:
  // Opens an MLX checkpoint directory or moeflux artifacts; every tensor is validated here, so a
  // missing tensor, a wrong shape/dtype or a short expert file fails now, naming file and tensor.
  static std::unique_ptr<Model> load(const std::string& dir);

  const ModelConfig& config() const { return cfg_; }
  const QuantMatrix& embed() const { return embed_; }
  const QuantMatrix& lm_head() const { return lm_head_; }
  const std::vector<float>& final_norm() const { return final_norm_; }
  const LayerWeights& layer(int64_t i) const { return layers_.at(size_t(i)); }
  // Routed expert e of layer i (a view into the mapped checkpoint).
  ExpertWeights expert(int64_t layer, int64_t e) const;
  SourceFormat format() const { return table_.format; }
  const std::string& dir() const { return table_.dir; }

 private:
  Model() = default;
  void resolve();
  void resolve_linear(int64_t layer);     // linear attention: projections, conv, gates, norm
  void resolve_moe(int64_t layer);        // MoE: router, shared expert, routed experts
  void resolve_mla(int64_t layer);        // MLA projections and norms
  void resolve_mlp_noaux(int64_t layer);  // DeepSeek-V3 MoE: BF16 gate, correction bias, shared_experts
  void check_packed_layout() const;       // moeflux layout.json against the config
  int bits_of(const std::string& module) const;  // the manifest's bits (moeflux) or the config's

  TensorTable table_;
  ModelConfig cfg_;
  QuantMatrix embed_, lm_head_;
  std::vector<float> final_norm_;
  std::vector<LayerWeights> layers_;
  bool norms_need_one_ = false;  // raw HF layout (conv1d [C,1,K]): zero-centred norms stored as w
  // Routed experts: MLX stacks them per layer (switch_mlp views); moeflux has one blob file per layer.
  struct LayerExperts {
    QuantMatrix gate, up, down;                // stacked [E*rows, cols] (MLX)
    std::shared_ptr<MappedFile> blob_file;     // packed_experts/layer_NN.bin (moeflux)
  };
  std::vector<LayerExperts> experts_;
  int expert_bits_ = 4;
  std::vector<std::unique_ptr<QuantStorage>> owned_;  // de-interleaved Qwen3-Next projections
};

}  // namespace moe
