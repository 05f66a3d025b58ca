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
#include "ops/matvec_ggml.h"
#include "ops/mla_attention.h"
#include "oracle/config.h"
#include "oracle/tensor_table.h"

namespace moe {

class GgufFile;

// A projection as its file stores it: MLX affine (`q`: MLX directories, moeflux artifacts) or one of
// ggml's block formats (`g`: GGUF files). The forward runs matmul_q on the first, matvec_ggml on
// the second.
struct Weight {
  QuantMatrix q;
  BlockMatrix g;
  bool ggml = false;
  // Non-empty: the matrix's columns are in another order than the forward's x (a GGUF of Qwen3.5
  // holds linear attention's value heads tiled, out_proj's columns among them): column c multiplies
  // x[x_perm[c]].
  std::vector<int32_t> x_perm;
  Weight() = default;
  Weight(const QuantMatrix& m) : q(m) {}  // NOLINT: every MLX matrix is a weight
  explicit Weight(const BlockMatrix& m) : g(m), ggml(true) {}
  int64_t rows() const { return ggml ? g.rows : q.rows; }
  int64_t cols() const { return ggml ? g.cols : q.cols; }
};

// An expert's (or a dense MLP's) three projections in a ggml block format.
struct GgmlExpert {
  BlockMatrix gate, up, down;  // [I, d], [I, d], [d, I]
};

struct LinearAttnWeights {
  Weight qkv, z, b, a, out;          // [C, d], [Vt, d], [Hv, d], [Hv, d], [d, Vt]
  std::vector<float> conv_w;              // [C, K] (flat c*K + j)
  std::vector<float> A_log, dt_bias;      // [Hv]
  std::vector<float> norm;                // [dv], gated norm (never +1)
};

struct FullAttnWeights {
  Weight q, k, v, o;                      // [2*H*D, d] (per head q | gate), [Hkv*D, d] x2, [d, H*D]
  std::vector<float> q_norm, k_norm;      // [D], +1 already applied when the file needed it
};

struct MlaAttnWeights {                   // DeepSeek-V3 MLA (HF DeepseekV3Attention)
  Weight q_a, q_b;                        // [q_lora, d], [H (Dn + Dr), q_lora]
  Weight kv_a;                            // [L + Dr, d] (latent | k_pe)
  MlaKvB kv_b;                            // [H (Dn + Dv), L] (MLX), or llama.cpp's k_b / v_b (GGUF)
  Weight o;                               // [d, H Dv]
  std::vector<float> q_a_norm, kv_a_norm; // [q_lora], [L]: w x^ (no +1)
};

struct MlpWeights {                       // MoE block (router + shared expert) or a dense MLP
  Weight router;                          // [E, d] (Qwen: quantized; a DeepSeek-V3 GGUF's when not bf16)
  std::span<const bf16> router_bf16;      // [E, d] (DeepSeek-V3: unquantized BF16, a view into the file)
  std::vector<float> score_bias;          // [E] DeepSeek-V3 e_score_correction_bias (selection only)
  Weight shared_expert_gate;              // [1, d] (Qwen only: DeepSeek-V3's shared experts are ungated)
  ExpertWeights shared;                   // gate/up [Is, d], down [d, Is]; dense MLP for non-MoE layers
  GgmlExpert shared_ggml;                 // the same from a GGUF (`shared` then empty)
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
  // Opens an MLX checkpoint directory, moeflux artifacts or a GGUF file (oracle/model_gguf.cpp);
  // every tensor is validated here, so a missing tensor, a wrong shape/dtype or a short expert file
  // fails now, naming file and tensor.
  static std::unique_ptr<Model> load(const std::string& path);

  const ModelConfig& config() const { return cfg_; }
  const Weight& embed() const { return embed_; }
  const Weight& lm_head() const { return lm_head_; }
  const std::vector<float>& final_norm() const { return final_norm_; }
  const LayerWeights& layer(int64_t i) const { return layers_.at(size_t(i)); }
  // Routed expert e of layer i (a view into the mapped checkpoint).
  ExpertWeights expert(int64_t layer, int64_t e) const;
  // The same from a GGUF (is_gguf()): views into the layer's merged expert tensors.
  GgmlExpert expert_ggml(int64_t layer, int64_t e) const;
  bool is_gguf() const { return gguf_ != nullptr; }
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
  void load_gguf(const std::string& path); // a GGUF file's config and tensors (model_gguf.cpp)
  void resolve_gguf();
  void resolve_gguf_layer(int64_t layer);
  void resolve_gguf_linear(int64_t layer);
  void resolve_gguf_mla(int64_t layer);
  void resolve_gguf_router_noaux(int64_t layer);
  int bits_of(const std::string& module) const;  // the manifest's bits (moeflux) or the config's

  TensorTable table_;
  ModelConfig cfg_;
  Weight embed_, lm_head_;
  std::vector<float> final_norm_;
  std::vector<LayerWeights> layers_;
  bool norms_need_one_ = false;  // raw HF layout (conv1d [C,1,K]): zero-centred norms stored as w
  // Routed experts: MLX stacks them per layer (switch_mlp views); moeflux has one blob file per layer.
  struct LayerExperts {
    QuantMatrix gate, up, down;                // stacked [E*rows, cols] (MLX)
    std::shared_ptr<MappedFile> blob_file;     // packed_experts/layer_NN.bin (moeflux)
  };
  std::vector<LayerExperts> experts_;
  std::shared_ptr<GgufFile> gguf_;                 // a GGUF model: the mapped file
  struct GgmlExperts {
    BlockMatrix gate, up, down;  // merged [E*I, d] (gate, up: or gate|up per expert in `gate` when fused), [E*d, I]
    bool fused = false;          // ffn_gate_up_exps: per expert I gate rows, then I up rows
  };
  std::vector<GgmlExperts> experts_ggml_;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> owned_bytes_;  // GGUF rows regrouped at load
  int expert_bits_ = 4;
  std::vector<std::unique_ptr<QuantStorage>> owned_;  // de-interleaved Qwen3-Next projections
};

}  // namespace moe
